//! The pieces every scenario is built from: a loopback DNS responder, a PKI, upstream servers, a tiny HTTP
//! client, process runners for pier and Envoy, manifest builders, and [`scene::Scene`], which wires them
//! together. Also the two shared primitives: the xDS [`Mode`] and [`eventually`], the one way this suite
//! waits for something to happen (polling with a deadline, never an unbounded wait). The only fixed pauses
//! are observation windows for claims that something does *not* happen (no churn, no traffic shift).

pub mod dns;
pub mod envoy;
pub mod http;
pub mod manifests;
pub mod pier;
pub mod pki;
pub mod scene;
pub mod upstream;

pub use pier::PierOptions;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

/// Which ADS flavour the proxy speaks; every scenario runs in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Sotw,
    Delta,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Sotw => "sotw",
            Mode::Delta => "delta",
        }
    }
}

/// How often [`eventually`] retries.
const POLL: Duration = Duration::from_millis(50);

/// Runs `check` until it returns `Ok`, at most for `timeout`; panics with the last error otherwise. The
/// message names what was awaited, so a timeout says what never happened rather than just "timed out".
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        // Each attempt is itself bounded, so a hung connection cannot stretch the deadline.
        let last = match tokio::time::timeout(remaining.max(POLL), check()).await {
            Ok(Ok(value)) => return value,
            Ok(Err(e)) => e,
            Err(_) => "attempt did not finish before the deadline".to_string(),
        };
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}; last error: {last}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A port that was free on `ip` a moment ago (the OS picked it). Used where the port must be written into a
/// manifest before anything listens on it (Gateway listener ports, which Envoy binds).
pub fn free_port(ip: Ipv4Addr) -> u16 {
    let listener = TcpListener::bind((ip, 0)).expect("binding an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// `127.0.0.<n>`: the suite's loopback addresses. 127.0.0.1 is Envoy's and pier's; upstreams use 2 and up so
/// every address in a manifest names exactly one upstream.
pub fn lo(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, n)
}

/// The socket address `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// `E2E_KEEP=1`: leave work directories behind for inspection.
pub fn keep_work_dirs() -> bool {
    std::env::var("E2E_KEEP").is_ok_and(|v| v == "1")
}

/// Prints the last `lines` lines of a log file to stderr (when a test fails, the processes' own words).
pub fn dump_log_tail(label: &str, path: &std::path::Path, lines: usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    eprintln!(
        "----- last {} lines of {label} ({}) -----",
        all.len() - start,
        path.display()
    );
    for line in &all[start..] {
        eprintln!("{line}");
    }
    eprintln!("----- end of {label} -----");
}
