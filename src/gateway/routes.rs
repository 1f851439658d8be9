//! HTTPRoute attachment and rules → route entries per listener.
//!
//! Attachment follows Gateway API: a parentRef selects listeners by `sectionName` and `port`; each
//! listener admits it by namespace (`allowedRoutes`) and kind; hostnames must intersect. The route is
//! accepted by a parent when at least one listener takes it. Rules use matches (path `Exact`,
//! `PathPrefix`, `RegularExpression`; headers and query parameters, `Exact` or `RegularExpression`;
//! method), weighted backendRefs and the filters of `filters`; a rule that needs a feature not built yet
//! (other filters) or that the Gateway API forbids is dropped whole — serving it without that part would
//! modify traffic differently than written — and the route says so with `PartiallyInvalid` (or
//! `Accepted=False/UnsupportedValue` if nothing is left).

use gateway_api::apis::standard::httproutes::{
    HttpRoute, HttpRouteRules, HttpRouteRulesMatches, HttpRouteRulesMatchesHeadersType as HeaderType,
    HttpRouteRulesMatchesPathType as PathType, HttpRouteRulesMatchesQueryParamsType as QueryType,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::backends::{Backends, GatewaySide, RefSpec, RouteSide};
use super::conditions::{self, Condition, Problem, reason};
use super::hostnames;
use super::listeners::{AllowedNamespaces, ListenerInfo};
use super::selector;
use crate::api::consts::{GATEWAY_GROUP, KIND_GATEWAY, KIND_GRPCROUTE, KIND_HTTPROUTE, KIND_SERVICE};
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

    /// Prefix of Envoy route names (`envoy::names::route`).
    fn prefix(self) -> &'static str {
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
    fn generation(&self) -> i64 {
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
) -> Vec<Value> {
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
        let parent_ref = super::status::gateway_ref(gw_key, parent.section_name.as_deref(), parent.port);
        let (accepted, attached) = accept_on_listeners(
            scope,
            r,
            listeners,
            &sink.claims,
            parent.section_name.as_deref(),
            parent.port,
        );
        let mut conds = vec![accepted.clone()];
        if accepted.status == conditions::Status::True {
            let (resolved, partial) = rules(scope, backends, r, &attached, sink);
            match partial {
                Some(Rejection::All(msg)) => {
                    conds[0] = Condition::fail(conditions::ACCEPTED, reason::UNSUPPORTED_VALUE, msg, g);
                }
                Some(Rejection::Some(msg)) => {
                    conds.push(Condition::ok(
                        conditions::PARTIALLY_INVALID,
                        reason::UNSUPPORTED_VALUE,
                        msg,
                        g,
                    ));
                }
                None => {}
            }
            if conds[0].status == conditions::Status::True {
                for (i, hosts) in &attached {
                    listeners[*i].attached_routes += 1;
                    sink.claims.entry(*i).or_default().push((r.kind, hosts.clone()));
                }
            }
            conds.insert(1, resolved);
        } else {
            conds.push(Condition::ok(
                conditions::RESOLVED_REFS,
                reason::RESOLVED_REFS,
                "References not evaluated: route not accepted",
                g,
            ));
        }
        statuses.push(json!({
            "parentRef": parent_ref,
            "controllerName": scope.controller,
            "conditions": super::status::conditions(&conds),
        }));
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
) -> (Condition, Vec<(usize, Vec<String>)>) {
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
            Condition::fail(conditions::ACCEPTED, reason::NO_MATCHING_PARENT, what, g),
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
                conditions::ACCEPTED,
                reason::NOT_ALLOWED_BY_LISTENERS,
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
                conditions::ACCEPTED,
                reason::NO_MATCHING_LISTENER_HOSTNAME,
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
            Condition::fail(conditions::ACCEPTED, reason::HOSTNAME_CONFLICT, conflicts.join("; "), g),
            Vec::new(),
        );
    }
    (
        Condition::ok(conditions::ACCEPTED, reason::ACCEPTED, "Route accepted", g),
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

enum Rejection {
    All(String),
    Some(String),
}

/// Builds route entries for every rule on every attached listener. Returns the ResolvedRefs
/// condition and, if rules were dropped, why.
fn rules(
    scope: &Scope<'_>,
    backends: &mut Backends<'_>,
    r: RouteRef<'_>,
    attached: &[(usize, Vec<String>)],
    sink: &mut Sink,
) -> (Condition, Option<Rejection>) {
    let (key, route, order, g, gw_key) = (r.key, r.route, r.order, r.generation(), scope.gateway);
    let side = RouteSide {
        group: GATEWAY_GROUP,
        kind: r.kind.name(),
        namespace: &key.namespace,
    };
    let grpc = r.kind == RouteKind::Grpc;
    let mut ref_problems: Vec<Problem> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    let rules = route.spec.rules.clone().unwrap_or_default();
    for (ri, rule) in rules.iter().enumerate() {
        let rule_error = r.grpc.and_then(|g| g.rule_errors.get(ri).cloned().flatten());
        let extras = rule_extras(scope, r, ri);
        let parse = || super::filters::parse(rule, extras.retry.as_ref(), &extras.unknown_filters);
        let filters = match rule_error.or_else(|| unsupported(rule)).map_or_else(parse, Err) {
            Ok(f) => f,
            Err(why) => {
                dropped.push(format!("Dropped Rule {ri}: {why}"));
                continue;
            }
        };
        // A filter that must not be skipped but cannot be served: the rule answers 500 (`filters`).
        if let Some((why_reason, why)) = &filters.fail_closed {
            let msg = format!("Rule {ri}: {why}");
            if *why_reason == reason::INVALID_KIND {
                ref_problems.push(Problem::refs(reason::INVALID_KIND, msg));
            } else {
                dropped.push(msg);
            }
        }
        let mut resolved: Vec<(Option<super::backends::Target>, u32, ir::BackendFilters)> = Vec::new();
        // A redirect rule answers the redirect and never forwards: its backendRefs are not used.
        let forwards = !filters.redirects() && filters.fail_closed.is_none();
        let refs = if forwards { rule.backend_refs.as_ref() } else { None };
        for (bi, br) in refs.into_iter().flatten().enumerate() {
            let weight = u32::try_from(br.weight.unwrap_or(1)).unwrap_or(0);
            let own = filters.per_backend.get(bi).cloned().unwrap_or_default();
            let r = RefSpec {
                group: br.group.as_deref().unwrap_or(""),
                kind: br.kind.as_deref().unwrap_or(KIND_SERVICE),
                namespace: br.namespace.as_deref().unwrap_or(&key.namespace),
                name: &br.name,
                port: br.port,
            };
            match backends.resolve(
                side,
                &r,
                GatewaySide {
                    key: gw_key,
                    client_cert: scope.client_cert,
                },
            ) {
                Ok(Some(t)) => {
                    notes.extend(t.notes.iter().cloned());
                    let t = if grpc { super::grpc::over_http2(t) } else { t };
                    resolved.push((Some(t), weight, own));
                }
                Ok(None) => resolved.push((None, weight, own)),
                Err(p) => {
                    ref_problems.push(p);
                    resolved.push((None, weight, own));
                }
            }
        }
        let backends_out = with_failover(resolved, sink);
        let action = if filters.fail_closed.is_some() {
            ir::RouteAction::DirectResponse { status: 500 }
        } else if backends_out.iter().all(|b| b.cluster.is_none()) {
            // No backendRefs, or none valid: every request of the rule gets 500 (gRPC: UNAVAILABLE).
            ir::RouteAction::DirectResponse {
                status: if grpc { 503 } else { 500 },
            }
        } else {
            ir::RouteAction::Forward(backends_out)
        };
        // Mirrors only copy forwarded requests.
        let mirrors = match action {
            ir::RouteAction::Forward(_) => {
                let gw = GatewaySide {
                    key: gw_key,
                    client_cert: scope.client_cert,
                };
                let resolved = resolve_mirrors(&filters.mirrors, backends, side, gw, &mut ref_problems, ri);
                let mut out = Vec::new();
                for (t, fraction) in resolved {
                    notes.extend(t.notes.iter().cloned());
                    let t = if grpc { super::grpc::over_http2(t) } else { t };
                    out.push(ir::Mirror {
                        cluster: t.cluster.name.clone(),
                        fraction,
                    });
                    sink.targets.push(t);
                }
                out
            }
            _ => Vec::new(),
        };
        let default_match = [Default::default()];
        let matches = rule
            .matches
            .as_deref()
            .filter(|m| !m.is_empty())
            .unwrap_or(&default_match);
        for (mi, m) in matches.iter().enumerate() {
            let name = crate::envoy::names::route(r.kind.prefix(), &key.namespace, &key.name, ri, mi);
            let mut route = route_for_match(name, m, action.clone());
            route.grpc = grpc;
            let (route_filters, redirect) = filters.for_match(&route.path, &mirrors);
            route.filters = route_filters;
            if let Some(redirect) = redirect {
                route.action = ir::RouteAction::Redirect(redirect);
            }
            for (li, hosts) in attached {
                sink.entries.push(Entry {
                    listener: *li,
                    hostnames: hosts.clone(),
                    route: route.clone(),
                    grpc_rank: r
                        .grpc
                        .map(|g| g.ranks.get(ri).and_then(|m| m.get(mi)).copied().unwrap_or_default()),
                    tie: (order, ri, mi),
                });
            }
        }
    }
    let resolved = match ref_problems.first() {
        Some(p) => {
            // One message per distinct problem: the same missing backend in three rules is one line.
            let mut msgs: Vec<&str> = Vec::new();
            for m in ref_problems.iter().map(|p| p.message.as_str()) {
                if !msgs.contains(&m) {
                    msgs.push(m);
                }
            }
            Condition::fail(conditions::RESOLVED_REFS, p.reason, msgs.join("; "), g)
        }
        None if notes.is_empty() => Condition::ok(
            conditions::RESOLVED_REFS,
            reason::RESOLVED_REFS,
            "All references resolved",
            g,
        ),
        None => {
            notes.sort();
            notes.dedup();
            let msg = format!("All references resolved; ignored: {}", notes.join("; "));
            Condition::ok(conditions::RESOLVED_REFS, reason::RESOLVED_REFS, msg, g)
        }
    };
    let rejection = if dropped.is_empty() {
        None
    } else if dropped.len() == rules.len() {
        Some(Rejection::All(dropped.join("; ")))
    } else {
        Some(Rejection::Some(dropped.join("; ")))
    };
    (resolved, rejection)
}

/// What the parser kept beside rule `ri` of an HTTPRoute (`model::HttpRouteExtras`); nothing for a
/// GRPCRoute, whose HTTPRoute form is built by `gateway::grpc`.
fn rule_extras(scope: &Scope<'_>, r: RouteRef<'_>, ri: usize) -> crate::model::RuleExtras {
    if r.kind != RouteKind::Http {
        return Default::default();
    }
    let extras = scope.model.http_route_extras.get(r.key);
    extras.and_then(|e| e.rules.get(ri)).cloned().unwrap_or_default()
}

/// Resolves a rule's mirrors like backendRefs; one that does not resolve is left out and its problem
/// (named after the rule and filter) goes to `problems`.
fn resolve_mirrors(
    specs: &[super::filters::mirror::MirrorSpec],
    backends: &mut Backends<'_>,
    side: RouteSide<'_>,
    gw: GatewaySide<'_>,
    problems: &mut Vec<Problem>,
    ri: usize,
) -> Vec<(super::backends::Target, Option<ir::Fraction>)> {
    let mut out = Vec::new();
    for m in specs {
        let spec = RefSpec {
            group: m.group.as_deref().unwrap_or(""),
            kind: m.kind.as_deref().unwrap_or(KIND_SERVICE),
            namespace: m.namespace.as_deref().unwrap_or(side.namespace),
            name: &m.name,
            port: m.port,
        };
        match backends.resolve(side, &spec, gw) {
            Ok(Some(t)) => out.push((t, m.fraction)),
            Ok(None) => {}
            Err(p) => problems.push(Problem::refs(
                p.reason,
                format!("Rule {ri}: filter RequestMirror: {}", p.message),
            )),
        }
    }
    out
}

/// Weighted backends of one rule. Envoy Gateway `fallback` Backends take no share of their own: when a
/// rule also has primary backends, each primary becomes an aggregate cluster that fails over to the
/// rule's fallbacks (in backendRef order) once the primary has no healthy host — Envoy Gateway's
/// semantics, kept while each backend still has its own shared cluster. A rule of fallbacks only
/// serves them normally.
fn with_failover(
    resolved: Vec<(Option<super::backends::Target>, u32, ir::BackendFilters)>,
    sink: &mut Sink,
) -> Vec<ir::WeightedBackend> {
    let fallbacks: Vec<super::backends::Target> = resolved
        .iter()
        .filter_map(|(t, _, _)| t.as_ref())
        .filter(|t| t.fallback)
        .cloned()
        .collect();
    let has_primary = resolved.iter().any(|(t, _, _)| t.as_ref().is_some_and(|t| !t.fallback));
    let mut out = Vec::new();
    for (target, weight, filters) in resolved {
        let Some(t) = target else {
            out.push(ir::WeightedBackend {
                cluster: None,
                weight,
                filters,
            });
            continue;
        };
        if has_primary && !fallbacks.is_empty() {
            if t.fallback {
                continue;
            }
            let members: Vec<String> = std::iter::once(t.cluster.name.clone())
                .chain(fallbacks.iter().map(|f| f.cluster.name.clone()))
                .collect();
            let aggregate = super::backends::aggregate(&t, members);
            out.push(ir::WeightedBackend {
                cluster: Some(aggregate.cluster.name.clone()),
                weight,
                filters,
            });
            sink.targets.push(aggregate);
        } else {
            out.push(ir::WeightedBackend {
                cluster: Some(t.cluster.name.clone()),
                weight,
                filters,
            });
        }
        sink.targets.push(t);
    }
    if has_primary {
        sink.targets.extend(fallbacks);
    }
    out
}

/// The route entry of one `HTTPRouteMatch`: path (default PathPrefix `/`), headers, query parameters
/// and method, all ANDed. Header names compare case-insensitively and query parameter names exactly;
/// of several entries with an equivalent name only the first counts, later ones are ignored
/// (<https://gateway-api.sigs.k8s.io/reference/spec/#httpheadermatch>, `Name`).
fn route_for_match(name: String, m: &HttpRouteRulesMatches, action: ir::RouteAction) -> ir::Route {
    let path = m.path.clone().unwrap_or_default();
    let value = path.value.unwrap_or_else(|| "/".into());
    let path = match path.r#type.unwrap_or(PathType::PathPrefix) {
        PathType::Exact => ir::PathMatch::Exact(value),
        PathType::PathPrefix => ir::PathMatch::Prefix(value),
        PathType::RegularExpression => ir::PathMatch::Regex(value),
    };
    let mut headers: Vec<ir::HeaderMatch> = Vec::new();
    for h in m.headers.iter().flatten() {
        let name = h.name.to_ascii_lowercase();
        if headers.iter().any(|seen| seen.name == name) {
            continue;
        }
        let value = match h.r#type {
            Some(HeaderType::RegularExpression) => ir::ValueMatch::Regex(h.value.clone()),
            _ => ir::ValueMatch::Exact(h.value.clone()),
        };
        headers.push(ir::HeaderMatch { name, value });
    }
    let mut query_params: Vec<ir::QueryMatch> = Vec::new();
    for q in m.query_params.iter().flatten() {
        if query_params.iter().any(|seen| seen.name == q.name) {
            continue;
        }
        let value = match q.r#type {
            Some(QueryType::RegularExpression) => ir::ValueMatch::Regex(q.value.clone()),
            _ => ir::ValueMatch::Exact(q.value.clone()),
        };
        query_params.push(ir::QueryMatch {
            name: q.name.clone(),
            value,
        });
    }
    let method = m.method.as_ref().map(|m| {
        serde_json::to_value(m)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{m:?}").to_ascii_uppercase())
    });
    ir::Route {
        name,
        path,
        headers,
        query_params,
        method,
        action,
        grpc: false,
        filters: Default::default(),
    }
}

/// Why a rule's matches cannot be served as written, if they cannot (filters: `filters::parse`).
fn unsupported(rule: &HttpRouteRules) -> Option<String> {
    for m in rule.matches.iter().flatten() {
        let path = m.path.as_ref();
        let regex = path.and_then(|p| p.r#type.clone()) == Some(PathType::RegularExpression);
        if let Some(v) = path.and_then(|p| p.value.as_deref())
            && !regex
            && !v.starts_with('/')
        {
            return Some(format!("path {v:?} must start with '/'"));
        }
        let mut regexes: Vec<(&str, &str)> = Vec::new();
        if regex && let Some(v) = path.and_then(|p| p.value.as_deref()) {
            regexes.push(("path", v));
        }
        for h in m.headers.iter().flatten() {
            if h.r#type == Some(HeaderType::RegularExpression) {
                regexes.push(("header", &h.value));
            }
        }
        for q in m.query_params.iter().flatten() {
            if q.r#type == Some(QueryType::RegularExpression) {
                regexes.push(("query parameter", &q.value));
            }
        }
        for (what, re) in regexes {
            if let Some(why) = super::re2::problem(re) {
                return Some(format!("{what} {why}"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> HttpRouteRulesMatches {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn first_entry_per_equivalent_name_wins() {
        let m = parse(
            "{path: {type: RegularExpression, value: '/v[0-9]+'}, method: PATCH,
              headers: [{name: X-Env, value: a}, {name: x-env, value: b}, {name: X-Re, type: RegularExpression, value: 'x.*'}],
              queryParams: [{name: q, value: '1'}, {name: q, value: '2'}, {name: Q, value: '3'}]}",
        );
        let r = route_for_match("r".into(), &m, ir::RouteAction::DirectResponse { status: 500 });
        assert_eq!(r.path, ir::PathMatch::Regex("/v[0-9]+".into()));
        assert_eq!(r.method.as_deref(), Some("PATCH"));
        let headers: Vec<(&str, &ir::ValueMatch)> = r.headers.iter().map(|h| (h.name.as_str(), &h.value)).collect();
        assert_eq!(
            headers,
            vec![
                ("x-env", &ir::ValueMatch::Exact("a".into())),
                ("x-re", &ir::ValueMatch::Regex("x.*".into()))
            ]
        );
        let query: Vec<(&str, &ir::ValueMatch)> = r.query_params.iter().map(|q| (q.name.as_str(), &q.value)).collect();
        assert_eq!(
            query,
            vec![
                ("q", &ir::ValueMatch::Exact("1".into())),
                ("Q", &ir::ValueMatch::Exact("3".into()))
            ],
            "query parameter names are exact"
        );
    }

    #[test]
    fn default_match_is_prefix_root() {
        let r = route_for_match(
            "r".into(),
            &parse("{}"),
            ir::RouteAction::DirectResponse { status: 500 },
        );
        assert_eq!(r.path, ir::PathMatch::Prefix("/".into()));
        assert!(r.headers.is_empty() && r.query_params.is_empty() && r.method.is_none());
    }

    #[test]
    fn invalid_regular_expressions_drop_the_rule() {
        let rule = |m: &str| HttpRouteRules {
            matches: Some(vec![parse(m)]),
            ..Default::default()
        };
        for (m, what) in [
            ("{path: {type: RegularExpression, value: '/(unclosed'}}", "path"),
            (
                "{headers: [{name: x, type: RegularExpression, value: '[z-a]'}]}",
                "header",
            ),
            (
                "{queryParams: [{name: q, type: RegularExpression, value: '*x'}]}",
                "query parameter",
            ),
        ] {
            let why = unsupported(&rule(m)).unwrap_or_else(|| panic!("{m} should be refused"));
            assert!(why.starts_with(what) && why.contains("not valid"), "{why}");
        }
        assert_eq!(
            unsupported(&rule("{path: {type: RegularExpression, value: '/v[0-9]+/.*'}}")),
            None
        );
    }
}
