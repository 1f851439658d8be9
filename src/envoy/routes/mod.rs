//! RDS: one `RouteConfiguration` per `ir::RouteConfig` (an HTTP port, or one HTTPS filter chain). Owns
//! request matching (in `matching`), rule filters (in `filters`: header changes, URL rewrite, redirect,
//! per-backend headers on weighted clusters), mirrors, timeouts, retries and rule names (in `policy`) and
//! the forward / direct-response actions, including the HTTP 500 share of invalid backendRefs that the
//! Gateway API requires. The per-route halves of CORS and the authority guard come from `features`, and
//! each route configuration reports what it used ([`Used`]) for its connection manager.

mod filters;
mod matching;
mod policy;

use super::features::{Used, authority_guard, cors, dfp, session};
use super::items::ClusterLookup;
use super::pb::{ext, protobuf, route};
use crate::ir;
use crate::ir::names;

/// Gateway API: requests to an invalid backendRef (and rules without any valid one) get HTTP 500.
const INVALID_BACKEND_STATUS: u32 = 500;
/// GRPCRoute: the same failures get 503, which Envoy answers a gRPC client as UNAVAILABLE.
const GRPC_INVALID_BACKEND_STATUS: u32 = 503;

/// Where a route configuration is served: a redirect without a port goes to the listener's port.
#[derive(Debug, Clone, Copy)]
pub struct Listening {
    pub port: u16,
    pub https: bool,
}

/// A route configuration and what its routes use (`features::Used`), so the connection manager that
/// serves it gets exactly the filters they need. `clusters` (the Gateway's, by name) tells which routes
/// forward to a dynamic forward proxy.
pub(super) fn build(
    rc: &ir::RouteConfig,
    clusters: &dyn ClusterLookup,
    at: Listening,
) -> (route::RouteConfiguration, Used) {
    let mut used = Used::default();
    let mut config = config_header(&rc.name);
    for vh in &rc.virtual_hosts {
        let (built, u) = virtual_host(vh, clusters, at);
        used.merge(u);
        config.virtual_hosts.push(built);
    }
    (config, used)
}

/// A route configuration without its virtual hosts.
pub(super) fn config_header(name: &str) -> route::RouteConfiguration {
    route::RouteConfiguration {
        name: name.to_string(),
        // Weighted entries name `names::INVALID_BACKEND_CLUSTER` on purpose, which never exists. Under RDS
        // false is already the default; spelled out so the config also holds when inlined (validation).
        validate_clusters: Some(protobuf::BoolValue { value: false }),
        ..Default::default()
    }
}

/// One virtual host, and what its routes use.
pub(super) fn virtual_host(
    vh: &ir::VirtualHost,
    clusters: &dyn ClusterLookup,
    at: Listening,
) -> (route::VirtualHost, Used) {
    let mut used = Used::default();
    let routes = vh
        .routes
        .iter()
        .map(|r| {
            let (route, u) = route_entry(r, clusters, at);
            used.merge(u);
            route
        })
        .collect();
    let built = route::VirtualHost {
        name: vh.name.clone(),
        domains: vh.domains.clone(),
        routes,
        ..Default::default()
    };
    (built, used)
}

pub(super) fn route_entry(r: &ir::Route, clusters: &dyn ClusterLookup, at: Listening) -> (route::Route, Used) {
    let invalid_status = if r.grpc {
        GRPC_INVALID_BACKEND_STATUS
    } else {
        INVALID_BACKEND_STATUS
    };
    let mut action = action(&r.action, invalid_status, at);
    if let route::route::Action::Route(forward) = &mut action {
        if let Some(rewrite) = &r.filters.rewrite {
            filters::apply_rewrite(forward, rewrite);
        }
        policy::apply(forward, &r.filters);
    }
    let guard = authority_guard::per_route(&action, clusters)
        .map(|g| (ext::RBAC_FILTER.to_string(), envoy_types::util::pack_any(g)));
    let cors = r.filters.cors.as_ref().map(cors::per_route);
    // Only a forwarded request has an endpoint to keep.
    let session = match &action {
        route::route::Action::Route(_) => r.filters.session.as_ref().map(session::per_route),
        _ => None,
    };
    let used = Used {
        cors: cors.is_some(),
        authority_guard: guard.is_some(),
        session: session.is_some(),
        dfp: dfp::reached(action_clusters(&action), clusters),
    };
    let mut out = route::Route {
        name: r.name.clone(),
        r#match: Some(matching::route_match(r)),
        action: Some(action),
        typed_per_filter_config: guard.into_iter().chain(cors).chain(session).collect(),
        metadata: policy::rule_metadata(&r.filters),
        ..Default::default()
    };
    filters::apply_headers(&mut out, &r.filters);
    (out, used)
}

fn action(a: &ir::RouteAction, invalid_status: u32, at: Listening) -> route::route::Action {
    match a {
        ir::RouteAction::DirectResponse { status } => direct_response(*status),
        ir::RouteAction::Forward(backends) => forward(backends, invalid_status),
        ir::RouteAction::Redirect(r) => filters::redirect(r, at),
    }
}

fn direct_response(status: u32) -> route::route::Action {
    route::route::Action::DirectResponse(route::DirectResponseAction {
        status,
        ..Default::default()
    })
}

fn forward(backends: &[ir::WeightedBackend], invalid_status: u32) -> route::route::Action {
    use route::route_action::{ClusterNotFoundResponseCode, ClusterSpecifier};
    // Envoy requires a positive total and gains nothing from weight-0 entries, so they are dropped; the
    // same backend listed twice with the same per-backend filters is merged so it appears once (invalid
    // shares all answer the same error, whatever their filters).
    let no_filters = ir::BackendFilters::default();
    let mut shares: Vec<(Option<&str>, u32, &ir::BackendFilters)> = Vec::new();
    for b in backends.iter().filter(|b| b.weight > 0) {
        let cluster = b.cluster.as_deref();
        let own = if cluster.is_some() { &b.filters } else { &no_filters };
        match shares.iter_mut().find(|(c, _, f)| *c == cluster && *f == own) {
            Some((_, weight, _)) => *weight = weight.saturating_add(b.weight),
            None => shares.push((cluster, b.weight, own)),
        }
    }
    // No traffic can reach a valid backend (nothing left, or only invalid shares): a fixed 500.
    if shares.iter().all(|(c, _, _)| c.is_none()) {
        return direct_response(invalid_status);
    }
    // Per-backend header changes exist only on weighted-cluster entries, so a single backend with
    // filters is a weighted split of one.
    let specifier = match shares.as_slice() {
        [(Some(cluster), _, f)] if f.is_empty() => ClusterSpecifier::Cluster(cluster.to_string()),
        _ => ClusterSpecifier::WeightedClusters(route::WeightedCluster {
            clusters: shares
                .iter()
                .map(|(cluster, weight, f)| {
                    let mut entry = route::weighted_cluster::ClusterWeight {
                        name: cluster.unwrap_or(names::INVALID_BACKEND_CLUSTER).to_string(),
                        weight: Some(protobuf::UInt32Value { value: *weight }),
                        ..Default::default()
                    };
                    filters::apply_backend_headers(&mut entry, f);
                    entry
                })
                .collect(),
            ..Default::default()
        }),
    };
    let has_invalid_share = shares.iter().any(|(c, _, _)| c.is_none());
    route::route::Action::Route(route::RouteAction {
        cluster_specifier: Some(specifier),
        // The invalid share names a cluster that never exists; this turns Envoy's default 503 for a
        // missing cluster into the 500 the Gateway API requires.
        // (Envoy's default, 503, is already the gRPC one.)
        cluster_not_found_response_code: if has_invalid_share && invalid_status == INVALID_BACKEND_STATUS {
            ClusterNotFoundResponseCode::InternalServerError as i32
        } else {
            ClusterNotFoundResponseCode::ServiceUnavailable as i32
        },
        ..Default::default()
    })
}

/// The clusters one route action can send traffic to, request mirrors included (a mirror is traffic
/// too: its cluster must exist, and a DFP one needs the same filter and guard).
pub(crate) fn action_clusters(action: &route::route::Action) -> Vec<&str> {
    use route::route_action::ClusterSpecifier;
    let route::route::Action::Route(action) = action else {
        return vec![];
    };
    let mut out: Vec<&str> = match &action.cluster_specifier {
        Some(ClusterSpecifier::Cluster(c)) => vec![c],
        Some(ClusterSpecifier::WeightedClusters(w)) => w.clusters.iter().map(|c| c.name.as_str()).collect(),
        _ => vec![],
    };
    out.extend(action.request_mirror_policies.iter().map(|m| m.cluster.as_str()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wb(cluster: Option<&str>, weight: u32) -> ir::WeightedBackend {
        ir::WeightedBackend {
            cluster: cluster.map(ir::Name::new),
            weight,
            filters: Default::default(),
        }
    }

    fn route_action(a: route::route::Action) -> route::RouteAction {
        match a {
            route::route::Action::Route(r) => r,
            other => panic!("expected a route action, got {other:?}"),
        }
    }

    #[test]
    fn single_backend_is_a_plain_cluster() {
        let r = route_action(forward(&[wb(Some("a"), 1), wb(Some("b"), 0)], 500));
        assert_eq!(
            r.cluster_specifier,
            Some(route::route_action::ClusterSpecifier::Cluster("a".into()))
        );
    }

    /// (cluster, weight) of a weighted-clusters action.
    fn weighted(r: &route::RouteAction) -> Vec<(&str, u32)> {
        let Some(route::route_action::ClusterSpecifier::WeightedClusters(w)) = &r.cluster_specifier else {
            panic!("weighted expected")
        };
        w.clusters
            .iter()
            .map(|c| (c.name.as_str(), c.weight.unwrap().value))
            .collect()
    }

    #[test]
    fn invalid_share_gets_500_from_a_missing_cluster() {
        let r = route_action(forward(&[wb(Some("a"), 3), wb(None, 1)], 500));
        assert_eq!(r.cluster_not_found_response_code, 2, "INTERNAL_SERVER_ERROR");
        let entries = weighted(&r);
        assert_eq!(entries, vec![("a", 3), (names::INVALID_BACKEND_CLUSTER, 1)]);
    }

    #[test]
    fn grpc_invalid_share_gets_503_for_unavailable() {
        let r = route_action(forward(&[wb(Some("a"), 3), wb(None, 1)], 503));
        assert_eq!(r.cluster_not_found_response_code, 0, "SERVICE_UNAVAILABLE");
        assert_eq!(forward(&[wb(None, 1)], 503), direct_response(503));
    }

    #[test]
    fn duplicates_merge_and_zero_weights_drop() {
        let r = route_action(forward(
            &[wb(Some("a"), 1), wb(Some("b"), 0), wb(Some("a"), 2), wb(Some("c"), 1)],
            500,
        ));
        let entries = weighted(&r);
        assert_eq!(entries, vec![("a", 3), ("c", 1)]);
    }

    #[test]
    fn no_reachable_backend_is_a_direct_500() {
        for backends in [vec![], vec![wb(Some("a"), 0), wb(None, 0)], vec![wb(None, 5)]] {
            assert_eq!(forward(&backends, 500), direct_response(500), "{backends:?}");
        }
    }
}
