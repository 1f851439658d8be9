//! What a proxyless gRPC client (grpcio, grpc-go, grpc-java, tonic-xds) is served: per target
//! `xds:///HOST:PORT`, an API listener named exactly `HOST:PORT` whose connection manager takes its
//! routes from RDS over ADS and ends in the router (gRFC A27, A39), a route configuration of that same
//! name with one virtual host for the target (A28), and the clusters and load assignments its routes
//! reach ([`clusters`]).
//!
//! A gRPC client honours a subset of what Envoy does. Whatever a route asks beyond it (header changes,
//! mirrors, rewrites, CORS, session persistence, retries, timeouts), the route is still served with its
//! match, so the call cannot fall through to a later route, but it forwards to [`UNAVAILABLE`], a
//! cluster with no endpoints: the rule fails closed instead of running without what its author wrote.
//! The refusal is reported, never silently dropped.

pub mod clusters;
pub mod tls;

use super::ads;
use super::pb::{ext, hcm, listener, matcher, route, router};
use crate::ir;
use route::route_action::ClusterSpecifier;

/// The listener and route configuration name of target `xds:///host:port`.
pub fn target(host: &str, port: u16) -> String {
    crate::ir::names::proxyless_target(host, port)
}

/// The API listener of a target: an HTTP connection manager whose routes come over ADS (RDS), ending in
/// the router, the only terminal filter gRPC knows.
pub fn listener(name: &str) -> listener::Listener {
    let manager = hcm::HttpConnectionManager {
        // Ignored by gRPC; Envoy's schema requires one, and the goldens are validated by Envoy.
        stat_prefix: "proxyless".to_string(),
        route_specifier: Some(hcm::http_connection_manager::RouteSpecifier::Rds(hcm::Rds {
            config_source: Some(ads()),
            route_config_name: name.to_string(),
        })),
        http_filters: vec![hcm::HttpFilter {
            name: ext::ROUTER.to_string(),
            config_type: Some(hcm::http_filter::ConfigType::TypedConfig(envoy_types::util::pack_any(
                router::Router::default(),
            ))),
            ..Default::default()
        }],
        ..Default::default()
    };
    listener::Listener {
        name: name.to_string(),
        api_listener: Some(listener::ApiListener {
            api_listener: Some(envoy_types::util::pack_any(manager)),
        }),
        ..Default::default()
    }
}

/// A target's routes as gRPC runs them, what each refused and the clusters they reach.
#[derive(Debug, Default)]
pub struct Routes {
    pub routes: Vec<route::Route>,
    /// `(route name, why)` for every route served as UNAVAILABLE.
    pub refused: Vec<(String, String)>,
    /// Every cluster the routes name, in order, each once.
    pub clusters: Vec<String>,
}

/// The route configuration of target `name` (`host:port`), one virtual host matching the target's
/// authority with and without its port.
pub fn route_config(name: &str, host: &str, routes: Vec<route::Route>) -> route::RouteConfiguration {
    route::RouteConfiguration {
        name: name.to_string(),
        virtual_hosts: vec![route::VirtualHost {
            name: name.to_string(),
            domains: vec![host.to_string(), name.to_string()],
            routes,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Converts a virtual host's routes, in order, for gRPC. `offered`: whether a cluster can be given to
/// gRPC clients ([`clusters::refusal`]); a share of one that cannot goes to [`UNAVAILABLE`] instead.
pub fn routes<'a>(entries: impl IntoIterator<Item = &'a ir::Route>, offered: &dyn Fn(&str) -> bool) -> Routes {
    let mut out = Routes::default();
    for r in entries {
        let action = match unsupported(r) {
            Some(why) => {
                out.refused.push((r.name.clone(), why));
                out.clusters.push(UNAVAILABLE.to_string());
                forward(ClusterSpecifier::Cluster(UNAVAILABLE.to_string()))
            }
            None => action(r, offered, &mut out.clusters),
        };
        out.routes.push(route::Route {
            name: r.name.clone(),
            r#match: Some(route_match(r)),
            action: Some(action),
            ..Default::default()
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    out.clusters.retain(|c| seen.insert(c.clone()));
    out
}

/// What the route asks that a gRPC client would not do, if anything.
pub fn unsupported(r: &ir::Route) -> Option<String> {
    let f = &r.filters;
    let mut what = Vec::new();
    let mut note = |cond: bool, name: &str| {
        if cond {
            what.push(name.to_string());
        }
    };
    note(!f.request_headers.is_empty(), "RequestHeaderModifier");
    note(!f.response_headers.is_empty(), "ResponseHeaderModifier");
    note(f.rewrite.is_some(), "URLRewrite");
    note(!f.mirrors.is_empty(), "RequestMirror");
    note(f.cors.is_some(), "CORS");
    note(f.timeouts != ir::Timeouts::default(), "timeouts");
    note(f.retry.is_some(), "retry");
    note(f.session.is_some(), "sessionPersistence");
    note(!r.query_params.is_empty(), "query parameter matches");
    note(r.method.is_some(), "method matches");
    if let ir::RouteAction::Forward(shares) = &r.action {
        note(shares.iter().any(|s| !s.filters.is_empty()), "backendRef filters");
    }
    note(matches!(r.action, ir::RouteAction::Redirect(_)), "RequestRedirect");
    (!what.is_empty()).then(|| {
        format!(
            "{} not applied by gRPC clients; proxyless calls matching this rule fail with UNAVAILABLE",
            what.join(", ")
        )
    })
}

/// Where every call gRPC must fail goes: an invalid backendRef's share, a rule it cannot run, a Backend
/// it cannot be given. The same name Envoy answers 500 for, which never exists for Envoy; for gRPC
/// clients it is a cluster with no endpoints ([`clusters::unavailable`]), so such calls fail at once
/// with UNAVAILABLE. Not a `direct_response`: gRPC C-core fails the call on one, but tonic-xds rejects
/// the whole route configuration ("only route action is supported for client routing"). Not a missing
/// cluster either: gRPC waits 15 s for a resource no response carries before it fails.
pub const UNAVAILABLE: &str = crate::ir::names::INVALID_BACKEND_CLUSTER;

fn forward(specifier: route::route_action::ClusterSpecifier) -> route::route::Action {
    route::route::Action::Route(route::RouteAction {
        cluster_specifier: Some(specifier),
        ..Default::default()
    })
}

fn action(r: &ir::Route, offered: &dyn Fn(&str) -> bool, clusters: &mut Vec<String>) -> route::route::Action {
    let shares: Vec<(String, u32)> = match &r.action {
        ir::RouteAction::Forward(shares) => shares
            .iter()
            .filter(|s| s.weight > 0)
            .map(|s| match &s.cluster {
                Some(c) if offered(c) => (c.to_string(), s.weight),
                _ => (UNAVAILABLE.to_string(), s.weight),
            })
            .collect(),
        _ => Vec::new(),
    };
    let specifier = match shares.as_slice() {
        [] => ClusterSpecifier::Cluster(UNAVAILABLE.to_string()),
        [(one, _)] => ClusterSpecifier::Cluster(one.clone()),
        many => ClusterSpecifier::WeightedClusters(route::WeightedCluster {
            clusters: many
                .iter()
                .map(|(name, weight)| route::weighted_cluster::ClusterWeight {
                    name: name.clone(),
                    weight: Some(super::u32_value(*weight)),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    };
    match &specifier {
        ClusterSpecifier::Cluster(c) => clusters.push(c.clone()),
        ClusterSpecifier::WeightedClusters(w) => clusters.extend(w.clusters.iter().map(|c| c.name.clone())),
        _ => {}
    }
    forward(specifier)
}

/// The path and header conditions: gRPC knows `prefix`, `path` and `safe_regex`, not Envoy's
/// element-wise prefix; a gRPC path is always `/service/method`, so the prefix `/S` (every method of
/// service `S`) is the plain prefix `/S/`.
fn route_match(r: &ir::Route) -> route::RouteMatch {
    use route::header_matcher::HeaderMatchSpecifier;
    use route::route_match::PathSpecifier;
    let path = match &r.path {
        ir::PathMatch::Exact(p) => PathSpecifier::Path(p.clone()),
        ir::PathMatch::Prefix(p) => {
            let trimmed = p.trim_end_matches('/');
            PathSpecifier::Prefix(format!("{trimmed}/"))
        }
        ir::PathMatch::Regex(re) => PathSpecifier::SafeRegex(regex(re)),
    };
    route::RouteMatch {
        path_specifier: Some(path),
        headers: r
            .headers
            .iter()
            .map(|h| route::HeaderMatcher {
                name: h.name.clone(),
                header_match_specifier: Some(HeaderMatchSpecifier::StringMatch(string_match(&h.value))),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn string_match(v: &ir::ValueMatch) -> matcher::StringMatcher {
    use matcher::string_matcher::MatchPattern;
    matcher::StringMatcher {
        match_pattern: Some(match v {
            ir::ValueMatch::Exact(s) => MatchPattern::Exact(s.clone()),
            ir::ValueMatch::Regex(re) => MatchPattern::SafeRegex(regex(re)),
        }),
        ..Default::default()
    }
}

fn regex(re: &str) -> matcher::RegexMatcher {
    matcher::RegexMatcher {
        regex: re.to_string(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
