//! What a rule's resolved backends become: its weighted shares (with Envoy Gateway's fallback Backends
//! folded into failover clusters), the HTTP/2 form a GRPCRoute needs, and its session persistence.

use super::super::backends::Target;
use super::super::routes::Sink;
use super::super::spec;
use crate::ir;
use crate::ir::names;

/// The rule's session persistence: its own (judged; a cookie without a name gets one minted for the
/// rule) against its Backends' (`gateway::session::settle`). A redirect or failing rule forwards
/// nothing and keeps none.
pub(super) fn rule_session(
    route: &spec::RouteSpec,
    ri: usize,
    rule: &spec::Rule,
    resolved: &[(Option<Target>, u32, ir::BackendFilters)],
) -> Result<crate::gateway::session::Settled, String> {
    if resolved.is_empty() {
        return Ok(Default::default());
    }
    let own = match &rule.session_persistence {
        Some(sp) => {
            let kind = route.kind.name().to_ascii_lowercase();
            let owner = format!("{kind}/{}/{}/rule/{ri}", route.key.namespace, route.key.name);
            let field = format!("spec.rules[{ri}].sessionPersistence");
            Some(crate::gateway::session::judge(
                sp,
                &field,
                &ir::names::session_cookie(&owner),
            )?)
        }
        None => None,
    };
    let shares: Vec<crate::gateway::session::Share<'_>> = resolved
        .iter()
        .map(|(t, weight, _)| crate::gateway::session::Share {
            origin: t.as_ref().map(|t| &t.cluster.origin),
            session: t.as_ref().and_then(|t| t.session.as_ref()),
            weight: *weight,
        })
        .collect();
    crate::gateway::session::settle(own, &shares)
}

/// Weighted backends of one rule. Envoy Gateway `fallback` Backends take no share of their own: when a
/// rule also has primary backends, each primary becomes an aggregate cluster that fails over to the
/// rule's fallbacks (in backendRef order) once the primary has no healthy host — Envoy Gateway's
/// semantics, kept while each backend still has its own shared cluster. A rule of fallbacks only
/// serves them normally.
pub(super) fn with_failover(
    resolved: Vec<(Option<Target>, u32, ir::BackendFilters)>,
    sink: &mut Sink,
) -> Vec<ir::WeightedBackend> {
    let fallbacks: Vec<Target> = resolved
        .iter()
        .filter_map(|(t, _, _)| t.as_ref())
        .filter(|t| t.fallback)
        .cloned()
        .collect();
    let has_primary = resolved.iter().any(|(t, _, _)| t.as_ref().is_some_and(|t| !t.fallback));
    let failover = has_primary && !fallbacks.is_empty();
    let mut out = Vec::new();
    for (target, weight, filters) in resolved {
        let cluster = match target {
            None => None,
            Some(t) if failover && t.fallback => continue,
            Some(t) if failover => {
                let members: Vec<String> = std::iter::once(t.cluster.name.to_string())
                    .chain(fallbacks.iter().map(|f| f.cluster.name.to_string()))
                    .collect();
                let aggregate = crate::gateway::backends::aggregate(&t, members);
                let name = aggregate.cluster.name.clone();
                sink.targets.push(aggregate);
                sink.targets.push(t);
                Some(name)
            }
            Some(t) => {
                let name = t.cluster.name.clone();
                sink.targets.push(t);
                Some(name)
            }
        };
        out.push(ir::WeightedBackend {
            cluster,
            weight,
            filters,
        });
    }
    if has_primary {
        sink.targets.extend(fallbacks);
    }
    out
}

/// gRPC needs HTTP/2 to the backend. A backend that already speaks it keeps its cluster; one whose
/// cluster speaks HTTP/1.1 or negotiates (a Service without `appProtocol`, a Backend with protocol
/// `HTTP`) gets an HTTP/2 twin — h2 over TLS, h2c (prior knowledge) in cleartext — named after it, so
/// an HTTPRoute and a GRPCRoute can use the same backend side by side.
pub fn over_http2(mut t: Target) -> Target {
    match t.cluster.protocol {
        ir::UpstreamProtocol::Http2 | ir::UpstreamProtocol::H2c => t,
        ir::UpstreamProtocol::Http1 | ir::UpstreamProtocol::Auto => {
            let cluster = std::sync::Arc::make_mut(&mut t.cluster);
            cluster.protocol = if cluster.tls.is_some() {
                ir::UpstreamProtocol::Http2
            } else {
                ir::UpstreamProtocol::H2c
            };
            cluster.name = names::http2_twin(&cluster.name).into();
            t
        }
    }
}
