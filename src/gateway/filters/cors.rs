//! The `CORS` filter (Gateway API `HTTPCORSFilter`) → `ir::Cors`.
//!
//! Origins are `*`, or `<http|https>://<host>[:<port>]` whose host may start with `*` (a greedy match of
//! any number of labels to its left: `https://*.example.com` takes `https://a.b.example.com`). `*` in
//! `allowMethods` must stand alone (the CRD's rule); `*` in `allowHeaders` / `exposeHeaders` makes the list
//! just `*`. `maxAge` defaults to 5 seconds (the CRD default). What the proxy does with `*` when the
//! request carries credentials (echo the request's origin, method and headers instead of `*`) is the
//! Envoy builder's business; see `envoy::routes::cors`.

use crate::gateway::spec;
use crate::ir;

/// Gateway API default for `maxAge` (seconds).
const DEFAULT_MAX_AGE: u32 = 5;

pub fn parse(c: &spec::Cors) -> Result<ir::Cors, String> {
    let spec::Cors {
        allow_origins,
        allow_methods,
        allow_headers,
        expose_headers,
        allow_credentials,
        max_age,
    } = c;
    let origins = allow_origins.clone().unwrap_or_default();
    for o in &origins {
        origin(o)?;
    }
    let methods = allow_methods.clone().unwrap_or_default();
    if methods.len() > 1 && methods.iter().any(|m| m == "*") {
        return Err("cors.allowMethods: \"*\" must be the only method".into());
    }
    if let Some(m) = methods
        .iter()
        .find(|m| m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic() || b == b'*'))
    {
        return Err(format!("cors.allowMethods: {m:?} is not an HTTP method"));
    }
    let max_age = match *max_age {
        None => DEFAULT_MAX_AGE,
        Some(a) => u32::try_from(a).map_err(|_| format!("cors.maxAge {a} must be 0 or more"))?,
    };
    Ok(ir::Cors {
        allow_origins: dedup(origins),
        allow_methods: dedup(methods),
        allow_headers: wildcard_list(allow_headers.as_deref()),
        expose_headers: wildcard_list(expose_headers.as_deref()),
        allow_credentials: allow_credentials.unwrap_or(false),
        max_age_seconds: max_age,
    })
}

/// Checks one `allowOrigins` entry.
fn origin(o: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("cors.allowOrigins: {o:?} {why}"));
    if o == "*" {
        return Ok(());
    }
    let Some((scheme, rest)) = o.split_once("://") else {
        return bad("is not <scheme>://<host>[:<port>] or \"*\"");
    };
    if scheme != "http" && scheme != "https" {
        return bad("must use the http or https scheme");
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    if let Some(p) = port
        && !p.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return bad("has a port outside 1-65535");
    }
    let labels = host.strip_prefix('*').unwrap_or(host);
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'.';
    if host.is_empty() || labels.contains('*') || !labels.bytes().all(valid) {
        return bad("must have a host name, with at most a leading \"*\"");
    }
    Ok(())
}

fn wildcard_list(v: Option<&[String]>) -> Vec<String> {
    let v = v.unwrap_or_default();
    if v.iter().any(|h| h == "*") {
        vec!["*".into()]
    } else {
        dedup(v.to_vec())
    }
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        for o in [
            "*",
            "https://www.foo.com",
            "https://*.bar.com",
            "http://*",
            "http://a.example:8080",
            "https://*example.com",
        ] {
            assert_eq!(origin(o), Ok(()), "{o}");
        }
        for o in [
            "www.foo.com",
            "ftp://a.example",
            "https://",
            "https://a.*.example",
            "https://a.example:0",
            "https://a.example:99999",
            "https://a.example/path",
            "*.example.com",
        ] {
            assert!(origin(o).is_err(), "{o} should be refused");
        }
    }

    #[test]
    fn lists_and_defaults() {
        let c = spec::Cors {
            allow_origins: Some(vec!["*".into()]),
            allow_methods: Some(vec!["GET".into(), "GET".into(), "PUT".into()]),
            allow_headers: Some(vec!["x-a".into(), "*".into()]),
            expose_headers: Some(vec!["x-b".into()]),
            ..Default::default()
        };
        let c = parse(&c).unwrap();
        assert_eq!(c.allow_methods, vec!["GET", "PUT"]);
        assert_eq!(c.allow_headers, vec!["*"]);
        assert_eq!(c.expose_headers, vec!["x-b"]);
        assert_eq!((c.allow_credentials, c.max_age_seconds), (false, 5));
        let bad = spec::Cors {
            allow_methods: Some(vec!["*".into(), "GET".into()]),
            ..Default::default()
        };
        assert!(parse(&bad).unwrap_err().contains("only method"));
    }
}
