//! HTTP features that live in two places at once: a filter in the connection manager's chain and
//! per-route configuration (`Route.typed_per_filter_config`, or a cluster the route reaches). Each feature
//! has one file owning both halves — [`cors`], [`authority_guard`] (RBAC on the authority of requests to a
//! dynamic forward proxy), [`dfp`] (the dynamic forward proxy's DNS cache) and [`session`] (session
//! persistence) — the shape of Envoy Gateway's `httpfilters.go` plus one file per filter.
//!
//! The route builder reports what each route used as a [`Used`]; the listener builder asks
//! [`http_filters`] for the chain those facts call for. No one reads the built protos back to find out.
//! A filter sits only where a route of its route configuration needs it: on other traffic it would be
//! dead weight on every request (and an empty RBAC filter reads as "no enforcement", which is what the
//! per-route guard relies on).

pub(super) mod authority_guard;
pub(super) mod cors;
pub(super) mod dfp;
pub(super) mod session;

use super::pb::{dfp_common, ext, hcm, router};

/// What the routes of one route configuration use, as far as the connection manager must know.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Used {
    /// A route carries a CORS policy.
    pub cors: bool,
    /// A route carries the authority guard.
    pub authority_guard: bool,
    /// A route keeps sessions (GEP-1619).
    pub session: bool,
    /// A route reaches a dynamic-forward-proxy cluster; the DNS cache of the first one (in configuration
    /// order) is the one the filter fills. Boxed: every encoded route and virtual host keeps its `Used`,
    /// and inline this rarely-set config made each of them 400 bytes larger.
    pub dfp: Option<Box<dfp_common::DnsCacheConfig>>,
}

impl Used {
    /// Adds what another route (or route configuration) uses; the first DNS cache seen stays.
    pub fn merge(&mut self, other: Used) {
        self.cors |= other.cors;
        self.authority_guard |= other.authority_guard;
        self.session |= other.session;
        if self.dfp.is_none() {
            self.dfp = other.dfp;
        }
    }
}

/// The connection manager's HTTP filters, in the order they must run:
/// - CORS first: a preflight is answered (and an actual request's response decorated) by the proxy,
///   whatever later filters decide;
/// - the authority guard (RBAC) before the dynamic forward proxy, so a refused name is never resolved;
/// - the dynamic forward proxy, which resolves the request's host into the cache its cluster reads;
/// - the stateful session, which reads the session's endpoint for the router's load balancer and
///   writes the token into the answer;
/// - the router, always last.
pub(super) fn http_filters(used: &Used) -> Vec<hcm::HttpFilter> {
    let mut filters = Vec::new();
    if used.cors {
        filters.push(cors::http_filter());
    }
    if used.authority_guard {
        filters.push(authority_guard::http_filter());
    }
    if let Some(cache) = &used.dfp {
        filters.push(dfp::http_filter(cache.as_ref().clone()));
    }
    if used.session {
        filters.push(session::http_filter());
    }
    filters.push(http_filter(ext::ROUTER, router::Router::default()));
    filters
}

pub(super) fn http_filter<M: prost::Message + prost::Name>(name: &str, config: M) -> hcm::HttpFilter {
    hcm::HttpFilter {
        name: name.to_string(),
        config_type: Some(hcm::http_filter::ConfigType::TypedConfig(envoy_types::util::pack_any(
            config,
        ))),
        ..Default::default()
    }
}
