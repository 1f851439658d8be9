//! pier: an Envoy xDS control plane for the Gateway API and its Backend resource.
//!
//! ```text
//! source (dir | kube) ──▶ Arc<Model> ──resolve (pier's DNS, optional)──▶ translate::engine (incremental)
//!         ──▶ snapshot (per-Gateway packed resources + statuses) ──▶ envoy::check (keep last good, size bounds)
//!         ──▶ ADS (SotW, delta) ──▶ Envoy ──NACK──▶ containment (bisect, quarantine) ──▶ engine
//!                                   └──▶ status writer (Kubernetes, Lease holder only)
//! ```
//!
//! One pipeline: [`translate()`] (what `pier translate`, the goldens and the fuzz targets run) is
//! [`translate::engine`] run once from the empty model, and `pier serve` runs the same engine on every
//! change. A property test holds every update equal to a rebuild (`tests/golden/engine.rs`).
//!
//! The pure core — [`api`], [`model`], [`ir`], [`gateway`], [`envoy`], [`snapshot`], [`translate`],
//! [`options`], and [`par`] (a parallel map whose output does not depend on the thread count) — does no
//! I/O and reads no clock, environment or randomness: the same model always gives the same bytes.
//! Within it, `gateway` decides *what* to configure and `envoy` *how*; `gateway` never imports `envoy`
//! (resource names are minted in [`ir::names`]); the ADS server reads [`snapshot`] data and never
//! reaches the translator. The edges — [`source`], [`status`], [`xds`], [`runtime`], [`admin`],
//! [`cli`], [`crds`], [`certs`], [`ops`], [`resolve`], and the loopback rig `testkit` and `demo` (features
//! `testkit` / `demo`) — depend on the core, never the reverse, and core modules depend on each other only
//! in the pipeline's direction. `tests/it/layering/` enforces these rules on the sources.
//!
//! Why one crate and not a core crate beside an edge crate (linkerd's policy-controller splits them): the
//! layering test already fails on the violations a crate boundary would make compile errors, including the
//! ones a crate boundary would not catch (a clock read, `std::fs` in the core), and it also holds the
//! direction between core modules, which crates would need one per module to express.

pub mod admin;
pub mod api;
pub mod certs;
pub mod cli;
pub mod crds;
#[cfg(feature = "demo")]
pub mod demo;
pub mod envoy;
pub mod gateway;
pub mod ir;
pub mod model;
pub mod ops;
pub mod options;
pub mod par;
pub mod resolve;
pub mod runtime;
pub mod snapshot;
pub mod source;
pub mod status;
#[cfg(any(feature = "demo", feature = "testkit"))]
pub mod testkit;
pub mod translate;
pub mod xds;

pub use options::Options;
pub use translate::{SelectError, Translation, translate};
