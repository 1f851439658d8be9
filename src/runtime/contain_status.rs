//! The statuses of quarantined objects (`runtime::contain`): the translator computed statuses for the
//! model actually served, where a quarantined object has its last applied version or is absent; this
//! puts on top, for the version the user wrote, `Accepted=False` with reason `RejectedByProxy` and
//! Envoy's message. Routes, Backends and BackendTLSPolicies carry it on every parent; a Gateway
//! carries it on `Programmed`. A new route gets an entry per parentRef; kinds with no status of
//! their own (Services, Secrets, EndpointSlices, …) are shown in `/debug/status` only.

use std::sync::Arc;

use super::contain::Quarantined;
use crate::api::consts::{EG_GROUP, KIND_GRPCROUTE, KIND_HTTPROUTE};
use crate::gateway::conditions::{
    BackendReason, BackendType, Condition, GatewayReason, GatewayType, PolicyReason, PolicyType, RouteReason, RouteType,
};
use crate::gateway::spec::{self, RouteKind};
use crate::gateway::status::{ObjectStatus, ParentRef, RouteParentStatus, StatusBody, StatusMeta};
use crate::model::{Kind, Model, ObjectKey};
use crate::snapshot::StatusSet;

/// `statuses` with every quarantined object's status saying why it is not served as written.
pub fn overlay(statuses: &StatusSet, quarantined: &[&Quarantined], controller: &str) -> StatusSet {
    let mut out = statuses.clone();
    for q in quarantined {
        let (kind, key) = &q.id;
        let generation = generation(&q.bad, *kind, key);
        let message = message(q, generation);
        let found = out
            .iter()
            .find(|(k, _)| {
                k.0 == kind_name(*kind) && (k.1.starts_with(EG_GROUP) == (*kind == Kind::EgBackend)) && k.2 == meta(key)
            })
            .map(|(k, v)| (k.clone(), v.clone()));
        let status = match found {
            Some((k, old)) => {
                out.remove(&k);
                Some(mark((*old).clone(), &message, generation))
            }
            None => new_route_status(q, &message, generation, controller),
        };
        if let Some(status) = status {
            out.insert(status.sort_key(), Arc::new(status));
        }
    }
    out
}

fn message(q: &Quarantined, generation: i64) -> String {
    let served = if q.previous_served {
        "proxies keep its last accepted version"
    } else {
        "it is not served"
    };
    format!(
        "quarantined: a proxy of Gateway {} rejected the configuration built from generation {generation} of this object ({served} until it changes): {}",
        q.rejection.gateway, q.rejection.message
    )
}

fn mark(mut status: ObjectStatus, message: &str, generation: i64) -> ObjectStatus {
    let message = message.to_string();
    let route = || {
        Condition::fail(
            RouteType::Accepted,
            RouteReason::RejectedByProxy,
            message.clone(),
            generation,
        )
    };
    let backend = || {
        Condition::fail(
            BackendType::Accepted,
            BackendReason::RejectedByProxy,
            message.clone(),
            generation,
        )
    };
    let policy = || {
        Condition::fail(
            PolicyType::Accepted,
            PolicyReason::RejectedByProxy,
            message.clone(),
            generation,
        )
    };
    match &mut status.status {
        StatusBody::Route { parents } => Arc::make_mut(parents)
            .iter_mut()
            .for_each(|p| replace(&mut p.conditions, route())),
        StatusBody::Backend { ancestors } => Arc::make_mut(ancestors)
            .iter_mut()
            .for_each(|p| replace(&mut p.conditions, backend())),
        StatusBody::EgBackend { conditions } => replace(conditions, backend()),
        StatusBody::Policy { ancestors } => Arc::make_mut(ancestors)
            .iter_mut()
            .for_each(|a| replace(&mut a.conditions, policy())),
        StatusBody::Gateway { conditions, .. } => replace(
            conditions,
            Condition::fail(GatewayType::Programmed, GatewayReason::Invalid, message, generation),
        ),
        StatusBody::GatewayClass { .. } => {}
    }
    status
}

/// Puts `condition` in place of the one of its type (or adds it).
fn replace<T: PartialEq + Copy, R>(conditions: &mut Vec<Condition<T, R>>, condition: Condition<T, R>) {
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}

/// A route pier never served: one entry per parentRef it names.
fn new_route_status(q: &Quarantined, message: &str, generation: i64, controller: &str) -> Option<ObjectStatus> {
    let (kind, key) = &q.id;
    let spec = match kind {
        Kind::HttpRoute => spec::http::route(
            key,
            q.bad.http_routes.peek(key)?,
            q.bad.http_route_extras.peek(key).map(|e| &**e),
        ),
        Kind::GrpcRoute => spec::grpc::route(key, q.bad.grpc_routes.peek(key)?),
        _ => return None,
    };
    let parents = spec
        .parent_refs
        .iter()
        .map(|p| {
            let gw = ObjectKey::new(
                p.namespace.clone().unwrap_or_else(|| key.namespace.to_string()),
                &p.name,
            );
            RouteParentStatus {
                parent_ref: ParentRef::gateway(&gw, p.section_name.as_deref(), p.port),
                controller_name: crate::model::Name::new(controller),
                conditions: vec![Condition::fail(
                    RouteType::Accepted,
                    RouteReason::RejectedByProxy,
                    message.to_string(),
                    generation,
                )],
            }
        })
        .collect();
    let kind_name = if spec.kind == RouteKind::Http {
        KIND_HTTPROUTE
    } else {
        KIND_GRPCROUTE
    };
    Some(ObjectStatus::new(
        "gateway.networking.k8s.io/v1",
        kind_name,
        key,
        StatusBody::Route { parents },
    ))
}

fn meta(key: &ObjectKey) -> StatusMeta {
    StatusMeta {
        namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
        name: key.name.clone(),
    }
}

/// The kind name statuses are filed under.
fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::GatewayClass => "GatewayClass",
        Kind::Gateway => "Gateway",
        Kind::HttpRoute | Kind::HttpRouteExtras => KIND_HTTPROUTE,
        Kind::GrpcRoute => KIND_GRPCROUTE,
        Kind::BackendTlsPolicy => "BackendTLSPolicy",
        Kind::XBackend => "XBackend",
        Kind::Backend | Kind::EgBackend => "Backend",
        _ => "",
    }
}

/// `metadata.generation` of the object in `model` (0 when unset, as files often leave it).
fn generation(model: &Model, kind: Kind, key: &ObjectKey) -> i64 {
    let generation = match kind {
        Kind::GatewayClass => model.gateway_classes.peek(key).map(|o| o.metadata.generation),
        Kind::Gateway => model.gateways.peek(key).map(|o| o.metadata.generation),
        Kind::HttpRoute | Kind::HttpRouteExtras => model.http_routes.peek(key).map(|o| o.metadata.generation),
        Kind::GrpcRoute => model.grpc_routes.peek(key).map(|o| o.metadata.generation),
        Kind::BackendTlsPolicy => model
            .backend_tls_policies
            .peek(key)
            .map(|o| o.policy.metadata.generation),
        Kind::XBackend => model.xbackends.peek(key).map(|o| o.metadata.generation),
        Kind::Backend => model.backends.peek(key).map(|o| o.metadata.generation),
        Kind::EgBackend => model.eg_backends.peek(key).map(|o| o.metadata.generation),
        _ => None,
    };
    generation.flatten().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::load;
    use crate::options::Options;
    use crate::runtime::contain::Rejection;

    const GATEWAY: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: pier
  listeners: [{name: http, protocol: HTTP, port: 8080}]
";

    fn route(name: &str, generation: i64) -> String {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: ns, generation: {generation}}}\nspec: {{parentRefs: [{{name: gw, sectionName: http}}]}}\n"
        )
    }

    fn model(yaml: &str) -> Model {
        load::parse_texts(&[("t.yaml".into(), yaml.into())])
            .expect("loads")
            .model
    }

    fn quarantined(name: &str, bad: Model, previous_served: bool) -> Quarantined {
        Quarantined {
            id: (Kind::HttpRoute, ObjectKey::new("ns", name)),
            bad,
            rejection: Rejection {
                gateway: "ns/gw".into(),
                type_url: "routes".into(),
                message: "RE2 program size of 106 > max program size of 100".into(),
            },
            previous_served,
        }
    }

    fn route_conditions(set: &StatusSet, name: &str) -> Vec<serde_json::Value> {
        let status = set
            .values()
            .find(|s| s.kind == "HTTPRoute" && s.metadata.name == name)
            .expect("a status");
        let json = status.status_json();
        json["parents"][0]["conditions"].as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn a_quarantined_route_says_why_whether_or_not_an_older_version_serves() {
        let served = model(&format!("{GATEWAY}{}", route("kept", 1)));
        let statuses: StatusSet = crate::translate::translate(&served, &Options::default())
            .statuses
            .into_iter()
            .map(|s| (s.sort_key(), Arc::new(s)))
            .collect();
        let bad = model(&format!("{GATEWAY}{}{}", route("kept", 2), route("new", 1)));
        let q = [quarantined("kept", bad.clone(), true), quarantined("new", bad, false)];
        let out = overlay(&statuses, &q.iter().collect::<Vec<_>>(), "pier.dev/gateway-controller");

        let kept = route_conditions(&out, "kept");
        let accepted = kept.iter().find(|c| c["type"] == "Accepted").expect("Accepted");
        assert_eq!(accepted["status"], "False");
        assert_eq!(accepted["reason"], "RejectedByProxy");
        assert_eq!(accepted["observedGeneration"], 2, "about the version the user wrote");
        let message = accepted["message"].as_str().unwrap();
        assert!(message.contains("keep its last accepted version") && message.contains("RE2 program size"));
        assert!(
            kept.iter().any(|c| c["type"] == "ResolvedRefs"),
            "the other conditions stay"
        );

        let new = route_conditions(&out, "new");
        assert_eq!(new.len(), 1);
        assert_eq!(new[0]["reason"], "RejectedByProxy");
        assert!(new[0]["message"].as_str().unwrap().contains("it is not served"));
        assert_eq!(out.len(), statuses.len() + 1);
    }
}
