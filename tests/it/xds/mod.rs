//! The ADS server over loopback: the real tonic server, driven by envoy-types' client the way Envoy 1.40
//! drives it, in state-of-the-world ([`sotw`]) and incremental ([`delta`]) mode. The scenarios both
//! modes share ([`scenarios`]: first request, NACK, unknown Gateway, Gateway isolation, make-before-break,
//! shutdown) are written once and run as a test in each mode module under the same name; what only one
//! protocol has (SotW's wildcard rules, nonce handling and restart versions; delta's subscriptions,
//! removals and initial resource versions) stays in that mode's module.

mod auth;
mod bounds;
mod delta;
mod fleet_limits;
mod fuzz_props;
mod latency;
mod proxyless;
mod scenarios;
mod sotw;
