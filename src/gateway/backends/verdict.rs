//! A Backend's own conditions from its evaluation: `Accepted`, `ResolvedRefs` and, for the draft shape
//! and the v1.6.0 `spec.port.port`, `Deprecated`, and their `status`. The first problem of each type gives the reason; every message is
//! kept.

use super::{Deprecation, Evaluated, References};
use crate::gateway::MAX_ROUTE_PARENTS;
use crate::gateway::conditions::{BackendCondition, BackendProblem, BackendReason, BackendType, Condition};
use crate::gateway::status::{BackendParentStatus, ObjectStatus, ParentRef, StatusBody};
use crate::ir::names::BackendKind;
use crate::model::ObjectKey;

/// Conditions of an evaluated Backend, with `extra`: a problem it has for one Gateway only.
pub fn conditions_of(ev: &Evaluated, extra: Option<&BackendProblem>) -> Vec<BackendCondition> {
    let g = ev.generation;
    let problems: Vec<&BackendProblem> = ev.problems.iter().chain(extra).collect();
    let usable = ev.usable.is_some() && extra.is_none();
    let of = |ty: BackendType| -> Vec<&BackendProblem> { problems.iter().copied().filter(|p| p.type_ == ty).collect() };
    let join = |ps: &[&BackendProblem]| ps.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ");
    let refs = of(BackendType::ResolvedRefs);
    let accepted = of(BackendType::Accepted);
    let accepted_message: std::borrow::Cow<'static, str> = if ev.notes.is_empty() {
        "Backend accepted".into()
    } else {
        format!("Backend accepted ({})", ev.notes.join("; ")).into()
    };
    let mut out = vec![match (accepted.first(), usable, refs.first()) {
        (Some(p), _, _) => Condition::fail(BackendType::Accepted, p.reason, join(&accepted), g),
        (None, false, Some(_)) => Condition::fail(
            BackendType::Accepted,
            BackendReason::UnresolvedRefs,
            format!("references did not resolve: {}", join(&refs)),
            g,
        ),
        _ => Condition::ok(BackendType::Accepted, BackendReason::Accepted, accepted_message, g),
    }];
    out.push(match refs.first() {
        Some(p) => Condition::fail(BackendType::ResolvedRefs, p.reason, join(&refs), g),
        None => Condition::ok(
            BackendType::ResolvedRefs,
            BackendReason::ResolvedRefs,
            "All references resolved",
            g,
        ),
    });
    out.extend(super::resolved::condition(&ev.resolved, g));
    match ev.deprecated {
        Some(Deprecation::DraftShape) => out.push(Condition::ok(
            BackendType::Deprecated,
            BackendReason::DraftShape,
            "spec.destination is the draft Backend shape; write the GEP-4488 shape (spec.type, spec.port, spec.externalHostname, spec.tls) instead",
            g,
        )),
        Some(Deprecation::PortPortShape) => out.push(Condition::ok(
            BackendType::Deprecated,
            BackendReason::PortPortShape,
            "spec.port.port is the Gateway API v1.6.0 shape; write spec.port.number instead (and leave backendRef.port unset)",
            g,
        )),
        None => {}
    }
    out
}

/// The `apiVersion` and kind a Backend's status is written as; a Service has none of pier's.
pub fn status_identity(kind: BackendKind) -> Option<(&'static str, &'static str)> {
    match kind {
        BackendKind::XBackend => Some(("gateway.networking.x-k8s.io/v1alpha1", "XBackend")),
        BackendKind::Backend => Some(("gateway.networking.k8s.io/v1alpha1", "Backend")),
        BackendKind::EgBackend => Some(("gateway.envoyproxy.io/v1alpha1", "Backend")),
        BackendKind::Service => None,
    }
}

/// The `status` of one evaluated Backend, if it has one (an unused XBackend or Backend has none).
pub fn status_of(
    kind: BackendKind,
    key: &ObjectKey,
    ev: &Evaluated,
    refs: &References,
    controller: &str,
) -> Option<ObjectStatus> {
    let (api, kind_name) = status_identity(kind)?;
    if kind == BackendKind::EgBackend {
        let mut conditions = conditions_of(ev, None);
        conditions.retain(|c| matches!(c.type_, BackendType::Accepted | BackendType::Resolved));
        let body = StatusBody::EgBackend { conditions };
        return Some(ObjectStatus::new(api, kind_name, key, body));
    }
    let gateways = refs.referenced_by.get(&(kind, key.clone()))?;
    let parents = gateways
        .keys()
        .take(MAX_ROUTE_PARENTS)
        .map(|gw| BackendParentStatus {
            controller_name: crate::model::Name::new(controller),
            parent_ref: ParentRef::gateway(gw, None, None),
            conditions: conditions_of(ev, refs.parent_problem(kind, key, gw)),
        })
        .collect();
    Some(ObjectStatus::new(
        api,
        kind_name,
        key,
        StatusBody::Backend { ancestors: parents },
    ))
}
