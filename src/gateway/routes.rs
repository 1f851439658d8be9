//! Route attachment (HTTPRoute and GRPCRoute, in their `spec` form) and rules → route entries per
//! listener.
//!
//! Attachment follows Gateway API: a parentRef selects listeners by `sectionName` and `port`; each
//! listener admits it by namespace (`allowedRoutes`) and kind; hostnames must intersect. The route is
//! accepted by a parent when at least one listener takes it. Its rules become route entries in
//! `gateway::rules`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::backends::{Backends, Reached};
use super::conditions::{Condition, RouteCondition, RouteReason, RouteType};
use super::hostnames;
use super::listeners::{AllowedNamespaces, ListenerInfo};
use super::rules::{Dropped, rules};
use super::selector;
use super::spec::{self, RouteKind, RouteOrder, RouteSpec};
use super::status::{ParentRef, RouteParentStatus};
use crate::api::consts::{GATEWAY_GROUP, KIND_GATEWAY};
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
    /// Tie-break among equal match precedence: (the route's place among all routes, rule, match).
    pub tie: (Arc<RouteOrder>, usize, usize),
}

/// Where attachment happens: the model, the Gateway being built, pier's controller name.
pub struct Scope<'a> {
    pub model: &'a Model,
    pub gateway: &'a ObjectKey,
    /// SDS name of the Gateway's valid backend client certificate, if any.
    pub client_cert: Option<&'a str>,
    pub controller: &'a str,
}

/// Where one route's rules put what they make: its entries and the clusters they send to.
#[derive(Default)]
pub struct Sink {
    pub entries: Vec<Entry>,
    pub targets: Vec<super::backends::Target>,
}

/// Per listener and route kind: the effective hostnames of every route accepted there so far, for the
/// rule that an HTTPRoute and a GRPCRoute never share a hostname on one listener. Kept by kind so a
/// route checks only the other kind's claims, not every route before it.
#[derive(Debug, Clone, Default)]
pub struct Claims(BTreeMap<(usize, RouteKind), Vec<Vec<String>>>);

impl Claims {
    pub fn new() -> Self {
        Self::default()
    }

    /// A route of `kind` was accepted on `listener` with `hosts`.
    pub fn claim(&mut self, listener: usize, kind: RouteKind, hosts: &[String]) {
        self.0.entry((listener, kind)).or_default().push(hosts.to_vec());
    }

    /// The other route kind that already serves one of `hosts` on `listener`, if any.
    fn conflict(&self, listener: usize, kind: RouteKind, hosts: &[String]) -> Option<RouteKind> {
        self.0
            .range((listener, RouteKind::Http)..=(listener, RouteKind::Grpc))
            .filter(|((_, k), _)| *k != kind)
            .find(|(_, claimed)| {
                claimed
                    .iter()
                    .any(|c| hosts.iter().any(|h| c.iter().any(|x| hostnames::overlap(h, x))))
            })
            .map(|((_, k), _)| *k)
    }
}

/// What attaching one route to one Gateway gives.
#[derive(Debug, Clone, Default)]
pub struct RouteResult {
    /// Status entries for the parentRefs that name this Gateway. Shared with the route's status, which
    /// is this list whenever one Gateway holds the route (`engine::statuses`).
    pub parents: Arc<[RouteParentStatus]>,
    pub reached: Reached,
    /// Shared with the listener's entries, which the engine keeps beside this result.
    pub entries: Vec<Arc<Entry>>,
    pub targets: Vec<super::backends::Target>,
    /// Per accepted parentRef, the listeners it attached to with the route's hostnames there: each counts
    /// in `attachedRoutes` and claims those hostnames against the other route kind.
    pub attached: Vec<(usize, Vec<String>)>,
}

impl RouteResult {
    /// Drops the spare capacity of its vectors. The engine keeps every route's result, and a vector
    /// grown by `push` holds room for four of these large elements where most routes have one: at
    /// 1,000 routes that spare room was 6 KiB a route (DHAT, `engine-memory 1000`).
    fn compact(&mut self) {
        self.entries.shrink_to_fit();
        self.targets.shrink_to_fit();
        self.attached.shrink_to_fit();
        self.reached.refs.shrink_to_fit();
        self.reached.parent_problems.shrink_to_fit();
        for t in &mut self.targets {
            super::tls::compact(&mut t.secrets);
            t.notes.shrink_to_fit();
        }
    }
}

/// Attaches a route to the scope's Gateway, given what earlier routes claimed on its listeners. Pure:
/// the result says everything the route changes.
pub fn attach(
    scope: &Scope<'_>,
    backends: &Backends<'_>,
    spec: &RouteSpec,
    listeners: &[ListenerInfo],
    claims: &Claims,
) -> RouteResult {
    let gw_key = scope.gateway;
    let mut out = RouteResult::default();
    let mut parents = Vec::new();
    let mut sink = Sink::default();
    for parent in &spec.parent_refs {
        if !names_gateway(parent, &spec.key.namespace, gw_key) {
            continue;
        }
        let (section, port) = (parent.section_name.as_deref(), parent.port);
        let (accepted, attached) = accept_on_listeners(scope, spec, listeners, claims, section, port);
        let mut conditions = if accepted.is_true() {
            let (conditions, reached) = attach_rules(scope, backends, spec, accepted, &attached, &mut sink);
            out.reached.refs.extend(reached.refs);
            out.reached.parent_problems.extend(reached.parent_problems);
            if conditions[0].is_true() {
                out.attached.extend(attached);
            }
            conditions
        } else {
            let not_evaluated = Condition::ok(
                RouteType::ResolvedRefs,
                RouteReason::ResolvedRefs,
                "References not evaluated: route not accepted",
                spec.generation(),
            );
            vec![accepted, not_evaluated]
        };
        conditions.shrink_to_fit();
        parents.push(RouteParentStatus {
            parent_ref: ParentRef::gateway(gw_key, section, port),
            controller_name: crate::model::Name::new(scope.controller),
            conditions,
        });
    }
    // Collected in place, this would keep the entries' allocation: `compact` gives it back.
    out.entries = sink.entries.into_iter().map(Arc::new).collect();
    out.targets = sink.targets;
    out.parents = parents.into();
    out.compact();
    out
}

/// The Gateways a route's parentRefs name (whether they exist or not), each once.
pub fn named_gateways(spec: &RouteSpec) -> std::collections::BTreeSet<ObjectKey> {
    let route_ns = &spec.key.namespace;
    spec.parent_refs
        .iter()
        .filter_map(|p| {
            let gw = ObjectKey::new(p.namespace.as_deref().unwrap_or(route_ns), &p.name);
            names_gateway(p, route_ns, &gw).then_some(gw)
        })
        .collect()
}

/// Does the parentRef name this Gateway (group and kind default to Gateway API's Gateway, the namespace
/// to the route's)?
fn names_gateway(parent: &spec::ParentRef, route_ns: &str, gw: &ObjectKey) -> bool {
    let group = parent.group.as_deref().unwrap_or(GATEWAY_GROUP);
    let kind = parent.kind.as_deref().unwrap_or(KIND_GATEWAY);
    let ns = parent.namespace.as_deref().unwrap_or(route_ns);
    group == GATEWAY_GROUP && kind == KIND_GATEWAY && ns == gw.namespace && parent.name == gw.name
}

/// The rules of a route some listeners took, and its conditions for this parent: `Accepted` (false if
/// every rule was dropped), `ResolvedRefs`, and `PartiallyInvalid` if some were.
fn attach_rules(
    scope: &Scope<'_>,
    backends: &Backends<'_>,
    spec: &RouteSpec,
    accepted: RouteCondition,
    attached: &[(usize, Vec<String>)],
    sink: &mut Sink,
) -> (Vec<RouteCondition>, Reached) {
    let g = spec.generation();
    let outcome = rules(scope, backends, spec, attached, sink);
    let mut conds = vec![accepted, outcome.resolved];
    match outcome.dropped {
        Some(Dropped::Every(msg)) => {
            conds[0] = Condition::fail(RouteType::Accepted, RouteReason::UnsupportedValue, msg, g);
        }
        Some(Dropped::Part(msg)) => conds.push(Condition::ok(
            RouteType::PartiallyInvalid,
            RouteReason::UnsupportedValue,
            msg,
            g,
        )),
        None => {}
    }
    (conds, outcome.reached)
}

/// Listeners of this parentRef that take the route, with the route's effective hostnames on each:
/// selected by `sectionName` and `port`, admitting the route's namespace and kind, sharing a hostname
/// with it, and not serving the other route kind on that hostname.
fn accept_on_listeners(
    scope: &Scope<'_>,
    route: &RouteSpec,
    listeners: &[ListenerInfo],
    claims: &Claims,
    section: Option<&str>,
    port: Option<i32>,
) -> (RouteCondition, Vec<(usize, Vec<String>)>) {
    let g = route.generation();
    let refuse = |reason, message: String| (Condition::fail(RouteType::Accepted, reason, message, g), Vec::new());
    if let Some(why) = parent_not_accepted(scope) {
        return refuse(RouteReason::NoMatchingParent, why);
    }
    let selected = selected_listeners(listeners, section, port);
    if selected.is_empty() {
        return refuse(RouteReason::NoMatchingParent, no_listener(section, port));
    }
    let route_ns = &route.key.namespace;
    let allowed: Vec<usize> = selected
        .iter()
        .copied()
        .filter(|&i| listeners[i].attachable)
        .filter(|&i| listeners[i].kinds.iter().any(|k| k == route.kind.name()))
        .filter(|&i| namespace_allowed(scope.model, &listeners[i].allowed, route_ns, &scope.gateway.namespace))
        .collect();
    if allowed.is_empty() {
        let msg = format!(
            "no listener of the parent admits {}s from namespace {route_ns:?}{}",
            route.kind.name(),
            undeclared_namespace_note(scope.model, listeners, &selected, route_ns)
        );
        return refuse(RouteReason::NotAllowedByListeners, msg);
    }
    let attached: Vec<(usize, Vec<String>)> = allowed
        .into_iter()
        .map(|i| {
            (
                i,
                hostnames::effective(listeners[i].hostname.as_deref(), &route.hostnames),
            )
        })
        .filter(|(_, h)| !h.is_empty())
        .collect();
    if attached.is_empty() {
        let msg = "none of the route's hostnames intersects a listener hostname".to_string();
        return refuse(RouteReason::NoMatchingListenerHostname, msg);
    }
    let (attached, conflicts) = without_kind_conflicts(route.kind, attached, listeners, claims);
    if attached.is_empty() {
        return refuse(RouteReason::HostnameConflict, conflicts.join("; "));
    }
    let ok = Condition::ok(RouteType::Accepted, RouteReason::Accepted, "Route accepted", g);
    (ok, attached)
}

/// Why the parent Gateway itself is not accepted, if it is not: then no listener admits anything, and
/// saying `NotAllowedByListeners` would send the route's owner after the wrong problem. Upstream has no
/// reason for "parent not accepted"; `NoMatchingParent` (no usable parent) is the nearest, and what
/// Istio reports in this case; the message names the Gateway's own problem.
fn parent_not_accepted(scope: &Scope<'_>) -> Option<String> {
    let gw = scope.model.gateways.get(scope.gateway)?;
    let r = super::gateways::refusal(gw).filter(|r| r.type_ == super::conditions::GatewayType::Accepted)?;
    Some(format!(
        "parent Gateway {} is not accepted ({}: {}), so none of its listeners admits routes",
        scope.gateway, r.reason, r.message
    ))
}

fn selected_listeners(listeners: &[ListenerInfo], section: Option<&str>, port: Option<i32>) -> Vec<usize> {
    (0..listeners.len())
        .filter(|&i| section.is_none_or(|s| listeners[i].name == s))
        .filter(|&i| port.is_none_or(|p| i32::from(listeners[i].port) == p))
        .collect()
}

fn no_listener(section: Option<&str>, port: Option<i32>) -> String {
    match (section, port) {
        (Some(s), Some(p)) => format!("no listener named {s:?} on port {p}"),
        (Some(s), None) => format!("no listener named {s:?}"),
        (None, Some(p)) => format!("no listener on port {p}"),
        (None, None) => "the Gateway has no listeners".into(),
    }
}

/// An HTTPRoute and a GRPCRoute must not share a hostname on a listener: the route attached first
/// (older, then namespace/name — the order routes arrive in) keeps it. The listeners left, and why the
/// others were left out.
fn without_kind_conflicts(
    kind: RouteKind,
    attached: Vec<(usize, Vec<String>)>,
    listeners: &[ListenerInfo],
    claims: &Claims,
) -> (Vec<(usize, Vec<String>)>, Vec<String>) {
    let mut conflicts = Vec::new();
    let kept = attached
        .into_iter()
        .filter(|(i, hosts)| {
            let other = claims.conflict(*i, kind, hosts);
            if let Some(k) = other {
                conflicts.push(format!(
                    "listener {:?} already serves a {} for these hostnames",
                    listeners[*i].name,
                    k.name()
                ));
            }
            other.is_none()
        })
        .collect();
    (kept, conflicts)
}

fn namespace_allowed(model: &Model, allowed: &AllowedNamespaces, route_ns: &str, gateway_ns: &str) -> bool {
    match allowed {
        AllowedNamespaces::All => true,
        AllowedNamespaces::Same => route_ns == gateway_ns,
        AllowedNamespaces::Selector(sel) => {
            // The API server labels every Namespace with its own name (and every namespaced object's
            // Namespace exists there). A directory need not declare the Namespace, or may omit the
            // label; a selector on it (upstream conformance uses them) must still match, so the label
            // is implied, and an undeclared Namespace has that label only.
            let mut labels = model
                .namespaces
                .get(&ObjectKey::cluster(route_ns))
                .and_then(|ns| ns.metadata.labels.clone())
                .unwrap_or_default();
            labels
                .entry(NAMESPACE_NAME_LABEL.to_string())
                .or_insert_with(|| route_ns.to_string());
            selector::matches(sel, &labels)
        }
    }
}

const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// When a namespace selector refused the route and its Namespace is not declared, the selector could
/// only see the implied name label: say so, since the fix is then to declare the Namespace.
fn undeclared_namespace_note(model: &Model, listeners: &[ListenerInfo], selected: &[usize], route_ns: &str) -> String {
    let by_selector = selected
        .iter()
        .any(|&i| matches!(listeners[i].allowed, AllowedNamespaces::Selector(_)));
    if !by_selector {
        return String::new();
    }
    if let Some(why) = model.unavailable(crate::model::Kind::Namespace) {
        return format!(
            " (Namespaces cannot be read ({why}), so the namespace selector saw only the implied label {NAMESPACE_NAME_LABEL}={route_ns})"
        );
    }
    if !model.namespaces.contains_key(&ObjectKey::cluster(route_ns)) {
        format!(
            " (no Namespace {route_ns:?} is declared, so the namespace selector saw only its implied label {NAMESPACE_NAME_LABEL}={route_ns}; declare the Namespace with the labels the selector expects)"
        )
    } else {
        String::new()
    }
}
