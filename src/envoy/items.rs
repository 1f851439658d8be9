//! One resource (or one virtual host) at a time: the builders [`build`](super::build) uses, for the
//! incremental translator (`translate::engine`), which rebuilds only what changed. Same functions, so a
//! resource is the same whichever way it was made.

use std::collections::BTreeMap;

use super::pb::{cluster, endpoint, listener, route, tls};
use super::{clusters, endpoints, listeners, routes, secrets};
use crate::ir;

pub use super::features::Used;
pub use super::routes::Listening;

/// The Gateway's clusters by name, for the builders that must know what a route reaches (a dynamic
/// forward proxy gets the authority guard and its filter).
pub trait ClusterLookup {
    fn cluster(&self, name: &str) -> Option<&ir::Cluster>;
}

impl ClusterLookup for BTreeMap<String, ir::Cluster> {
    fn cluster(&self, name: &str) -> Option<&ir::Cluster> {
        self.get(name)
    }
}

pub fn cluster(name: &str, c: &ir::Cluster) -> cluster::Cluster {
    clusters::build(name, c)
}

pub fn load_assignment(name: &str, endpoints: &[ir::Endpoint]) -> endpoint::ClusterLoadAssignment {
    endpoints::load_assignment(name, endpoints)
}

pub fn virtual_host(vh: &ir::VirtualHost, clusters: &dyn ClusterLookup, at: Listening) -> (route::VirtualHost, Used) {
    routes::virtual_host(vh, clusters, at)
}

/// One route entry of a virtual host, and what it uses.
pub fn route(r: &ir::Route, clusters: &dyn ClusterLookup, at: Listening) -> (route::Route, Used) {
    routes::route_entry(r, clusters, at)
}

/// A route configuration without its virtual hosts.
pub fn route_config(name: &str) -> route::RouteConfiguration {
    routes::config_header(name)
}

/// `used`: what the routes of each route configuration (by name) use.
pub fn listener(l: &ir::Listener, used: &BTreeMap<String, Used>) -> listener::Listener {
    listeners::build(l, used)
}

pub fn secret(name: &str, s: &ir::Secret) -> tls::Secret {
    secrets::build(name, s)
}
