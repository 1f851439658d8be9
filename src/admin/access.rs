//! Who may use the admin API: the `Host` header every request carries, and the bearer token that
//! `/metrics` and `/debug/*` need when one is configured. See the module doc of [`crate::admin`] for why.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// Paths that answer without a token: the probes, which kubelet calls with no credentials.
const OPEN_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// How much of a refused Host header a response repeats.
const SHOWN_HOST_CHARS: usize = 100;

/// The operator's admin settings.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Host names answered besides IP literals and `localhost` (compared without case or trailing dot).
    pub allowed_hosts: Vec<String>,
    /// Required as `Authorization: Bearer <token>` on every path but the probes.
    pub token: Option<String>,
    /// Serve without a token on an address beyond loopback (otherwise refused at start).
    pub allow_unauthenticated: bool,
}

/// Why a token file gives no token.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading the admin token file {}: {error}", path.display())]
    Read {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error("the admin token file {} is empty", .0.display())]
    Empty(std::path::PathBuf),
    #[error("the admin token file {} holds more than one word; a bearer token is one", .0.display())]
    Words(std::path::PathBuf),
}

/// Reads a token file: its content, surrounding whitespace (a trailing newline) removed.
pub fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    let text = std::fs::read_to_string(path).map_err(|error| TokenFileError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenFileError::Empty(path.to_path_buf()));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TokenFileError::Words(path.to_path_buf()));
    }
    Ok(token.to_string())
}

/// Refuses to serve `/metrics` and `/debug/*` without a token beyond loopback, unless the operator
/// said so (then it is logged loudly); `Ok` with the warning to log, if any.
pub fn check_exposure(admin: SocketAddr, access: &Access) -> Result<Option<String>, String> {
    if admin.ip().is_loopback() || access.token.is_some() {
        return Ok(None);
    }
    if access.allow_unauthenticated {
        return Ok(Some(format!(
            "the admin API on {admin} serves /metrics and /debug/* to anyone who can reach it, without a token (--admin-allow-unauthenticated); set --admin-token-file to require one"
        )));
    }
    Err(format!(
        "the admin address {admin} is not loopback and no admin token is set: /metrics and /debug/* would be open to anyone who can reach it. Set --admin-token-file (PIER_ADMIN_TOKEN_FILE) to require a bearer token, or --admin-allow-unauthenticated (PIER_ADMIN_ALLOW_UNAUTHENTICATED) to serve them without one"
    ))
}

/// Middleware: the Host check on every request, then the token on every path but the probes.
pub async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{fffd}").to_string())
        .or_else(|| request.uri().authority().map(ToString::to_string));
    if let Some(host) = host.filter(|h| !host_allowed(h, &access.allowed_hosts)) {
        let shown: String = host.chars().take(SHOWN_HOST_CHARS).collect();
        let body = format!(
            "Host {shown:?} is not allowed: the admin API answers to IP addresses, localhost and the names given with --admin-allowed-host (a defence against DNS rebinding)\n"
        );
        return (StatusCode::FORBIDDEN, body).into_response();
    }
    let open = OPEN_PATHS.contains(&request.uri().path());
    if let Some(token) = access.token.as_deref().filter(|_| !open)
        && !bearer_matches(request.headers(), token)
    {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"pier-admin\"")],
            "this path needs the admin token: send Authorization: Bearer <token> (the content of --admin-token-file)\n",
        )
            .into_response();
    }
    next.run(request).await
}

/// An IP literal (with or without a port), `localhost`, or a listed name.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = without_port(host);
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok();
    }
    if name.parse::<IpAddr>().is_ok() {
        return true;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let same = |a: &str| a.strip_suffix('.').unwrap_or(a).eq_ignore_ascii_case(name);
    same("localhost") || allowed.iter().any(|a| same(a))
}

/// `host:port` → `host`; `[v6]:port` → `[v6]`; a bare IPv6 literal or a name stays whole.
fn without_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port))
            if port.bytes().all(|b| b.is_ascii_digit()) && (name.ends_with(']') || !name.contains(':')) =>
        {
            name
        }
        _ => host,
    }
}

/// Compares digests, so the time taken says nothing about how much of the token a guess got right.
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    Sha256::digest(given.trim().as_bytes()) == Sha256::digest(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ip_literals_localhost_and_listed_names_pass() {
        let allowed = vec!["pier-metrics.pier-system.svc".to_string()];
        for ok in [
            "127.0.0.1:19000",
            "10.1.2.3",
            "[::1]:19000",
            "[fe80::1]",
            "::1",
            "localhost:19000",
            "LOCALHOST.",
            "pier-metrics.pier-system.svc:19000",
            "Pier-Metrics.pier-system.svc.",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:19000",
            "localhost.evil.example",
            "foo.localhost",
            "127.0.0.1.nip.io",
            "[evil]:1",
            "pier-metrics",
            "",
        ] {
            assert!(!host_allowed(refused, &allowed), "{refused}");
        }
    }

    #[test]
    fn beyond_loopback_needs_a_token_or_the_explicit_flag() {
        let any: SocketAddr = "0.0.0.0:19000".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:19000".parse().unwrap();
        let mut access = Access::default();
        assert_eq!(check_exposure(lo, &access), Ok(None));
        let refused = check_exposure(any, &access).unwrap_err();
        assert!(
            refused.contains("--admin-token-file") && refused.contains("0.0.0.0:19000"),
            "{refused}"
        );
        access.allow_unauthenticated = true;
        assert!(
            check_exposure(any, &access)
                .unwrap()
                .unwrap()
                .contains("without a token")
        );
        access.token = Some("t".into());
        assert_eq!(check_exposure(any, &access), Ok(None));
    }

    #[test]
    fn token_files_are_trimmed_and_empty_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret\n").unwrap();
        assert_eq!(read_token_file(&path).unwrap(), "s3cret");
        std::fs::write(&path, " \n").unwrap();
        assert!(matches!(read_token_file(&path), Err(TokenFileError::Empty(_))));
        std::fs::write(&path, "a b").unwrap();
        assert!(read_token_file(&path).is_err());
    }
}
