//! The rules of one attached route → route entries, and the route's `ResolvedRefs` condition.
//!
//! Each rule's matches (path `Exact`, `PathPrefix`, `RegularExpression`; headers and query parameters,
//! `Exact` or `RegularExpression`; method) become one entry each, with the rule's weighted backendRefs
//! (each with its own header filters), resolved mirrors and the filters, timeouts, retry and name of
//! `gateway::filters`. A rule pier cannot serve as written, or that the Gateway API forbids, is dropped
//! whole — serving it without that part would modify traffic differently than written — and the route
//! says so with `PartiallyInvalid` (or `Accepted=False/UnsupportedValue` if nothing is left); a filter
//! that must not be skipped (`ExtensionRef`, an unknown filter type) fails closed with a 500 instead.
//!
//! One rule is translated in steps: its filters (`rule_filters`), its backends (`rule_backends`), the
//! action they make (`rule_action`, with `shares`: failover, HTTP/2 twins, session persistence), its
//! mirrors (`rule_mirrors`), and its entries (`entries`).

use super::backends::{Backends, GatewaySide, Reached, RefSpec, RouteSide, Target};
use super::conditions::{Condition, Problem, RouteCondition, RouteProblem, RouteReason, RouteType};
use super::filters::RuleFilters;
use super::routes::{Entry, Scope, Sink};
use super::spec::{self, PathKind, RouteKind};
use crate::api::consts::{GATEWAY_GROUP, KIND_SERVICE};
use crate::ir;
use crate::ir::names;

mod checks;
mod shares;
use checks::{out_of_bounds, unsupported};
pub use shares::over_http2;
use shares::{rule_session, with_failover};

/// Rules of a route that were dropped: all of them, or some (`PartiallyInvalid`). Why, per rule.
pub(super) enum Dropped {
    Every(String),
    Part(String),
}

/// What translating a route's rules found, for its conditions.
#[derive(Default)]
struct Outcome {
    ref_problems: Vec<RouteProblem>,
    notes: Vec<String>,
    dropped: Vec<String>,
}

/// What the rules of a route attached to one parent gave: its `ResolvedRefs` condition, the rules
/// dropped (if any), and what its references reached.
pub(super) struct RulesOutcome {
    pub resolved: RouteCondition,
    pub dropped: Option<Dropped>,
    pub reached: Reached,
}

/// Where a rule's backendRefs resolve: the route's side of a reference and the Gateway's.
#[derive(Clone, Copy)]
struct Sides<'a> {
    route: RouteSide<'a>,
    gateway: GatewaySide<'a>,
    grpc: bool,
}

/// Builds route entries for every rule on every attached listener. Returns the ResolvedRefs
/// condition and, if rules were dropped, why.
pub(super) fn rules(
    scope: &Scope<'_>,
    backends: &Backends<'_>,
    route: &spec::RouteSpec,
    attached: &[(usize, Vec<String>)],
    sink: &mut Sink,
) -> RulesOutcome {
    let sides = Sides {
        route: RouteSide {
            group: GATEWAY_GROUP,
            kind: route.kind.name(),
            namespace: &route.key.namespace,
        },
        gateway: GatewaySide {
            key: scope.gateway,
            client_cert: scope.client_cert,
        },
        grpc: route.kind == RouteKind::Grpc,
    };
    let mut out = Outcome::default();
    let mut reached = Reached::default();
    for (ri, rule) in route.rules.iter().enumerate() {
        let mut filters = match rule_filters(rule) {
            Ok(f) => f,
            Err(why) => {
                out.dropped.push(format!("Dropped Rule {ri}: {why}"));
                continue;
            }
        };
        if let Some((why_reason, why)) = &filters.fail_closed {
            let msg = format!("Rule {ri}: {why}");
            if *why_reason == RouteReason::InvalidKind {
                out.ref_problems.push(Problem::refs(RouteReason::InvalidKind, msg));
            } else {
                out.dropped.push(msg);
            }
        }
        let resolved = rule_backends(rule, &filters, backends, sides, &mut out, &mut reached);
        match rule_session(route, ri, rule, &resolved) {
            Ok(settled) => {
                filters.session = settled.session;
                out.notes.extend(settled.notes);
            }
            Err(why) => {
                out.dropped.push(format!("Dropped Rule {ri}: {why}"));
                continue;
            }
        }
        if resolved
            .iter()
            .any(|(t, _, _)| t.as_ref().is_some_and(|t| t.long_lived))
        {
            filters.no_default_deadline();
        }
        let action = rule_action(&filters, with_failover(resolved, sink), sides.grpc);
        let mirrors = match action {
            ir::RouteAction::Forward(_) => rule_mirrors(&filters, backends, sides, ri, &mut out, &mut reached, sink),
            _ => Vec::new(),
        };
        entries(route, ri, rule, &filters, &action, &mirrors, attached, sink);
    }
    let dropped = match out.dropped.len() {
        0 => None,
        n if n == route.rules.len() => Some(Dropped::Every(out.dropped.join("; "))),
        _ => Some(Dropped::Part(out.dropped.join("; "))),
    };
    RulesOutcome {
        resolved: resolved_refs(out.ref_problems, out.notes, route.generation()),
        dropped,
        reached,
    }
}

/// The rule's filters, or why it cannot be served: its own error (a GRPCRoute method match), matches
/// pier cannot serve, experimental fields pier does not serve, then the filters themselves.
fn rule_filters(rule: &spec::Rule) -> Result<RuleFilters, String> {
    if let Some(why) = rule.error.clone().or_else(|| unsupported(rule)) {
        return Err(why);
    }
    if !rule.unsupported_fields.is_empty() {
        return Err(format!("{} is not supported", rule.unsupported_fields.join(", ")));
    }
    if let Some(why) = out_of_bounds(rule) {
        return Err(why);
    }
    super::filters::parse(rule)
}

/// The rule's backendRefs, resolved: a target (or `None` for an invalid one, which keeps its weight),
/// its weight and its own header changes. A redirect rule, and one failing closed, never forwards: its
/// backendRefs are not used.
fn rule_backends(
    rule: &spec::Rule,
    filters: &RuleFilters,
    backends: &Backends<'_>,
    sides: Sides<'_>,
    out: &mut Outcome,
    reached: &mut Reached,
) -> Vec<(Option<Target>, u32, ir::BackendFilters)> {
    if filters.redirects() || filters.fail_closed.is_some() {
        return Vec::new();
    }
    let mut resolved = Vec::new();
    for (bi, br) in rule.backend_refs.iter().enumerate() {
        let weight = u32::try_from(br.weight.unwrap_or(1)).unwrap_or(0);
        let own = filters.per_backend.get(bi).cloned().unwrap_or_default();
        let target = match backends.resolve(sides.route, &ref_spec(&br.target, sides.route), sides.gateway, reached) {
            Ok(Some(t)) => {
                out.notes.extend(t.notes.iter().cloned());
                Some(if sides.grpc { over_http2(t) } else { t })
            }
            Ok(None) => None,
            Err(p) => {
                out.ref_problems.push(p);
                None
            }
        };
        resolved.push((target, weight, own));
    }
    resolved
}

/// A reference as written, with Gateway API's defaults (core Service, the route's namespace).
fn ref_spec<'a>(r: &'a spec::Ref, route: RouteSide<'a>) -> RefSpec<'a> {
    RefSpec {
        group: r.group.as_deref().unwrap_or(""),
        kind: r.kind.as_deref().unwrap_or(KIND_SERVICE),
        namespace: r.namespace.as_deref().unwrap_or(route.namespace),
        name: &r.name,
        port: r.port,
    }
}

/// Forward to the rule's backends; or a fixed answer: 500 when a filter fails closed or no backend is
/// valid (a GRPCRoute gets 503, which Envoy turns into gRPC `UNAVAILABLE`).
fn rule_action(filters: &RuleFilters, backends: Vec<ir::WeightedBackend>, grpc: bool) -> ir::RouteAction {
    if filters.fail_closed.is_some() {
        ir::RouteAction::DirectResponse { status: 500 }
    } else if backends.iter().all(|b| b.cluster.is_none()) {
        ir::RouteAction::DirectResponse {
            status: if grpc { 503 } else { 500 },
        }
    } else {
        ir::RouteAction::Forward(backends)
    }
}

/// The rule's mirrors, resolved like backendRefs (only forwarded requests are copied); one that does not
/// resolve is left out and its problem, named after the rule and filter, goes on the route.
#[allow(clippy::too_many_arguments)]
fn rule_mirrors(
    filters: &RuleFilters,
    backends: &Backends<'_>,
    sides: Sides<'_>,
    ri: usize,
    out: &mut Outcome,
    reached: &mut Reached,
    sink: &mut Sink,
) -> Vec<ir::Mirror> {
    let mut mirrors = Vec::new();
    for m in &filters.mirrors {
        let t = match backends.resolve(sides.route, &ref_spec(&m.backend, sides.route), sides.gateway, reached) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(p) => {
                out.ref_problems
                    .push(p.prefixed(format!("Rule {ri}: filter RequestMirror")));
                continue;
            }
        };
        out.notes.extend(t.notes.iter().cloned());
        let t = if sides.grpc { over_http2(t) } else { t };
        mirrors.push(ir::Mirror {
            cluster: t.cluster.name.clone(),
            fraction: m.fraction,
        });
        sink.targets.push(t);
    }
    mirrors
}

/// One entry per match of the rule (one default match when it has none) on every attached listener.
#[allow(clippy::too_many_arguments)]
fn entries(
    route: &spec::RouteSpec,
    ri: usize,
    rule: &spec::Rule,
    filters: &RuleFilters,
    action: &ir::RouteAction,
    mirrors: &[ir::Mirror],
    attached: &[(usize, Vec<String>)],
    sink: &mut Sink,
) {
    let default_match = [spec::Match::default()];
    let matches = if rule.matches.is_empty() {
        &default_match[..]
    } else {
        &rule.matches
    };
    for (mi, m) in matches.iter().enumerate() {
        let name = names::route(route.kind.prefix(), &route.key.namespace, &route.key.name, ri, mi);
        let mut entry = route_for_match(name, m, action.clone());
        entry.grpc = route.kind == RouteKind::Grpc;
        let (route_filters, redirect) = filters.for_match(&entry.path, mirrors);
        entry.filters = route_filters.into();
        if let Some(redirect) = redirect {
            entry.action = ir::RouteAction::Redirect(redirect);
        }
        let grpc_rank = entry.grpc.then(|| m.grpc_rank.unwrap_or_default());
        for (li, hosts) in attached {
            sink.entries.push(Entry {
                listener: *li,
                hostnames: hosts.clone(),
                route: entry.clone(),
                grpc_rank,
                tie: (route.order.clone(), ri, mi),
            });
        }
    }
}

/// `ResolvedRefs`: the first reference problem's reason with one message per distinct problem (the same
/// missing backend in three rules is one line), or resolved, mentioning what was ignored on the way.
/// What was ignored is said either way: a refused endpoint must not vanish behind another problem.
fn resolved_refs(problems: Vec<RouteProblem>, mut notes: Vec<String>, g: i64) -> RouteCondition {
    notes.sort();
    notes.dedup();
    let ignored = if notes.is_empty() {
        String::new()
    } else {
        format!("; ignored: {}", notes.join("; "))
    };
    if let Some(first) = problems.first() {
        let mut msgs: Vec<&str> = Vec::new();
        for m in problems.iter().map(|p| p.message.as_str()) {
            if !msgs.contains(&m) {
                msgs.push(m);
            }
        }
        return Condition::fail(RouteType::ResolvedRefs, first.reason, msgs.join("; ") + &ignored, g);
    }
    let msg: std::borrow::Cow<'static, str> = if ignored.is_empty() {
        "All references resolved".into()
    } else {
        format!("All references resolved{ignored}").into()
    };
    Condition::ok(RouteType::ResolvedRefs, RouteReason::ResolvedRefs, msg, g)
}

/// The route entry of one `HTTPRouteMatch`: path (default PathPrefix `/`), headers, query parameters
/// and method, all ANDed. Header names compare case-insensitively and query parameter names exactly;
/// of several entries with an equivalent name only the first counts, later ones are ignored
/// (<https://gateway-api.sigs.k8s.io/reference/spec/#httpheadermatch>, `Name`).
fn route_for_match(name: String, m: &spec::Match, action: ir::RouteAction) -> ir::Route {
    let value = m
        .path
        .as_ref()
        .and_then(|p| p.value.clone())
        .unwrap_or_else(|| "/".into());
    let path = match m.path.as_ref().and_then(|p| p.kind).unwrap_or(PathKind::PathPrefix) {
        PathKind::Exact => ir::PathMatch::Exact(value),
        PathKind::PathPrefix => ir::PathMatch::Prefix(value),
        PathKind::RegularExpression => ir::PathMatch::Regex(value),
    };
    let value = |v: &spec::ValueMatch| {
        if v.regex {
            ir::ValueMatch::Regex(v.value.clone())
        } else {
            ir::ValueMatch::Exact(v.value.clone())
        }
    };
    let mut headers: Vec<ir::HeaderMatch> = Vec::new();
    for h in &m.headers {
        let name = h.name.to_ascii_lowercase();
        if !headers.iter().any(|seen| seen.name == name) {
            headers.push(ir::HeaderMatch { name, value: value(h) });
        }
    }
    let mut query_params: Vec<ir::QueryMatch> = Vec::new();
    for q in &m.query_params {
        if !query_params.iter().any(|seen| seen.name == q.name) {
            query_params.push(ir::QueryMatch {
                name: q.name.clone(),
                value: value(q),
            });
        }
    }
    ir::Route {
        name,
        path,
        headers,
        query_params,
        method: m.method.clone(),
        action,
        grpc: false,
        filters: Default::default(),
    }
}

#[cfg(test)]
mod tests;
