//! The ADS server: serves each connected Envoy the latest good translation of *its* Gateway over the
//! aggregated discovery service, in state-of-the-world (SotW) and delta (incremental) mode.
//!
//! ```text
//! runtime ──publish(gateways)──▶ cache (Arc<Snapshot> per Gateway, content versions, watch generation)
//!                                   │
//!          one task per stream:  plan (which snapshot each type is served from: make-before-break)
//!                                   │
//!                     sotw | delta  (per-type version / nonce / subscription state machine)
//!                                   │
//!                     server (tonic) ──▶ Envoy        clients + metrics ──▶ admin (/debug/clients, /metrics)
//! ```
//!
//! - [`cache`] owns the snapshots and their versions; nothing else computes a version.
//! - [`plan`] owns the *ordering* (clusters and endpoints before listeners and routes, stale clusters
//!   removed last), shared by both modes so they cannot disagree about it.
//! - `sotw` and `delta` own the wire protocol (the rules of `docs/serving.md`, "Protocol rules pier relies on")
//!   and nothing else: they never look at the cache or the clock, and perform no I/O.
//! - `stream` drives one ADS stream (node → Gateway, requests, cache changes, shutdown) and reports
//!   what happened to [`clients`] and [`metrics`], timing pushes and ACKs through `latency` (so the
//!   state machines need no clock); [`server`] is the tonic glue.
//!
//! This module never translates, never edits resources, and never decides *what* a Gateway serves: it
//! serves exactly what the runtime published, or nothing.

pub mod agent;
pub mod bounds;
pub mod cache;
pub mod clients;
pub mod csds;
mod delta;
pub mod failures;
#[cfg(any(feature = "fuzzing", feature = "testkit"))]
#[doc(hidden)]
pub mod fuzz;
mod grpc;
pub mod identity;
mod known;
mod latency;
pub mod metrics;
pub mod plan;
mod report;
mod requests;
pub mod server;
mod sotw;
mod stream;
pub mod transport;
mod types;
pub mod untrusted;

pub use agent::Agent;
pub use cache::{Entry, Generation, PublishReport, Snapshot, SnapshotCache, View};
pub use clients::{Clients, Mode};
pub use metrics::XdsMetrics;
pub use server::{AdsServer, serve};
pub use types::XdsType;
