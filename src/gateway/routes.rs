//! HTTPRoute attachment and rules → route entries per listener.
//!
//! Attachment follows Gateway API: a parentRef selects listeners by `sectionName` and `port`; each
//! listener admits it by namespace (`allowedRoutes`) and kind; hostnames must intersect. The route is
//! accepted by a parent when at least one listener takes it. Its rules become route entries in
//! `gateway::rules`.

use gateway_api::apis::standard::httproutes::HttpRoute;
use std::collections::BTreeMap;

use super::backends::Backends;
use super::conditions::{Condition, RouteCondition, RouteReason, RouteType, Status};
use super::hostnames;
use super::listeners::{AllowedNamespaces, ListenerInfo};
use super::rules::{Rejection, rules};
use super::selector;
use super::status::{ParentRef, RouteParentStatus};
use crate::api::consts::{GATEWAY_GROUP, KIND_GATEWAY, KIND_GRPCROUTE, KIND_HTTPROUTE};
use crate::ir;
use crate::model::{Model, ObjectKey};

/// One route entry attached to one listener, before ordering into virtual hosts.
#[derive(Debug, Clone)]
pub struct Entry {
    pub listener: usize,
    /// Effective hostnames (`*` = any).
    pub hostnames: Vec<String>,
    pub route: ir::Route,
    /// GRPCRoute entries: characters of the matched service and method, which rank them instead of the
    /// HTTPRoute path criteria (`order::route_precedence`).
    pub grpc_rank: Option<(usize, usize)>,
    /// Tie-break among equal match precedence: (route age/ns/name order, rule, match).
    pub tie: (usize, usize, usize),
}

/// Where attachment happens: the model, the Gateway being built, pier's controller name.
pub struct Scope<'a> {
    pub model: &'a Model,
    pub gateway: &'a ObjectKey,
    /// SDS name of the Gateway's valid backend client certificate, if any.
    pub client_cert: Option<&'a str>,
    pub controller: &'a str,
}

/// What attaching routes produces for one Gateway.
#[derive(Default)]
pub struct Sink {
    pub entries: Vec<Entry>,
    pub targets: Vec<super::backends::Target>,
    /// Per listener: the kind and effective hostnames of every route accepted so far, for the rule that
    /// an HTTPRoute and a GRPCRoute never share a hostname on one listener.
    claims: BTreeMap<usize, Vec<(RouteKind, Vec<String>)>>,
}

/// The route kinds pier attaches. A GRPCRoute arrives in its HTTPRoute form (`gateway::grpc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    Http,
    Grpc,
}

impl RouteKind {
    pub fn name(self) -> &'static str {
        match self {
            RouteKind::Http => KIND_HTTPROUTE,
            RouteKind::Grpc => KIND_GRPCROUTE,
        }
    }

    /// Prefix of Envoy route names (`ir::names::route`).
    pub(super) fn prefix(self) -> &'static str {
        match self {
            RouteKind::Http => "httproute",
            RouteKind::Grpc => "grpcroute",
        }
    }
}

/// One route being attached; `order` is its rank in Gateway API precedence (oldest first, across
/// both kinds).
#[derive(Clone, Copy)]
pub struct RouteRef<'a> {
    pub key: &'a ObjectKey,
    pub kind: RouteKind,
    /// The route, or for a GRPCRoute its HTTPRoute form.
    pub route: &'a HttpRoute,
    /// A GRPCRoute's ranks and rule errors.
    pub grpc: Option<&'a super::grpc::GrpcInfo>,
    pub order: usize,
}

impl RouteRef<'_> {
    pub(super) fn generation(&self) -> i64 {
        self.route.metadata.generation.unwrap_or(0)
    }
}

/// Attaches a route to the scope's Gateway. Returns the status entries for the parentRefs that name
/// this Gateway; route entries and clusters go to `sink`.
pub fn attach(
    scope: &Scope<'_>,
    backends: &mut Backends<'_>,
    r: RouteRef<'_>,
    listeners: &mut [ListenerInfo],
    sink: &mut Sink,
) -> Vec<RouteParentStatus> {
    let g = r.generation();
    let gw_key = scope.gateway;
    let mut statuses = Vec::new();
    for parent in r.route.spec.parent_refs.iter().flatten() {
        let group = parent.group.as_deref().unwrap_or(GATEWAY_GROUP);
        let kind = parent.kind.as_deref().unwrap_or(KIND_GATEWAY);
        let ns = parent.namespace.as_deref().unwrap_or(&r.key.namespace);
        if group != GATEWAY_GROUP || kind != KIND_GATEWAY || ns != gw_key.namespace || parent.name != gw_key.name {
            continue;
        }
        let parent_ref = ParentRef::gateway(gw_key, parent.section_name.as_deref(), parent.port);
        let (accepted, attached) = accept_on_listeners(
            scope,
            r,
            listeners,
            &sink.claims,
            parent.section_name.as_deref(),
            parent.port,
        );
        let mut conds = vec![accepted.clone()];
        if accepted.status == Status::True {
            let (resolved, partial) = rules(scope, backends, r, &attached, sink);
            match partial {
                Some(Rejection::All(msg)) => {
                    conds[0] = Condition::fail(RouteType::Accepted, RouteReason::UnsupportedValue, msg, g);
                }
                Some(Rejection::Some(msg)) => {
                    conds.push(Condition::ok(
                        RouteType::PartiallyInvalid,
                        RouteReason::UnsupportedValue,
                        msg,
                        g,
                    ));
                }
                None => {}
            }
            if conds[0].status == Status::True {
                for (i, hosts) in &attached {
                    listeners[*i].attached_routes += 1;
                    sink.claims.entry(*i).or_default().push((r.kind, hosts.clone()));
                }
            }
            conds.insert(1, resolved);
        } else {
            conds.push(Condition::ok(
                RouteType::ResolvedRefs,
                RouteReason::ResolvedRefs,
                "References not evaluated: route not accepted",
                g,
            ));
        }
        statuses.push(RouteParentStatus {
            parent_ref,
            controller_name: scope.controller.to_string(),
            conditions: conds,
        });
    }
    statuses
}

/// Listeners of this parentRef that take the route, with the route's effective hostnames on each.
fn accept_on_listeners(
    scope: &Scope<'_>,
    r: RouteRef<'_>,
    listeners: &[ListenerInfo],
    claims: &BTreeMap<usize, Vec<(RouteKind, Vec<String>)>>,
    section: Option<&str>,
    port: Option<i32>,
) -> (RouteCondition, Vec<(usize, Vec<String>)>) {
    let g = r.generation();
    let selected: Vec<usize> = (0..listeners.len())
        .filter(|&i| section.is_none_or(|s| listeners[i].name == s))
        .filter(|&i| port.is_none_or(|p| i32::from(listeners[i].port) == p))
        .collect();
    if selected.is_empty() {
        let what = match (section, port) {
            (Some(s), Some(p)) => format!("no listener named {s:?} on port {p}"),
            (Some(s), None) => format!("no listener named {s:?}"),
            (None, Some(p)) => format!("no listener on port {p}"),
            (None, None) => "the Gateway has no listeners".into(),
        };
        return (
            Condition::fail(RouteType::Accepted, RouteReason::NoMatchingParent, what, g),
            Vec::new(),
        );
    }
    let route_ns = &r.key.namespace;
    let allowed: Vec<usize> = selected
        .into_iter()
        .filter(|&i| listeners[i].attachable)
        .filter(|&i| listeners[i].kinds.iter().any(|k| k == r.kind.name()))
        .filter(|&i| namespace_allowed(scope.model, &listeners[i].allowed, route_ns, &scope.gateway.namespace))
        .collect();
    if allowed.is_empty() {
        return (
            Condition::fail(
                RouteType::Accepted,
                RouteReason::NotAllowedByListeners,
                format!(
                    "no listener of the parent admits {}s from namespace {route_ns:?}",
                    r.kind.name()
                ),
                g,
            ),
            Vec::new(),
        );
    }
    let route_hosts = r.route.spec.hostnames.clone().unwrap_or_default();
    let attached: Vec<(usize, Vec<String>)> = allowed
        .into_iter()
        .map(|i| (i, hostnames::effective(listeners[i].hostname.as_deref(), &route_hosts)))
        .filter(|(_, h)| !h.is_empty())
        .collect();
    if attached.is_empty() {
        return (
            Condition::fail(
                RouteType::Accepted,
                RouteReason::NoMatchingListenerHostname,
                "none of the route's hostnames intersects a listener hostname",
                g,
            ),
            Vec::new(),
        );
    }
    // An HTTPRoute and a GRPCRoute must not share a hostname on a listener: the route attached first
    // (older, then namespace/name — the order routes arrive in) keeps it.
    let mut conflicts = Vec::new();
    let attached: Vec<(usize, Vec<String>)> = attached
        .into_iter()
        .filter(|(i, hosts)| {
            let other = claims.get(i).into_iter().flatten().find(|(kind, claimed)| {
                *kind != r.kind && hosts.iter().any(|h| claimed.iter().any(|c| hostnames::overlap(h, c)))
            });
            if let Some((kind, _)) = other {
                conflicts.push(format!(
                    "listener {:?} already serves a {} for these hostnames",
                    listeners[*i].name,
                    kind.name()
                ));
            }
            other.is_none()
        })
        .collect();
    if attached.is_empty() {
        return (
            Condition::fail(
                RouteType::Accepted,
                RouteReason::HostnameConflict,
                conflicts.join("; "),
                g,
            ),
            Vec::new(),
        );
    }
    (
        Condition::ok(RouteType::Accepted, RouteReason::Accepted, "Route accepted", g),
        attached,
    )
}

fn namespace_allowed(model: &Model, allowed: &AllowedNamespaces, route_ns: &str, gateway_ns: &str) -> bool {
    match allowed {
        AllowedNamespaces::All => true,
        AllowedNamespaces::Same => route_ns == gateway_ns,
        AllowedNamespaces::Selector(sel) => model.namespaces.get(&ObjectKey::cluster(route_ns)).is_some_and(|ns| {
            // Kubernetes labels every Namespace with its own name; a Namespace written in a file may
            // omit the label, and selectors on it (upstream conformance uses them) must still match.
            let mut labels = ns.metadata.labels.clone().unwrap_or_default();
            labels
                .entry("kubernetes.io/metadata.name".to_string())
                .or_insert_with(|| route_ns.to_string());
            selector::matches(sel, &labels)
        }),
    }
}
