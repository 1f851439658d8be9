//! Status writers: the consumers of the statuses the translator computes.
//!
//! - [`merge`]: pure merging of pier's part into an object's existing status (shared lists by
//!   `controllerName`, `lastTransitionTime` only on change, the Envoy-rejection condition on Gateways).
//! - [`kube`]: writes them onto the Kubernetes objects (read-merge-replace, conflict retry, no-op skip,
//!   rate limit), only on the leader.
//! - [`leader`]: Lease-based leader election that decides which replica writes.
//! - [`metrics`]: write outcomes, conflicts and leadership on `/metrics`.
//!
//! The directory source has no writer: its statuses are served by `/debug/status` (and `pier translate`
//! prints them).

pub mod kube;
pub mod leader;

/// What the proxies of a Gateway currently reject, as `(type URL, Envoy's message)` pairs, for the
/// Gateway's rejection condition. The status writer asks this of whatever the runtime hands it (the xDS
/// server's client registry in production), so it depends on data, not on the ADS server.
pub trait Rejections: Send + Sync {
    fn of_gateway(&self, gateway: &str) -> Vec<(String, String)>;
}
pub mod merge;
pub mod metrics;
