//! What only the suite needs, on top of the shared loopback infrastructure in [`pier::testkit`] (DNS responder,
//! upstream servers, HTTP client, PKI, Envoy runner): the Envoy wrapper tests use, the runner for the `pier`
//! binary, manifest builders, and [`scene::Scene`], which wires them together. Also the two shared
//! primitives: the xDS [`Mode`] and [`eventually`], the one way this suite waits for something to happen
//! (polling with a deadline, never an unbounded wait). The only fixed pauses are observation windows for
//! claims that something does *not* happen (no churn, no traffic shift).

pub mod envoy;
pub mod manifests;
pub mod pier;
pub mod python;
pub mod scene;

pub use pier::PierOptions;

use std::future::Future;
use std::time::Duration;

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

/// Runs `check` until it returns `Ok`, at most for `timeout` ([`pier::testkit::eventually`]); panics with the
/// last error otherwise, naming what was awaited.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    ::pier::testkit::eventually(what, timeout, check)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `E2E_KEEP=1`: leave work directories behind for inspection.
pub fn keep_work_dirs() -> bool {
    std::env::var("E2E_KEEP").is_ok_and(|v| v == "1")
}

/// Prints the last `lines` lines of a log file to stderr (when a test fails, the processes' own words).
pub fn dump_log_tail(label: &str, path: &std::path::Path, lines: usize) {
    let tail = ::pier::testkit::log_tail(path, lines);
    if tail.is_empty() {
        return;
    }
    eprintln!("----- last lines of {label} ({}) -----", path.display());
    eprintln!("{tail}");
    eprintln!("----- end of {label} -----");
}
