//! Referential integrity of one Gateway's resources, checked before every publish and in every golden
//! case: what Envoy would otherwise NACK, or accept and then leave warming forever (a missing EDS or SDS
//! resource), is found here with a message that names the resource. It checks the protos, not the IR, so
//! it also catches builder mistakes.
//!
//! The check costs what changed: each resource is read once into its [`facts`], and a [`Checker`]
//! keeps every owner's errors with the names it read, rechecking only what a change touches
//! (`state.rs`). [`check`] runs the same checker over a whole resource set at once.
//!
//! The dynamic-forward-proxy rules: a DFP cluster connects wherever the request's authority says, so
//! where routes reach one the connection manager runs the DFP filter with the cluster's DNS cache (or
//! requests fail), the RBAC filter runs before it, and every such route carries the per-route authority
//! guard (or any client can make Envoy connect to loopback, cloud metadata or in-cluster names).
//! Neither filter sits where no route needs it.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::Resources;

pub mod facts;
mod rules;
mod state;

pub use facts::{ClusterFacts, ListenerFacts, SecretKind, VhostFacts};
pub use state::Checker;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("{kind} {name:?} is defined more than once")]
    DuplicateName { kind: &'static str, name: String },
    #[error("cluster {0:?} uses the name reserved for invalid backendRefs, which must never exist")]
    ReservedClusterName(String),
    #[error("route config {route_config} vhost {vhost} route {route}: cluster {cluster:?} does not exist")]
    MissingCluster {
        route_config: String,
        vhost: String,
        route: String,
        cluster: String,
    },
    #[error("EDS cluster {cluster}: ClusterLoadAssignment {service_name:?} does not exist")]
    MissingLoadAssignment { cluster: String, service_name: String },
    #[error("aggregate cluster {aggregate}: member cluster {member:?} does not exist")]
    MissingAggregateMember { aggregate: String, member: String },
    #[error("ClusterLoadAssignment {0:?} belongs to no EDS cluster")]
    OrphanLoadAssignment(String),
    #[error("{owner}: secret {secret:?} does not exist")]
    MissingSecret { owner: String, secret: String },
    #[error("{owner}: secret {secret:?} is not a {expected} secret")]
    WrongSecretType {
        owner: String,
        secret: String,
        expected: &'static str,
    },
    #[error("{owner}: route config {route_config:?} does not exist")]
    MissingRouteConfig { owner: String, route_config: String },
    #[error("route config {route_config}: domain {domain:?} is in vhost {first} and vhost {second}")]
    DuplicateDomain {
        route_config: String,
        domain: String,
        first: String,
        second: String,
    },
    #[error("{owner}: routes reach dynamic-forward-proxy cluster {cluster} but the DFP HTTP filter is missing")]
    MissingDfpFilter { owner: String, cluster: String },
    #[error("{owner}: DFP HTTP filter present but no route reaches a dynamic-forward-proxy cluster")]
    UnneededDfpFilter { owner: String },
    #[error("{owner}: DFP HTTP filter fills DNS cache {filter:?} but cluster {cluster} reads {cluster_cache:?}")]
    DnsCacheMismatch {
        owner: String,
        filter: String,
        cluster: String,
        cluster_cache: String,
    },
    #[error(
        "{owner}: routes reach dynamic-forward-proxy cluster {cluster} but no RBAC filter runs before the DFP \
         filter to guard the request authority"
    )]
    MissingRbacFilter { owner: String, cluster: String },
    #[error("{owner}: RBAC filter present but no route reaches a dynamic-forward-proxy cluster")]
    UnneededRbacFilter { owner: String },
    #[error(
        "route config {route_config} vhost {vhost} route {route}: reaches dynamic-forward-proxy cluster {cluster} \
         without a per-route RBAC guard on the request authority"
    )]
    UnguardedDfpRoute {
        route_config: String,
        vhost: String,
        route: String,
        cluster: String,
    },
    #[error("listener {listener}: filter chains {first:?} and {second:?} match the same server names")]
    DuplicateFilterChainMatch {
        listener: String,
        first: String,
        second: String,
    },
    #[error("listener {listener} filter chain {chain}: TLS without a certificate")]
    NoCertificate { listener: String, chain: String },
}

pub fn check(res: &Resources) -> Result<(), Vec<CheckError>> {
    let mut errors = Vec::new();
    unique(&mut errors, "cluster", res.clusters.iter().map(|c| &c.name));
    unique(
        &mut errors,
        "ClusterLoadAssignment",
        res.endpoints.iter().map(|c| &c.cluster_name),
    );
    unique(&mut errors, "listener", res.listeners.iter().map(|l| &l.name));
    unique(&mut errors, "route config", res.routes.iter().map(|r| &r.name));
    unique(&mut errors, "secret", res.secrets.iter().map(|s| &s.name));

    // Virtual hosts are keyed by position: the set is checked once, in order.
    let mut checker = Checker::<usize>::default();
    for c in &res.clusters {
        checker.set_cluster(&c.name, Some(Arc::new(ClusterFacts::of(c))));
    }
    for e in &res.endpoints {
        checker.set_load_assignment(&e.cluster_name, true);
    }
    for s in &res.secrets {
        checker.set_secret(&s.name, Some(SecretKind::of(s)));
    }
    for l in &res.listeners {
        checker.set_listener(&l.name, Some(Arc::new(ListenerFacts::of(l))));
    }
    for rc in &res.routes {
        checker.set_route_config(&rc.name, true);
        for (i, vh) in rc.virtual_hosts.iter().enumerate() {
            checker.set_vhost(&rc.name, i, Some(Arc::new(VhostFacts::of(vh))));
        }
    }
    errors.extend(checker.errors());
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

fn unique<'a>(errors: &mut Vec<CheckError>, kind: &'static str, names: impl Iterator<Item = &'a String>) {
    let mut seen = BTreeSet::new();
    let mut reported = BTreeSet::new();
    for name in names {
        if !seen.insert(name) && reported.insert(name) {
            errors.push(CheckError::DuplicateName {
                kind,
                name: name.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests;
