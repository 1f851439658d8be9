//! What the integrity check needs to know of one resource, read once from its proto: the names it
//! refers to and the few properties other resources are judged by. Facts are a function of the
//! resource's content, so a resource that did not change keeps its facts (the incremental translator
//! caches them beside each packed resource and reads them only for what changed).

use std::sync::Arc;

use super::super::pb::{
    aggregate_cluster, cluster, dfp_cluster, dfp_filter, ext, hcm, listener, protobuf, rbac, rbac_filter, route, tls,
};
use super::super::routes;
use crate::ir::{Name, names};

/// The secret kinds a reference can require.
pub(super) const CA: &str = "validation context";
pub(super) const CERT: &str = "TLS certificate";

/// What a secret holds, as a reference to it is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    Ca,
    Cert,
    Other,
    /// No secret type at all: Envoy would treat it as missing.
    Untyped,
}

impl SecretKind {
    pub fn of(s: &tls::Secret) -> SecretKind {
        match &s.r#type {
            None => SecretKind::Untyped,
            Some(tls::secret::Type::ValidationContext(_)) => SecretKind::Ca,
            Some(tls::secret::Type::TlsCertificate(_)) => SecretKind::Cert,
            Some(_) => SecretKind::Other,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFacts {
    pub name: Name,
    /// SDS secrets its upstream TLS context references, with the kind each must be.
    pub secrets: Vec<(Name, &'static str)>,
    /// The ClusterLoadAssignment an EDS cluster reads; `None` for other discovery types.
    pub eds_service: Option<Name>,
    /// An aggregate cluster's members.
    pub aggregate: Option<Vec<String>>,
    /// A dynamic-forward-proxy cluster's DNS cache (empty when it names none).
    pub dfp_cache: Option<String>,
}

impl ClusterFacts {
    pub fn of(c: &cluster::Cluster) -> ClusterFacts {
        let tls = c
            .transport_socket
            .as_ref()
            .and_then(unpack_socket::<tls::UpstreamTlsContext>);
        let eds = cluster::cluster::DiscoveryType::Eds as i32;
        let eds_service =
            (c.cluster_discovery_type == Some(cluster::cluster::ClusterDiscoveryType::Type(eds))).then(|| {
                // Envoy falls back to the cluster name when service_name is empty.
                let service = c.eds_cluster_config.as_ref().map(|e| e.service_name.as_str());
                Name::from(service.filter(|s| !s.is_empty()).unwrap_or(&c.name))
            });
        let custom = match &c.cluster_discovery_type {
            Some(cluster::cluster::ClusterDiscoveryType::ClusterType(t)) => Some(t),
            _ => None,
        };
        let aggregate = custom.filter(|t| t.name == ext::AGGREGATE_CLUSTER).map(|t| {
            t.typed_config
                .as_ref()
                .and_then(unpack::<aggregate_cluster::ClusterConfig>)
                .map(|cfg| cfg.clusters)
                .unwrap_or_default()
        });
        let dfp_cache = custom.filter(|t| t.name == ext::DFP_CLUSTER).map(|t| {
            let config = t.typed_config.as_ref().and_then(unpack::<dfp_cluster::ClusterConfig>);
            match config.and_then(|c| c.cluster_implementation_specifier) {
                Some(dfp_cluster::cluster_config::ClusterImplementationSpecifier::DnsCacheConfig(cache)) => cache.name,
                _ => String::new(),
            }
        });
        ClusterFacts {
            name: Name::from(&c.name),
            secrets: tls
                .map(|t| common_tls_secrets(t.common_tls_context.as_ref()))
                .unwrap_or_default(),
            eds_service,
            aggregate,
            dfp_cache,
        }
    }

    pub fn reserved(&self) -> bool {
        self.name == names::INVALID_BACKEND_CLUSTER
    }
}

/// A virtual host's facts. Its routes' are shared: a virtual host rebuilt around one changed route keeps
/// every other route's `Arc`, which is how the checker tells what changed (`state.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VhostFacts {
    pub name: Name,
    pub domains: Vec<Name>,
    pub routes: Vec<Arc<RouteFacts>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFacts {
    pub name: Name,
    /// Clusters its action sends traffic to, mirrors included.
    pub clusters: Vec<Name>,
    /// Carries a per-route RBAC config that denies something: the authority guard.
    pub guarded: bool,
}

impl RouteFacts {
    pub fn of(r: &route::Route) -> RouteFacts {
        RouteFacts {
            name: Name::from(&r.name),
            clusters: r
                .action
                .as_ref()
                .map(|a| routes::action_clusters(a).into_iter().map(Name::from).collect())
                .unwrap_or_default(),
            guarded: has_deny_rules(r),
        }
    }
}

impl VhostFacts {
    pub fn of(vh: &route::VirtualHost) -> VhostFacts {
        let routes = vh.routes.iter().map(|r| Arc::new(RouteFacts::of(r))).collect();
        VhostFacts {
            name: Name::from(&vh.name),
            domains: vh.domains.iter().map(Name::from).collect(),
            routes,
        }
    }

    /// The facts of a virtual host encoded as one `RouteConfiguration.virtual_hosts` element.
    pub fn of_encoded(bytes: &[u8]) -> VhostFacts {
        use prost::Message;
        let rc = route::RouteConfiguration::decode(bytes).expect("the translator encoded it");
        VhostFacts::of(rc.virtual_hosts.first().expect("one virtual host"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerFacts {
    pub name: String,
    pub chains: Vec<ChainFacts>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFacts {
    pub name: String,
    /// The chain's SNI match, sorted.
    pub server_names: Vec<String>,
    /// The secrets of its downstream TLS context; `None` without TLS.
    pub tls: Option<Vec<(Name, &'static str)>>,
    /// Its connection managers that read their routes over RDS.
    pub managers: Vec<ManagerFacts>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerFacts {
    pub route_config: String,
    /// Positions of the RBAC and DFP HTTP filters.
    pub rbac: Option<usize>,
    pub dfp: Option<usize>,
    /// The DNS cache the DFP filter fills (empty when it names none).
    pub dfp_cache: String,
}

impl ListenerFacts {
    pub fn of(l: &listener::Listener) -> ListenerFacts {
        let chains = l
            .filter_chains
            .iter()
            .map(|fc| {
                let mut server_names = fc
                    .filter_chain_match
                    .as_ref()
                    .map(|m| m.server_names.clone())
                    .unwrap_or_default();
                server_names.sort();
                let tls = fc
                    .transport_socket
                    .as_ref()
                    .and_then(unpack_socket::<tls::DownstreamTlsContext>)
                    .map(|ctx| common_tls_secrets(ctx.common_tls_context.as_ref()));
                ChainFacts {
                    name: fc.name.clone(),
                    server_names,
                    tls,
                    managers: fc.filters.iter().filter_map(manager).collect(),
                }
            })
            .collect();
        ListenerFacts {
            name: l.name.clone(),
            chains,
        }
    }
}

fn manager(f: &listener::Filter) -> Option<ManagerFacts> {
    let m: hcm::HttpConnectionManager = match &f.config_type {
        Some(listener::filter::ConfigType::TypedConfig(any)) => unpack(any)?,
        _ => return None,
    };
    let Some(hcm::http_connection_manager::RouteSpecifier::Rds(rds)) = &m.route_specifier else {
        return None;
    };
    let position = |name: &str| m.http_filters.iter().position(|f| f.name == name);
    let dfp = position(ext::DFP_FILTER);
    Some(ManagerFacts {
        route_config: rds.route_config_name.clone(),
        rbac: position(ext::RBAC_FILTER),
        dfp,
        dfp_cache: dfp.map(|i| dfp_filter_cache(&m.http_filters[i])).unwrap_or_default(),
    })
}

/// SDS names a TLS context references, with the secret kind each must be.
fn common_tls_secrets(ctx: Option<&tls::CommonTlsContext>) -> Vec<(Name, &'static str)> {
    use tls::common_tls_context::ValidationContextType as V;
    let Some(ctx) = ctx else { return vec![] };
    let mut out: Vec<_> = ctx
        .tls_certificate_sds_secret_configs
        .iter()
        .map(|s| (Name::from(&s.name), CERT))
        .collect();
    match &ctx.validation_context_type {
        Some(V::ValidationContextSdsSecretConfig(s)) => out.push((Name::from(&s.name), CA)),
        Some(V::CombinedValidationContext(c)) => out.extend(
            c.validation_context_sds_secret_config
                .as_ref()
                .map(|s| (Name::from(&s.name), CA)),
        ),
        _ => {}
    }
    // Kept in the cluster's or listener's facts.
    out.shrink_to_fit();
    out
}

fn has_deny_rules(r: &route::Route) -> bool {
    let per_route = r
        .typed_per_filter_config
        .get(ext::RBAC_FILTER)
        .and_then(unpack::<rbac_filter::RbacPerRoute>);
    let rules = per_route.and_then(|p| p.rbac).and_then(|f| f.rules);
    rules.is_some_and(|rules| rules.action == rbac::rbac::Action::Deny as i32 && !rules.policies.is_empty())
}

fn dfp_filter_cache(f: &hcm::HttpFilter) -> String {
    let Some(hcm::http_filter::ConfigType::TypedConfig(any)) = &f.config_type else {
        return String::new();
    };
    match unpack::<dfp_filter::FilterConfig>(any).and_then(|c| c.implementation_specifier) {
        Some(dfp_filter::filter_config::ImplementationSpecifier::DnsCacheConfig(cache)) => cache.name,
        _ => String::new(),
    }
}

fn unpack_socket<M: prost::Message + prost::Name + Default>(
    socket: &super::super::pb::core::TransportSocket,
) -> Option<M> {
    match &socket.config_type {
        Some(super::super::pb::core::transport_socket::ConfigType::TypedConfig(any)) => unpack(any),
        _ => None,
    }
}

/// envoy-types has no unpack helper: match the type URL, then decode.
pub(super) fn unpack<M: prost::Message + prost::Name + Default>(any: &protobuf::Any) -> Option<M> {
    (any.type_url == M::type_url())
        .then(|| M::decode(any.value.as_slice()).ok())
        .flatten()
}
