//! The status pier computes for each object, typed per kind in the shape Kubernetes stores it (`status`
//! of the object's own kind), without timestamps. `pier translate` prints these; the status writers of
//! the serving modes serialise them at the edge, add `lastTransitionTime` and write them back.
//!
//! The `gateway-api` crate has status types, but their conditions are k8s-openapi `Condition`s, whose
//! `lastTransitionTime` is required: a pure translator has no time to put there. These types are the
//! same shapes with typed, timestamp-free conditions.

use std::sync::Arc;

use serde::Serialize;

use super::conditions::{
    BackendCondition, ClassCondition, GatewayCondition, ListenerCondition, PolicyCondition, RouteCondition,
};
use crate::api::consts::{GATEWAY_GROUP, KIND_GATEWAY};
use crate::model::{Name, ObjectKey};

/// Every status type declares its fields in the order of their serialized names, so that a status is
/// written with sorted keys, as its JSON value holds them, without building the value (`pier
/// translate` writes thousands); a test below holds each kind to its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    /// Static: every status pier writes is of a kind it knows, and the engine keeps one per object.
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: StatusMeta,
    pub status: StatusBody,
}

/// Ordered by namespace, then name (the output's order); serialized name first, as the keys sort.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StatusMeta {
    pub namespace: Option<Name>,
    pub name: Name,
}

impl Serialize for StatusMeta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut meta = s.serialize_struct("StatusMeta", 1 + usize::from(self.namespace.is_some()))?;
        meta.serialize_field("name", &self.name)?;
        if let Some(namespace) = &self.namespace {
            meta.serialize_field("namespace", namespace)?;
        }
        meta.end()
    }
}

/// The `status` of one object, by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StatusBody {
    GatewayClass {
        conditions: Vec<ClassCondition>,
        /// Only on an accepted class (`gateway::features`).
        #[serde(rename = "supportedFeatures", skip_serializing_if = "Vec::is_empty")]
        supported_features: Vec<super::features::SupportedFeature>,
    },
    Gateway {
        conditions: Vec<GatewayCondition>,
        listeners: Vec<ListenerStatus>,
    },
    /// HTTPRoute and GRPCRoute. Shared with the engine's route slot when they are the same list.
    Route { parents: Arc<[RouteParentStatus]> },
    /// BackendTLSPolicy. Shared with the statuses of other policies whose list is the same
    /// (`engine::status`).
    Policy { ancestors: Arc<[PolicyAncestorStatus]> },
    /// XBackend and the standard-group Backend: one entry per Gateway that uses it, in `status.ancestors`
    /// (Gateway API v1.7; v1.6.0 called the list `parents`, and a cluster with the v1.7 CRD prunes that
    /// name, so the status would silently vanish there).
    /// Shared with the statuses of other Backends whose list is the same (`engine::status`).
    Backend { ancestors: Arc<[BackendParentStatus]> },
    /// Envoy Gateway's Backend: plain conditions, reported whether used or not.
    EgBackend { conditions: Vec<BackendCondition> },
}

/// `status.listeners[]` of a Gateway.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    pub attached_routes: i32,
    pub conditions: Vec<ListenerCondition>,
    pub name: String,
    pub supported_kinds: Vec<RouteGroupKind>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteGroupKind {
    pub group: &'static str,
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    pub conditions: Vec<RouteCondition>,
    pub controller_name: Name,
    pub parent_ref: ParentRef,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAncestorStatus {
    pub ancestor_ref: ParentRef,
    pub conditions: Vec<PolicyCondition>,
    pub controller_name: Name,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendParentStatus {
    #[serde(rename = "ancestorRef")]
    pub parent_ref: ParentRef,
    pub conditions: Vec<BackendCondition>,
    pub controller_name: Name,
}

/// A Gateway API `ParentReference` to a Gateway (also a policy's `ancestorRef`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub group: &'static str,
    pub kind: &'static str,
    pub name: Name,
    pub namespace: Name,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
}

impl ParentRef {
    pub fn gateway(gw: &ObjectKey, section: Option<&str>, port: Option<i32>) -> Self {
        Self {
            group: GATEWAY_GROUP,
            kind: KIND_GATEWAY,
            namespace: gw.namespace.clone(),
            name: gw.name.clone(),
            section_name: section.map(str::to_string),
            port,
        }
    }
}

impl ObjectStatus {
    pub fn new(api_version: &'static str, kind: &'static str, key: &ObjectKey, status: StatusBody) -> Self {
        Self {
            api_version,
            kind,
            metadata: StatusMeta {
                namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
                name: key.name.clone(),
            },
            status,
        }
    }

    /// Drops spare vector room. The engine keeps every status until its object changes, and a vector
    /// built by pushing holds room for four entries where most statuses have one parent and two
    /// conditions.
    pub fn compact(&mut self) {
        match &mut self.status {
            StatusBody::GatewayClass {
                conditions,
                supported_features,
            } => {
                conditions.shrink_to_fit();
                supported_features.shrink_to_fit();
            }
            StatusBody::Gateway { conditions, listeners } => {
                conditions.shrink_to_fit();
                listeners.shrink_to_fit();
                for l in listeners {
                    l.conditions.shrink_to_fit();
                    l.supported_kinds.shrink_to_fit();
                }
            }
            // Built exact; a list still shared with the engine's slot is left as it is.
            StatusBody::Route { parents } => {
                for p in Arc::get_mut(parents).into_iter().flatten() {
                    p.conditions.shrink_to_fit();
                }
            }
            // Built exact; a list already shared with another object's status is left as it is.
            StatusBody::Policy { ancestors } => {
                for a in Arc::get_mut(ancestors).into_iter().flatten() {
                    a.conditions.shrink_to_fit();
                }
            }
            StatusBody::Backend { ancestors } => {
                for a in Arc::get_mut(ancestors).into_iter().flatten() {
                    a.conditions.shrink_to_fit();
                }
            }
            StatusBody::EgBackend { conditions } => conditions.shrink_to_fit(),
        }
    }

    /// Output order: by kind, then namespace/name.
    pub fn sort_key(&self) -> (&'static str, &'static str, StatusMeta) {
        (self.kind, self.api_version, self.metadata.clone())
    }

    /// The status as JSON, the form the writers merge and store.
    pub fn status_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.status).expect("statuses serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::super::conditions::*;
    use super::*;

    fn key(namespace: &str) -> ObjectKey {
        ObjectKey::new(namespace, "n")
    }

    /// Every kind of status, with every optional field both set and not.
    fn statuses() -> Vec<ObjectStatus> {
        let gw = |section: Option<&str>, port| ParentRef::gateway(&key("ns"), section, port);
        let bodies = [
            StatusBody::GatewayClass {
                conditions: vec![Condition::ok(ClassType::Accepted, ClassReason::Accepted, "fine", 1)],
                supported_features: crate::gateway::features::supported(),
            },
            StatusBody::GatewayClass {
                conditions: vec![],
                supported_features: vec![],
            },
            StatusBody::Gateway {
                conditions: vec![Condition::fail(
                    GatewayType::Programmed,
                    GatewayReason::Invalid,
                    "no",
                    2,
                )],
                listeners: vec![ListenerStatus {
                    attached_routes: 3,
                    conditions: vec![Condition::ok(ListenerType::Accepted, ListenerReason::Accepted, "ok", 2)],
                    name: "http".into(),
                    supported_kinds: vec![RouteGroupKind {
                        group: GATEWAY_GROUP,
                        kind: "HTTPRoute".into(),
                    }],
                }],
            },
            StatusBody::Route {
                parents: Arc::new([RouteParentStatus {
                    conditions: vec![Condition::ok(RouteType::Accepted, RouteReason::Accepted, "ok", 4)],
                    controller_name: "pier".into(),
                    parent_ref: gw(Some("http"), Some(80)),
                }]),
            },
            StatusBody::Policy {
                ancestors: Arc::new([PolicyAncestorStatus {
                    ancestor_ref: gw(None, None),
                    conditions: vec![Condition::ok(PolicyType::Accepted, PolicyReason::Accepted, "ok", 5)],
                    controller_name: "pier".into(),
                }]),
            },
            StatusBody::Backend {
                ancestors: Arc::new([BackendParentStatus {
                    parent_ref: gw(Some("https"), None),
                    conditions: vec![Condition::ok(BackendType::Accepted, BackendReason::Accepted, "ok", 6)],
                    controller_name: "pier".into(),
                }]),
            },
            StatusBody::EgBackend {
                conditions: vec![Condition::fail(BackendType::Accepted, BackendReason::Accepted, "x", -1)],
            },
        ];
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| ObjectStatus::new("v1", "Kind", &key(if i % 2 == 0 { "ns" } else { "" }), body))
            .collect()
    }

    /// `pier translate` writes statuses as they are, and its document must equal their values written
    /// (whose keys are sorted): every type declares its fields in that order.
    #[test]
    fn every_status_is_written_with_its_keys_sorted() {
        for status in statuses() {
            let value = serde_json::to_value(&status).expect("serializes");
            assert_eq!(
                serde_json::to_string(&status).expect("serializes"),
                value.to_string(),
                "{status:?}"
            );
        }
    }
}
