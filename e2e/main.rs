//! End-to-end suite: a real Envoy 1.40, real upstream servers on loopback, real certificates (rcgen) and
//! `pier serve` streaming configuration over ADS — every scenario of issue 3 in both state-of-the-world and
//! delta mode.
//!
//! Why a separate test crate: these tests spawn processes (pier, Envoy) and bind sockets, so they live apart
//! from the fast unit and golden tests, and `cargo test --test e2e` runs just them. Everything stays on
//! 127.0.0.0/8: upstreams bind 127.0.0.2 and up, Envoy's DNS resolver is the suite's own loopback responder,
//! and Envoy's listeners bind 127.0.0.1. `PIER_SKIP_ENVOY=1` skips the suite (it needs Envoy); set
//! `E2E_KEEP=1` to keep the work directories (pier and Envoy logs, bootstraps) for inspection.

mod harness;
mod scenarios;
