//! RDS: one `RouteConfiguration` per `ir::RouteConfig` (an HTTP port, or one HTTPS filter chain). Owns
//! path matching and the forward / direct-response actions, including the HTTP 500 share of invalid
//! backendRefs that the Gateway API requires.

use super::names;
use super::pb::{protobuf, route};
use crate::ir;

/// Gateway API: requests to an invalid backendRef (and rules without any valid one) get HTTP 500.
const INVALID_BACKEND_STATUS: u32 = 500;

pub(super) fn build(rc: &ir::RouteConfig) -> route::RouteConfiguration {
    route::RouteConfiguration {
        name: rc.name.clone(),
        virtual_hosts: rc.virtual_hosts.iter().map(virtual_host).collect(),
        // Weighted entries name `names::INVALID_BACKEND_CLUSTER` on purpose, which never exists. Under RDS
        // false is already the default; spelled out so the config also holds when inlined (validation).
        validate_clusters: Some(protobuf::BoolValue { value: false }),
        ..Default::default()
    }
}

fn virtual_host(vh: &ir::VirtualHost) -> route::VirtualHost {
    route::VirtualHost {
        name: vh.name.clone(),
        domains: vh.domains.clone(),
        routes: vh.routes.iter().map(route_entry).collect(),
        ..Default::default()
    }
}

fn route_entry(r: &ir::Route) -> route::Route {
    route::Route {
        name: r.name.clone(),
        r#match: Some(route::RouteMatch {
            path_specifier: Some(path_specifier(&r.path)),
            ..Default::default()
        }),
        action: Some(action(&r.action)),
        ..Default::default()
    }
}

fn path_specifier(path: &ir::PathMatch) -> route::route_match::PathSpecifier {
    use route::route_match::PathSpecifier;
    match path {
        ir::PathMatch::Exact(p) => PathSpecifier::Path(p.clone()),
        ir::PathMatch::Prefix(p) => {
            // `path_separated_prefix` is element-wise (`/abc` matches `/abc`, `/abc/`, `/abc/x`, not
            // `/abcd`) but must not end in `/` (pattern `^[^?#]+[^?#/]$`). A trailing slash adds nothing
            // element-wise (Gateway API: `/abc/` ≡ `/abc`), so it is trimmed; what is left of `/` (or
            // `//`) is every path, which is the plain prefix `/`.
            let trimmed = p.trim_end_matches('/');
            if trimmed.is_empty() {
                PathSpecifier::Prefix("/".to_string())
            } else {
                PathSpecifier::PathSeparatedPrefix(trimmed.to_string())
            }
        }
    }
}

fn action(a: &ir::RouteAction) -> route::route::Action {
    match a {
        ir::RouteAction::DirectResponse { status } => direct_response(*status),
        ir::RouteAction::Forward(backends) => forward(backends),
    }
}

fn direct_response(status: u32) -> route::route::Action {
    route::route::Action::DirectResponse(route::DirectResponseAction {
        status,
        ..Default::default()
    })
}

fn forward(backends: &[ir::WeightedBackend]) -> route::route::Action {
    use route::route_action::{ClusterNotFoundResponseCode, ClusterSpecifier};
    // Envoy requires a positive total and gains nothing from weight-0 entries, so they are dropped; the
    // same backend listed twice is merged so each cluster appears once.
    let mut shares: Vec<(Option<&str>, u32)> = Vec::new();
    for b in backends.iter().filter(|b| b.weight > 0) {
        let cluster = b.cluster.as_deref();
        match shares.iter_mut().find(|(c, _)| *c == cluster) {
            Some((_, weight)) => *weight = weight.saturating_add(b.weight),
            None => shares.push((cluster, b.weight)),
        }
    }
    // No traffic can reach a valid backend (nothing left, or only invalid shares): a fixed 500.
    if shares.iter().all(|(c, _)| c.is_none()) {
        return direct_response(INVALID_BACKEND_STATUS);
    }
    let specifier = match shares.as_slice() {
        [(Some(cluster), _)] => ClusterSpecifier::Cluster(cluster.to_string()),
        _ => ClusterSpecifier::WeightedClusters(route::WeightedCluster {
            clusters: shares
                .iter()
                .map(|(cluster, weight)| route::weighted_cluster::ClusterWeight {
                    name: cluster.unwrap_or(names::INVALID_BACKEND_CLUSTER).to_string(),
                    weight: Some(protobuf::UInt32Value { value: *weight }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    };
    let has_invalid_share = shares.iter().any(|(c, _)| c.is_none());
    route::route::Action::Route(route::RouteAction {
        cluster_specifier: Some(specifier),
        // The invalid share names a cluster that never exists; this turns Envoy's default 503 for a
        // missing cluster into the 500 the Gateway API requires.
        cluster_not_found_response_code: if has_invalid_share {
            ClusterNotFoundResponseCode::InternalServerError as i32
        } else {
            ClusterNotFoundResponseCode::ServiceUnavailable as i32
        },
        ..Default::default()
    })
}

/// One cluster reference of a built route configuration, with where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClusterRef<'a> {
    pub vhost: &'a str,
    pub route: &'a str,
    pub cluster: &'a str,
}

/// Every cluster a route configuration can send traffic to (`route.cluster` and weighted entries), in
/// configuration order, including `names::INVALID_BACKEND_CLUSTER`.
pub(crate) fn referenced_clusters(rc: &route::RouteConfiguration) -> Vec<ClusterRef<'_>> {
    use route::route_action::ClusterSpecifier;
    let mut out = Vec::new();
    for vh in &rc.virtual_hosts {
        for r in &vh.routes {
            let Some(route::route::Action::Route(action)) = &r.action else {
                continue;
            };
            let names: Vec<&str> = match &action.cluster_specifier {
                Some(ClusterSpecifier::Cluster(c)) => vec![c],
                Some(ClusterSpecifier::WeightedClusters(w)) => w.clusters.iter().map(|c| c.name.as_str()).collect(),
                _ => vec![],
            };
            out.extend(names.into_iter().map(|cluster| ClusterRef {
                vhost: &vh.name,
                route: &r.name,
                cluster,
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use route::route_match::PathSpecifier;

    fn wb(cluster: Option<&str>, weight: u32) -> ir::WeightedBackend {
        ir::WeightedBackend {
            cluster: cluster.map(str::to_string),
            weight,
        }
    }

    fn route_action(a: route::route::Action) -> route::RouteAction {
        match a {
            route::route::Action::Route(r) => r,
            other => panic!("expected a route action, got {other:?}"),
        }
    }

    #[test]
    fn prefixes_are_element_wise_without_trailing_slash() {
        let p = |s: &str| path_specifier(&ir::PathMatch::Prefix(s.to_string()));
        assert_eq!(p("/"), PathSpecifier::Prefix("/".into()));
        assert_eq!(p("//"), PathSpecifier::Prefix("/".into()));
        assert_eq!(p("/abc"), PathSpecifier::PathSeparatedPrefix("/abc".into()));
        assert_eq!(p("/abc/"), PathSpecifier::PathSeparatedPrefix("/abc".into()));
        assert_eq!(
            path_specifier(&ir::PathMatch::Exact("/abc/".into())),
            PathSpecifier::Path("/abc/".into()),
            "exact paths are taken verbatim"
        );
    }

    #[test]
    fn single_backend_is_a_plain_cluster() {
        let r = route_action(forward(&[wb(Some("a"), 1), wb(Some("b"), 0)]));
        assert_eq!(
            r.cluster_specifier,
            Some(route::route_action::ClusterSpecifier::Cluster("a".into()))
        );
    }

    #[test]
    fn invalid_share_gets_500_from_a_missing_cluster() {
        let r = route_action(forward(&[wb(Some("a"), 3), wb(None, 1)]));
        assert_eq!(r.cluster_not_found_response_code, 2, "INTERNAL_SERVER_ERROR");
        let Some(route::route_action::ClusterSpecifier::WeightedClusters(w)) = r.cluster_specifier else {
            panic!("weighted expected")
        };
        let entries: Vec<_> = w
            .clusters
            .iter()
            .map(|c| (c.name.as_str(), c.weight.unwrap().value))
            .collect();
        assert_eq!(entries, vec![("a", 3), (names::INVALID_BACKEND_CLUSTER, 1)]);
    }

    #[test]
    fn duplicates_merge_and_zero_weights_drop() {
        let r = route_action(forward(&[
            wb(Some("a"), 1),
            wb(Some("b"), 0),
            wb(Some("a"), 2),
            wb(Some("c"), 1),
        ]));
        let Some(route::route_action::ClusterSpecifier::WeightedClusters(w)) = r.cluster_specifier else {
            panic!("weighted expected")
        };
        let entries: Vec<_> = w
            .clusters
            .iter()
            .map(|c| (c.name.as_str(), c.weight.unwrap().value))
            .collect();
        assert_eq!(entries, vec![("a", 3), ("c", 1)]);
    }

    #[test]
    fn no_reachable_backend_is_a_direct_500() {
        for backends in [vec![], vec![wb(Some("a"), 0), wb(None, 0)], vec![wb(None, 5)]] {
            assert_eq!(forward(&backends), direct_response(500), "{backends:?}");
        }
    }
}
