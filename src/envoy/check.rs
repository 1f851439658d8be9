//! Referential integrity of one Gateway's resources, checked before every publish and in every golden
//! case: what Envoy would otherwise NACK, or accept and then leave warming forever (a missing EDS or SDS
//! resource), is found here with a message that names the resource. It checks the protos, not the IR, so
//! it also catches builder mistakes.

use std::collections::{BTreeMap, BTreeSet};

use super::pb::{cluster, hcm, listener, protobuf, tls};
use super::{Resources, routes};
use crate::ir::names;

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

/// The secret kinds a reference can require.
const CA: &str = "validation context";
const CERT: &str = "TLS certificate";

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

    check_secret_refs(res, &mut errors);
    check_clusters_and_endpoints(res, &mut errors);
    let dfp = dfp::DfpClusters::of(res);
    check_routes(res, &dfp, &mut errors);
    check_listeners(res, &dfp, &mut errors);
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

fn check_secret_refs(res: &Resources, errors: &mut Vec<CheckError>) {
    let secrets: BTreeMap<&str, &tls::Secret> = res.secrets.iter().map(|s| (s.name.as_str(), s)).collect();
    let secret_ref = |errors: &mut Vec<CheckError>, owner: &dyn Fn() -> String, name: &str, expected| {
        let ok = match secrets.get(name).and_then(|s| s.r#type.as_ref()) {
            None => {
                return errors.push(CheckError::MissingSecret {
                    owner: owner(),
                    secret: name.to_string(),
                });
            }
            Some(tls::secret::Type::ValidationContext(_)) => expected == CA,
            Some(tls::secret::Type::TlsCertificate(_)) => expected == CERT,
            Some(_) => false,
        };
        if !ok {
            errors.push(CheckError::WrongSecretType {
                owner: owner(),
                secret: name.to_string(),
                expected,
            });
        }
    };
    for c in &res.clusters {
        let Some(ctx) = c
            .transport_socket
            .as_ref()
            .and_then(unpack_socket::<tls::UpstreamTlsContext>)
        else {
            continue;
        };
        let owner = || format!("cluster {}", c.name);
        for (name, expected) in common_tls_secrets(ctx.common_tls_context.as_ref()) {
            secret_ref(errors, &owner, name, expected);
        }
    }
    for l in &res.listeners {
        for fc in &l.filter_chains {
            let Some(ctx) = fc
                .transport_socket
                .as_ref()
                .and_then(unpack_socket::<tls::DownstreamTlsContext>)
            else {
                continue;
            };
            let owner = || chain_owner(l, fc);
            let refs = common_tls_secrets(ctx.common_tls_context.as_ref());
            if !refs.iter().any(|(_, kind)| *kind == CERT) {
                errors.push(CheckError::NoCertificate {
                    listener: l.name.clone(),
                    chain: fc.name.clone(),
                });
            }
            for (name, expected) in refs {
                secret_ref(errors, &owner, name, expected);
            }
        }
    }
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

fn check_clusters_and_endpoints(res: &Resources, errors: &mut Vec<CheckError>) {
    let load_assignments: BTreeSet<&str> = res.endpoints.iter().map(|e| e.cluster_name.as_str()).collect();
    let mut eds_services = BTreeSet::new();
    for c in &res.clusters {
        if c.name == names::INVALID_BACKEND_CLUSTER {
            errors.push(CheckError::ReservedClusterName(c.name.clone()));
        }
        check_aggregate_members(res, c, errors);
        let eds = cluster::cluster::DiscoveryType::Eds as i32;
        if c.cluster_discovery_type != Some(cluster::cluster::ClusterDiscoveryType::Type(eds)) {
            continue;
        }
        // Envoy falls back to the cluster name when service_name is empty.
        let service = c
            .eds_cluster_config
            .as_ref()
            .map(|e| e.service_name.as_str())
            .filter(|s| !s.is_empty());
        let service = service.unwrap_or(&c.name);
        eds_services.insert(service);
        if !load_assignments.contains(service) {
            errors.push(CheckError::MissingLoadAssignment {
                cluster: c.name.clone(),
                service_name: service.to_string(),
            });
        }
    }
    for cla in load_assignments.difference(&eds_services) {
        errors.push(CheckError::OrphanLoadAssignment(cla.to_string()));
    }
}

/// An aggregate cluster's members must all be clusters of the same set (Envoy would wait for them).
fn check_aggregate_members(res: &Resources, c: &cluster::Cluster, errors: &mut Vec<CheckError>) {
    let Some(cluster::cluster::ClusterDiscoveryType::ClusterType(custom)) = &c.cluster_discovery_type else {
        return;
    };
    if custom.name != super::pb::ext::AGGREGATE_CLUSTER {
        return;
    }
    let members = custom
        .typed_config
        .as_ref()
        .and_then(unpack::<super::pb::aggregate_cluster::ClusterConfig>)
        .map(|cfg| cfg.clusters)
        .unwrap_or_default();
    for m in members {
        if !res.clusters.iter().any(|x| x.name == m) {
            errors.push(CheckError::MissingAggregateMember {
                aggregate: c.name.clone(),
                member: m,
            });
        }
    }
}

fn check_routes(res: &Resources, dfp: &dfp::DfpClusters<'_>, errors: &mut Vec<CheckError>) {
    let clusters: BTreeSet<&str> = res.clusters.iter().map(|c| c.name.as_str()).collect();
    for rc in &res.routes {
        dfp::check_guarded_routes(rc, dfp, errors);
        for r in routes::referenced_clusters(rc) {
            if r.cluster != names::INVALID_BACKEND_CLUSTER && !clusters.contains(r.cluster) {
                errors.push(CheckError::MissingCluster {
                    route_config: rc.name.clone(),
                    vhost: r.vhost.to_string(),
                    route: r.route.to_string(),
                    cluster: r.cluster.to_string(),
                });
            }
        }
        // Envoy compares domains case-insensitively and rejects a route config that repeats one.
        let mut domains: BTreeMap<String, &str> = BTreeMap::new();
        for vh in &rc.virtual_hosts {
            for d in &vh.domains {
                if let Some(first) = domains.insert(d.to_ascii_lowercase(), &vh.name) {
                    errors.push(CheckError::DuplicateDomain {
                        route_config: rc.name.clone(),
                        domain: d.clone(),
                        first: first.to_string(),
                        second: vh.name.clone(),
                    });
                }
            }
        }
    }
}

fn check_listeners(res: &Resources, dfp: &dfp::DfpClusters<'_>, errors: &mut Vec<CheckError>) {
    let routes: BTreeMap<&str, _> = res.routes.iter().map(|r| (r.name.as_str(), r)).collect();
    for l in &res.listeners {
        let mut chain_names = BTreeSet::new();
        let mut matches: BTreeMap<Vec<String>, &str> = BTreeMap::new();
        for fc in &l.filter_chains {
            if !fc.name.is_empty() && !chain_names.insert(&fc.name) {
                errors.push(CheckError::DuplicateName {
                    kind: "filter chain",
                    name: format!("{}/{}", l.name, fc.name),
                });
            }
            let mut server_names = fc
                .filter_chain_match
                .as_ref()
                .map(|m| m.server_names.clone())
                .unwrap_or_default();
            server_names.sort();
            if let Some(first) = matches.insert(server_names, &fc.name) {
                errors.push(CheckError::DuplicateFilterChainMatch {
                    listener: l.name.clone(),
                    first: first.to_string(),
                    second: fc.name.clone(),
                });
            }
            for manager in fc.filters.iter().filter_map(unpack_hcm) {
                let owner = chain_owner(l, fc);
                let Some(hcm::http_connection_manager::RouteSpecifier::Rds(rds)) = &manager.route_specifier else {
                    continue;
                };
                let Some(rc) = routes.get(rds.route_config_name.as_str()) else {
                    errors.push(CheckError::MissingRouteConfig {
                        owner,
                        route_config: rds.route_config_name.clone(),
                    });
                    continue;
                };
                dfp::check_http_filters(owner, &manager, rc, dfp, errors);
            }
        }
    }
}

fn chain_owner(l: &listener::Listener, fc: &listener::FilterChain) -> String {
    if fc.name.is_empty() {
        format!("listener {}", l.name)
    } else {
        format!("listener {} filter chain {}", l.name, fc.name)
    }
}

/// SDS names a TLS context references, with the secret kind each must be.
fn common_tls_secrets(ctx: Option<&tls::CommonTlsContext>) -> Vec<(&str, &'static str)> {
    use tls::common_tls_context::ValidationContextType as V;
    let Some(ctx) = ctx else { return vec![] };
    let mut out: Vec<_> = ctx
        .tls_certificate_sds_secret_configs
        .iter()
        .map(|s| (s.name.as_str(), CERT))
        .collect();
    match &ctx.validation_context_type {
        Some(V::ValidationContextSdsSecretConfig(s)) => out.push((&s.name, CA)),
        Some(V::CombinedValidationContext(c)) => out.extend(
            c.validation_context_sds_secret_config
                .as_ref()
                .map(|s| (s.name.as_str(), CA)),
        ),
        _ => {}
    }
    out
}

fn unpack_hcm(f: &listener::Filter) -> Option<hcm::HttpConnectionManager> {
    match &f.config_type {
        Some(listener::filter::ConfigType::TypedConfig(any)) => unpack(any),
        _ => None,
    }
}

fn unpack_socket<M: prost::Message + prost::Name + Default>(socket: &super::pb::core::TransportSocket) -> Option<M> {
    match &socket.config_type {
        Some(super::pb::core::transport_socket::ConfigType::TypedConfig(any)) => unpack(any),
        _ => None,
    }
}

/// envoy-types has no unpack helper: match the type URL, then decode.
fn unpack<M: prost::Message + prost::Name + Default>(any: &protobuf::Any) -> Option<M> {
    (any.type_url == M::type_url())
        .then(|| M::decode(any.value.as_slice()).ok())
        .flatten()
}

#[path = "check_dfp.rs"]
mod dfp;

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
