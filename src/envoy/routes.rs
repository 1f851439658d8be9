//! RDS: one `RouteConfiguration` per `ir::RouteConfig` (an HTTP port, or one HTTPS filter chain). Owns
//! request matching (in `matching`), rule filters (in `filters`: header changes, URL rewrite, redirect,
//! per-backend headers on weighted clusters), mirrors, timeouts, retries, CORS and rule names (in
//! `policy`) and the forward / direct-response actions, including the HTTP 500
//! share of invalid backendRefs that the Gateway API requires, and the authority guard of routes to a
//! dynamic forward proxy.

mod filters;
mod matching;
mod policy;

use std::collections::{BTreeMap, HashMap};

use super::pb::{ext, protobuf, rbac, rbac_filter, route};
use crate::ir;
use crate::ir::names;

/// Gateway API: requests to an invalid backendRef (and rules without any valid one) get HTTP 500.
const INVALID_BACKEND_STATUS: u32 = 500;
/// GRPCRoute: the same failures get 503, which Envoy answers a gRPC client as UNAVAILABLE.
const GRPC_INVALID_BACKEND_STATUS: u32 = 503;

/// RBAC policy (in the per-route config) denying authorities that match a guardrail regex; Envoy names
/// it in the response details of a 403 (`rbac_access_denied_matched_policy[destination-guardrails]`).
const GUARDRAILS_POLICY: &str = "destination-guardrails";
/// RBAC policy denying authorities outside the operator's hostname allow-list.
const ALLOW_LIST_POLICY: &str = "hostname-not-allowed";

/// Where a route configuration is served: a redirect without a port goes to the listener's port.
#[derive(Debug, Clone, Copy)]
pub(super) struct Listening {
    pub port: u16,
    pub https: bool,
}

/// `clusters` (the Gateway's, by name) tells which routes forward to a dynamic forward proxy.
pub(super) fn build(
    rc: &ir::RouteConfig,
    clusters: &BTreeMap<String, ir::Cluster>,
    at: Listening,
) -> route::RouteConfiguration {
    route::RouteConfiguration {
        name: rc.name.clone(),
        virtual_hosts: rc
            .virtual_hosts
            .iter()
            .map(|vh| virtual_host(vh, clusters, at))
            .collect(),
        // Weighted entries name `names::INVALID_BACKEND_CLUSTER` on purpose, which never exists. Under RDS
        // false is already the default; spelled out so the config also holds when inlined (validation).
        validate_clusters: Some(protobuf::BoolValue { value: false }),
        ..Default::default()
    }
}

fn virtual_host(vh: &ir::VirtualHost, clusters: &BTreeMap<String, ir::Cluster>, at: Listening) -> route::VirtualHost {
    route::VirtualHost {
        name: vh.name.clone(),
        domains: vh.domains.clone(),
        routes: vh.routes.iter().map(|r| route_entry(r, clusters, at)).collect(),
        ..Default::default()
    }
}

fn route_entry(r: &ir::Route, clusters: &BTreeMap<String, ir::Cluster>, at: Listening) -> route::Route {
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
    let guard =
        authority_guard(&action, clusters).map(|g| (ext::RBAC_FILTER.to_string(), envoy_types::util::pack_any(g)));
    let cors = r.filters.cors.as_ref().map(policy::cors);
    let mut out = route::Route {
        name: r.name.clone(),
        r#match: Some(matching::route_match(r)),
        action: Some(action),
        typed_per_filter_config: guard.into_iter().chain(cors).collect(),
        metadata: policy::rule_metadata(&r.filters),
        ..Default::default()
    };
    filters::apply_headers(&mut out, &r.filters);
    out
}

/// A dynamic forward proxy connects wherever the request's authority says, so a route forwarding to one
/// (after weight-0 shares are dropped) carries the destination guardrails as RBAC rules on the authority;
/// the RBAC filter that reads them runs before the DFP filter (`listeners`). Per route, not in the
/// listener-wide filter config: ordinary routes on the same listener must keep answering requests that
/// name the Gateway by IP (`Host: 10.0.0.5`) or by any hostname. Several DFP clusters on one route (a
/// weighted split, or an aggregate's members) pool their rules: each request may reach any of them.
fn authority_guard(
    action: &route::route::Action,
    clusters: &BTreeMap<String, ir::Cluster>,
) -> Option<rbac_filter::RbacPerRoute> {
    let mut dfp = false;
    let mut deny: Vec<&str> = Vec::new();
    let mut allow_lists: Vec<&[String]> = Vec::new();
    let reached = action_clusters(action)
        .into_iter()
        .flat_map(|name| match clusters.get(name).map(|c| &c.discovery) {
            Some(ir::Discovery::Aggregate { clusters: members }) => members.iter().map(String::as_str).collect(),
            _ => vec![name],
        });
    for name in reached {
        let Some(ir::Discovery::DynamicForwardProxy {
            deny_authorities,
            allow_authorities,
            ..
        }) = clusters.get(name).map(|c| &c.discovery)
        else {
            continue;
        };
        dfp = true;
        for re in deny_authorities {
            if !deny.contains(&re.as_str()) {
                deny.push(re);
            }
        }
        if let Some(list) = allow_authorities
            && !allow_lists.contains(&list.as_slice())
        {
            allow_lists.push(list);
        }
    }
    if !dfp {
        return None;
    }
    let mut policies = HashMap::new();
    if !deny.is_empty() {
        policies.insert(
            GUARDRAILS_POLICY.to_string(),
            anyone(deny.into_iter().map(authority_matches).collect()),
        );
    }
    for (i, list) in allow_lists.into_iter().enumerate() {
        use rbac::permission::{Rule, Set};
        // Denied unless some entry matches; a missing authority matches none. An empty list allows nothing.
        let outside = if list.is_empty() {
            Rule::Any(true)
        } else {
            let not = |re: &String| rbac::Permission {
                rule: Some(Rule::NotRule(Box::new(authority_matches(re)))),
            };
            Rule::AndRules(Set {
                rules: list.iter().map(not).collect(),
            })
        };
        let name = if i == 0 {
            ALLOW_LIST_POLICY.to_string()
        } else {
            format!("{ALLOW_LIST_POLICY}-{i}")
        };
        policies.insert(name, anyone(vec![rbac::Permission { rule: Some(outside) }]));
    }
    let rules = rbac::Rbac {
        action: rbac::rbac::Action::Deny as i32,
        policies,
        ..Default::default()
    };
    Some(rbac_filter::RbacPerRoute {
        rbac: Some(rbac_filter::Rbac {
            rules: Some(rules),
            ..Default::default()
        }),
    })
}

/// An RBAC policy applying `permissions` to every client.
fn anyone(permissions: Vec<rbac::Permission>) -> rbac::Policy {
    let any = rbac::Principal {
        identifier: Some(rbac::principal::Identifier::Any(true)),
    };
    rbac::Policy {
        permissions,
        principals: vec![any],
        ..Default::default()
    }
}

/// The request's authority (HTTP/1 `Host`) fully matches the RE2 `regex`.
fn authority_matches(regex: &str) -> rbac::Permission {
    use super::pb::matcher::{RegexMatcher, StringMatcher, string_matcher::MatchPattern};
    let header = route::HeaderMatcher {
        name: ":authority".to_string(),
        header_match_specifier: Some(route::header_matcher::HeaderMatchSpecifier::StringMatch(
            StringMatcher {
                match_pattern: Some(MatchPattern::SafeRegex(RegexMatcher {
                    regex: regex.to_string(),
                    ..Default::default()
                })),
                ..Default::default()
            },
        )),
        ..Default::default()
    };
    rbac::Permission {
        rule: Some(rbac::permission::Rule::Header(header)),
    }
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
    let mut out = Vec::new();
    for vh in &rc.virtual_hosts {
        for r in &vh.routes {
            let Some(action) = &r.action else { continue };
            out.extend(action_clusters(action).into_iter().map(|cluster| ClusterRef {
                vhost: &vh.name,
                route: &r.name,
                cluster,
            }));
        }
    }
    out
}

/// Every route of a route configuration, with its virtual host.
pub(crate) fn all_routes(rc: &route::RouteConfiguration) -> impl Iterator<Item = (&route::VirtualHost, &route::Route)> {
    rc.virtual_hosts
        .iter()
        .flat_map(|vh| vh.routes.iter().map(move |r| (vh, r)))
}

/// Whether a built route carries the authority guard (so its connection manager needs the RBAC filter).
pub(crate) fn has_authority_guard(r: &route::Route) -> bool {
    r.typed_per_filter_config.contains_key(ext::RBAC_FILTER)
}

/// Whether a built route carries a CORS policy (so its connection manager needs the CORS filter).
pub(crate) fn has_cors_policy(r: &route::Route) -> bool {
    r.typed_per_filter_config.contains_key(ext::CORS_FILTER)
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
            cluster: cluster.map(str::to_string),
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
