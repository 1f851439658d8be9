//! Loopback test and demo infrastructure: used by `pier demo` and the e2e suite; never on the serving path.
//!
//! Everything here binds 127.0.0.0/8 only: a UDP DNS responder ([`dns`]) so Envoy's STRICT_DNS clusters
//! resolve made-up names to loopback upstreams, HTTP/TLS upstream servers that record what they saw
//! ([`upstream`]), a minimal HTTP/1.1 client ([`http`]), an rcgen PKI ([`pki`]), and a runner for a real
//! Envoy ([`envoy`]). It lives in the library (rather than in the test crate) so the demo and the e2e suite
//! share one implementation; the suite's assertion helpers stay in `e2e/harness`.
//!
//! Compiled only with the `demo` feature (on by default) or the `testkit` feature (turned on for every test
//! target by pier's self dev-dependency), so `cargo build --no-default-features` has none of it, nor its
//! dependencies (rcgen, tokio-rustls, the hyper servers).. The IR builders tests share are in the core
//! (`ir::build`), so the core's own unit tests never reach into this edge.
//!
//! Functions that return `Result` are the ones the demo needs to report failures in words; the few that
//! panic (`Upstream::http`, `Upstream::https`) are conveniences for tests and say so.

pub mod dns;
pub mod envoy;
#[cfg(feature = "testkit")]
pub mod grpc;
pub mod http;
pub mod mcp;
pub mod pki;
pub mod upstream;
#[cfg(feature = "testkit")]
pub mod workload;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

/// How often [`eventually`] retries.
const POLL: Duration = Duration::from_millis(50);

/// Runs `check` until it returns `Ok`, at most for `timeout`. The error names what was awaited and the last
/// attempt's error, so a timeout says what never happened rather than just "timed out".
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        // Each attempt is itself bounded, so a hung connection cannot stretch the deadline.
        let last = match tokio::time::timeout(remaining.max(POLL), check()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => e,
            Err(_) => "attempt did not finish before the deadline".to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "timed out after {timeout:?} waiting for {what}; last error: {last}"
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A port that was free on `ip` a moment ago. Used where the port must be written into a manifest before
/// anything listens on it (Gateway listener ports, which Envoy binds).
///
/// Taken below the kernel's ephemeral range: a port the OS handed out could be handed out again, to any
/// outgoing connection on the machine, before Envoy binds it ("Address already in use"). Below the range
/// only an explicit bind can take it, and each process walks the candidates from its own offset, so
/// parallel tests and test binaries do not pick the same one.
pub fn free_port(ip: Ipv4Addr) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let (low, high) = (10_000u32, ephemeral_start().max(10_001));
    let span = high - low;
    let offset = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span.min(4_096) {
        let port = (low + (offset + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        if TcpListener::bind((ip, port)).is_ok() {
            return port;
        }
    }
    let listener = TcpListener::bind((ip, 0)).expect("binding an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// The first port of the kernel's ephemeral range (Linux's default where it cannot be read).
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// `127.0.0.<n>`. 127.0.0.1 is Envoy's and pier's; upstreams use 2 and up so every address in a manifest
/// names exactly one upstream.
pub fn lo(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, n)
}

/// The socket address `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// The last `lines` lines of a log file (empty when it cannot be read): a process's own words on why it
/// failed.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
