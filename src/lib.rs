//! pier: an Envoy xDS control plane for the Gateway API and its Backend resource.
//!
//! ```text
//! source (dir | kube) ──▶ Arc<Model> ──translate()──▶ Translation { per-Gateway Envoy resources, statuses }
//!                                                         │
//!                                     envoy::check ── keep last good ── ADS (SotW, delta) ──▶ Envoy
//! ```
//!
//! The pure core — [`api`], [`model`], [`ir`], [`gateway`], [`envoy`], [`translate`] — does no I/O and reads
//! no clock, environment or randomness: the same model always gives the same bytes. The edges
//! ([`source`]) depend on the core, never the reverse. [`testkit`] and [`demo`] are loopback
//! infrastructure for `pier demo` and the e2e suite, never on the serving path.

pub mod admin;
pub mod api;
pub mod cli;
pub mod crds;
#[cfg(feature = "demo")]
pub mod demo;
pub mod envoy;
pub mod gateway;
pub mod ir;
pub mod model;
pub mod options;
pub mod runtime;
pub mod source;
pub mod status;
#[cfg(any(feature = "demo", feature = "testkit"))]
pub mod testkit;
pub mod translate;
pub mod xds;

pub use options::Options;
pub use translate::{Translation, translate};
