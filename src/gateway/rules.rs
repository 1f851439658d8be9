//! The rules of one attached route → route entries, and the route's `ResolvedRefs` condition.
//!
//! Each rule's matches (path `Exact`, `PathPrefix`, `RegularExpression`; headers and query parameters,
//! `Exact` or `RegularExpression`; method) become one entry each, with the rule's weighted backendRefs
//! (each with its own header filters), resolved mirrors and the filters, timeouts, retry and name of
//! `gateway::filters`. A rule pier cannot serve as written, or that the Gateway API forbids, is dropped
//! whole — serving it without that part would modify traffic differently than written — and the route
//! says so with `PartiallyInvalid` (or `Accepted=False/UnsupportedValue` if nothing is left); a filter
//! that must not be skipped (`ExtensionRef`, an unknown filter type) fails closed with a 500 instead.

use gateway_api::apis::standard::httproutes::{
    HttpRouteRules, HttpRouteRulesMatches, HttpRouteRulesMatchesHeadersType as HeaderType,
    HttpRouteRulesMatchesPathType as PathType, HttpRouteRulesMatchesQueryParamsType as QueryType,
};

use super::backends::{Backends, GatewaySide, RefSpec, RouteSide};
use super::conditions::{Condition, Problem, RouteCondition, RouteProblem, RouteReason, RouteType};
use super::routes::{Entry, RouteKind, RouteRef, Scope, Sink};
use crate::api::consts::{GATEWAY_GROUP, KIND_SERVICE};
use crate::ir;

pub(super) enum Rejection {
    All(String),
    Some(String),
}

/// Builds route entries for every rule on every attached listener. Returns the ResolvedRefs
/// condition and, if rules were dropped, why.
pub(super) fn rules(
    scope: &Scope<'_>,
    backends: &mut Backends<'_>,
    r: RouteRef<'_>,
    attached: &[(usize, Vec<String>)],
    sink: &mut Sink,
) -> (RouteCondition, Option<Rejection>) {
    let (key, route, order, g, gw_key) = (r.key, r.route, r.order, r.generation(), scope.gateway);
    let side = RouteSide {
        group: GATEWAY_GROUP,
        kind: r.kind.name(),
        namespace: &key.namespace,
    };
    let grpc = r.kind == RouteKind::Grpc;
    let mut ref_problems: Vec<RouteProblem> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    let rules = route.spec.rules.clone().unwrap_or_default();
    for (ri, rule) in rules.iter().enumerate() {
        let rule_error = r.grpc.and_then(|g| g.rule_errors.get(ri).cloned().flatten());
        let extras = rule_extras(scope, r, ri);
        let parse = || super::filters::parse(rule, extras.retry.as_ref(), &extras.unknown_filters);
        // Rule fields the standard HTTPRoute type drops (`model::HttpRouteExtras`) that pier does not serve.
        let unserved = || {
            let fields = &extras.unsupported_fields;
            (!fields.is_empty()).then(|| format!("{} is not supported", fields.join(", ")))
        };
        let filters = match rule_error
            .or_else(|| unsupported(rule))
            .or_else(unserved)
            .map_or_else(parse, Err)
        {
            Ok(f) => f,
            Err(why) => {
                dropped.push(format!("Dropped Rule {ri}: {why}"));
                continue;
            }
        };
        // A filter that must not be skipped but cannot be served: the rule answers 500 (`filters`).
        if let Some((why_reason, why)) = &filters.fail_closed {
            let msg = format!("Rule {ri}: {why}");
            if *why_reason == RouteReason::InvalidKind {
                ref_problems.push(Problem::refs(RouteReason::InvalidKind, msg));
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
            let name = crate::ir::names::route(r.kind.prefix(), &key.namespace, &key.name, ri, mi);
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
            Condition::fail(RouteType::ResolvedRefs, p.reason, msgs.join("; "), g)
        }
        None if notes.is_empty() => Condition::ok(
            RouteType::ResolvedRefs,
            RouteReason::ResolvedRefs,
            "All references resolved",
            g,
        ),
        None => {
            notes.sort();
            notes.dedup();
            let msg = format!("All references resolved; ignored: {}", notes.join("; "));
            Condition::ok(RouteType::ResolvedRefs, RouteReason::ResolvedRefs, msg, g)
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
    problems: &mut Vec<RouteProblem>,
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
#[path = "rules_tests.rs"]
mod tests;
