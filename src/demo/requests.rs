//! The requests the demo sends through Envoy, what each must show, and the table that reports them: which
//! upstream answered (its `x-upstream` header) and what that upstream saw (TLS, SNI, HTTP version, the client
//! certificate), because the point of each route is how Envoy reached the upstream, not just that it did.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::upstreams::Upstreams;
use crate::testkit::envoy::Envoy;
use crate::testkit::http::{self, Response};
use crate::testkit::pki::{certificates_from_pem, subject_cn};
use crate::testkit::upstream::Seen;

/// How many requests the weighted routes get.
const BATCH: usize = 20;
/// The refused Backend of the `legacy` rule (examples/10-backends.yaml, `metadata-probe`).
const REFUSED_ADDRESS: &str = "169.254.169.254";

/// Where the requests go and what they are checked against.
pub struct Targets<'a> {
    pub http: SocketAddr,
    pub https: SocketAddr,
    /// The demo CA (examples/upstream-certs/ca.crt), which issued Envoy's HTTPS certificate too.
    pub ca_pem: String,
    pub upstreams: &'a Upstreams,
    pub envoy: &'a Envoy,
}

/// One line of the results table.
pub struct Row {
    pub request: String,
    pub status: String,
    pub answered_by: String,
    /// The Backend shape the route reaches, and what the upstream saw.
    pub shows: String,
    /// Why the result is not what the example should give; `None` when it is.
    pub problem: Option<String>,
}

/// Sends every request, in order.
pub async fn run(t: &Targets<'_>) -> Vec<Row> {
    let mut rows = Vec::new();
    rows.push(
        single(
            t,
            "api.demo.test",
            "/v1/models",
            "api",
            "XBackend ExternalHostname, TLS verified against the demo CA",
            |s| tls_with_sni(s, "api.demo.test"),
        )
        .await,
    );
    rows.push(
        single(
            t,
            "api.demo.test",
            "/payments/charge",
            "payments",
            "GEP Backend, mutual TLS, SAN spiffe://demo.test/payments verified",
            |s| {
                tls_with_sni(s, "payments.demo.test")?;
                match s.client_cn.as_deref() {
                    Some("client") => Ok(()),
                    other => Err(format!(
                        "payments should see the Gateway's client certificate (CN=client), saw {other:?}"
                    )),
                }
            },
        )
        .await,
    );
    rows.push(
        single(
            t,
            "api.demo.test",
            "/weather",
            "weather",
            "draft Backend (spec.destination)",
            |_| Ok(()),
        )
        .await,
    );
    rows.push(legacy(t).await);
    rows.push(site(t).await);
    rows.push(
        single(
            t,
            "www.demo.test",
            "/billing",
            "billing",
            "Service + BackendTLSPolicy, re-encrypted",
            |s| tls_with_sni(s, "billing.demo.test"),
        )
        .await,
    );
    rows.push(https(t).await);
    rows
}

/// One GET through the HTTP listener that `expected` must answer with 200, seeing what `check` accepts.
async fn single(
    t: &Targets<'_>,
    host: &str,
    path: &str,
    expected: &str,
    shape: &str,
    check: impl Fn(&Seen) -> Result<(), String>,
) -> Row {
    let upstream = t.upstreams.get(expected);
    let before = upstream.requests().len();
    let result = http::get(t.http, host, path).await;
    let seen = upstream.requests().get(before).cloned();
    let request = format!("GET {host}{path}");
    answered(request, &result, &[expected], shape, seen.as_ref(), check)
}

/// The row of one request that one of `expected` must answer with 200; `seen` is what that upstream saw.
fn answered(
    request: String,
    result: &Result<Response, String>,
    expected: &[&str],
    shape: &str,
    seen: Option<&Seen>,
    check: impl Fn(&Seen) -> Result<(), String>,
) -> Row {
    let (status, answered_by) = match result {
        Ok(r) => (r.status.to_string(), r.upstream().unwrap_or("Envoy").to_string()),
        Err(e) => (format!("error: {e}"), "-".to_string()),
    };
    let shows = match seen {
        Some(s) => format!("{shape}; {answered_by} saw {}", describe(s)),
        None => shape.to_string(),
    };
    let problem = match (result, seen) {
        (Ok(r), Some(s)) if r.status == 200 && r.upstream().is_some_and(|u| expected.contains(&u)) => check(s).err(),
        _ => Some(format!("expected 200 from {}", expected.join(" or "))),
    };
    Row {
        request,
        status,
        answered_by,
        shows,
        problem,
    }
}

/// `legacy` rule: the Envoy Gateway Backend `legacy` over h2c (weight 90, with `legacy-dr` as its fallback)
/// and the refused `metadata-probe` (weight 10), whose share Envoy answers 500 itself.
async fn legacy(t: &Targets<'_>) -> Row {
    let (legacy, fallback) = (t.upstreams.get("legacy"), t.upstreams.get("legacy-dr"));
    let (before, fallback_before) = (legacy.requests().len(), fallback.requests().len());
    let tally = http::tally(t.http, "api.demo.test", "/legacy", BATCH).await;
    let seen = legacy.requests()[before..].to_vec();
    let refused = tally.get("status:500");
    let mut problems = Vec::new();
    if tally.get("legacy") + refused != BATCH || tally.get("legacy") == 0 {
        problems.push(format!("expected 200 from legacy and ~10% 500, got {tally}"));
    }
    if seen.iter().any(|s| s.tls || s.version != "HTTP/2.0") {
        problems.push("legacy should be spoken to over h2c".to_string());
    }
    if fallback.requests().len() != fallback_before {
        problems.push("legacy-dr took traffic although legacy is healthy".to_string());
    }
    let in_envoy = t
        .envoy
        .admin_get("/config_dump?include_eds")
        .await
        .map(|r| r.body.contains(REFUSED_ADDRESS));
    match in_envoy {
        Ok(false) => {}
        Ok(true) => problems.push(format!("{REFUSED_ADDRESS} is in Envoy's configuration")),
        Err(e) => problems.push(format!("reading Envoy's config_dump: {e}")),
    }
    Row {
        request: format!("GET api.demo.test/legacy ×{BATCH}"),
        status: counts(&tally.0, |k| {
            k.strip_prefix("status:").map(str::to_string).unwrap_or("200".into())
        }),
        answered_by: counts(&tally.0, |k| {
            if k.starts_with("status:") {
                "Envoy".into()
            } else {
                k.to_string()
            }
        }),
        shows: format!(
            "EG Backend over h2c; legacy saw {}; the 500s are metadata-probe's share ({REFUSED_ADDRESS}, refused \
             by the guardrails, is not in Envoy's config); legacy-dr (fallback) idle",
            versions(&seen)
        ),
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

/// `site` default rule: Service `echo` (weight 70, HTTP/1.1) and XBackend `echo-h2c` (weight 30, h2c) over
/// the same two endpoints.
async fn site(t: &Targets<'_>) -> Row {
    let echo = [t.upstreams.get("echo-1"), t.upstreams.get("echo-2")];
    let before: Vec<usize> = echo.iter().map(|u| u.requests().len()).collect();
    let tally = http::tally(t.http, "www.demo.test", "/", BATCH).await;
    let seen: Vec<Seen> = echo
        .iter()
        .zip(&before)
        .flat_map(|(u, b)| u.requests()[*b..].to_vec())
        .collect();
    let answered = tally.get("echo-1") + tally.get("echo-2");
    Row {
        request: format!("GET www.demo.test/ ×{BATCH}"),
        status: counts(&tally.0, |k| {
            k.strip_prefix("status:").map(str::to_string).unwrap_or("200".into())
        }),
        answered_by: counts(&tally.0, |k| k.to_string()),
        shows: format!(
            "Service echo (70, HTTP/1.1) + XBackend echo-h2c (30, h2c): {}",
            versions(&seen)
        ),
        problem: (answered != BATCH).then(|| format!("expected 200 from echo-1 or echo-2 every time, got {tally}")),
    }
}

/// One request to the HTTPS listener with SNI www.demo.test, verifying Envoy's certificate against the demo CA.
async fn https(t: &Targets<'_>) -> Row {
    let echo = [t.upstreams.get("echo-1"), t.upstreams.get("echo-2")];
    let before: Vec<usize> = echo.iter().map(|u| u.requests().len()).collect();
    let result = tokio::time::timeout(http::REQUEST_TIMEOUT, https_get(t, "www.demo.test", "/"))
        .await
        .unwrap_or_else(|_| Err(format!("no response within {:?}", http::REQUEST_TIMEOUT)));
    let (result, gateway_cn) = match result {
        Ok((r, cn)) => (Ok(r), cn),
        Err(e) => (Err(e), None),
    };
    let answered_by = result.as_ref().ok().and_then(Response::upstream);
    let seen = echo
        .iter()
        .zip(&before)
        .find(|(u, _)| Some(u.name.as_str()) == answered_by)
        .and_then(|(u, b)| u.requests().get(*b).cloned());
    let shape = format!(
        "HTTPS listener: Envoy's certificate (CN={}) verified against the demo CA",
        gateway_cn.as_deref().unwrap_or("?")
    );
    let request = format!("GET https://www.demo.test:{}/", t.https.port());
    answered(request, &result, &["echo-1", "echo-2"], &shape, seen.as_ref(), |_| {
        Ok(())
    })
}

async fn https_get(t: &Targets<'_>, host: &str, path: &str) -> Result<(Response, Option<String>), String> {
    let mut roots = RootCertStore::empty();
    for ca in certificates_from_pem(&t.ca_pem)? {
        roots.add(ca).map_err(|e| format!("demo CA: {e}"))?;
    }
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(t.https)
        .await
        .map_err(|e| format!("connect {}: {e}", t.https))?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {}: {e}", t.https))?;
    let cn = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| subject_cn(c));
    Ok((http::request_over(tls, host, path).await?, cn))
}

fn tls_with_sni(seen: &Seen, sni: &str) -> Result<(), String> {
    if seen.tls && seen.sni.as_deref() == Some(sni) {
        Ok(())
    } else {
        Err(format!(
            "expected TLS with SNI {sni}, the upstream saw {}",
            describe(seen)
        ))
    }
}

/// `TLS (SNI api.demo.test), h2, client cert CN=client` or `plaintext, h2c`.
fn describe(seen: &Seen) -> String {
    let mut parts = vec![match (&seen.tls, &seen.sni) {
        (true, Some(sni)) => format!("TLS (SNI {sni})"),
        (true, None) => "TLS (no SNI)".to_string(),
        (false, _) => "plaintext".to_string(),
    }];
    parts.push(protocol(seen).to_string());
    if let Some(cn) = &seen.client_cn {
        parts.push(format!("client cert CN={cn}"));
    }
    parts.join(", ")
}

fn protocol(seen: &Seen) -> &'static str {
    match (seen.version.as_str(), seen.tls) {
        ("HTTP/2.0", true) => "h2",
        ("HTTP/2.0", false) => "h2c",
        ("HTTP/1.0", _) => "HTTP/1.0",
        _ => "HTTP/1.1",
    }
}

/// `HTTP/1.1 ×14, h2c ×6`.
fn versions(seen: &[Seen]) -> String {
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for s in seen {
        *by.entry(protocol(s)).or_default() += 1;
    }
    by.iter()
        .map(|(p, n)| format!("{p} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A tally regrouped by `label`: `200 ×18, 500 ×2`.
fn counts(tally: &BTreeMap<String, usize>, label: impl Fn(&str) -> String) -> String {
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for (key, n) in tally {
        *by.entry(label(key)).or_default() += n;
    }
    by.iter()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints the table; true when every row is as expected.
pub fn print(rows: &[Row]) -> bool {
    let width = |f: fn(&Row) -> &str, title: &str| rows.iter().map(|r| f(r).chars().count()).chain([title.len()]).max();
    let w1 = width(|r| &r.request, "REQUEST").unwrap_or(0);
    let w2 = width(|r| &r.status, "STATUS").unwrap_or(0);
    let w3 = width(|r| &r.answered_by, "ANSWERED BY").unwrap_or(0);
    println!(
        "  {:w1$}  {:w2$}  {:w3$}  WHAT IT SHOWS",
        "REQUEST", "STATUS", "ANSWERED BY"
    );
    for r in rows {
        let mark = if r.problem.is_none() { '✓' } else { '✗' };
        println!(
            "{mark} {:w1$}  {:w2$}  {:w3$}  {}",
            r.request, r.status, r.answered_by, r.shows
        );
        if let Some(problem) = &r.problem {
            println!("    ✗ {problem}");
        }
    }
    rows.iter().all(|r| r.problem.is_none())
}
