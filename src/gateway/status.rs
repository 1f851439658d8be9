//! The status pier computes for each object, typed per kind in the shape Kubernetes stores it (`status`
//! of the object's own kind), without timestamps. `pier translate` prints these; the status writers of
//! the serving modes serialise them at the edge, add `lastTransitionTime` and write them back.
//!
//! The `gateway-api` crate has status types, but their conditions are k8s-openapi `Condition`s, whose
//! `lastTransitionTime` is required: a pure translator has no time to put there. These types are the
//! same shapes with typed, timestamp-free conditions.

use serde::Serialize;

use super::conditions::{
    BackendCondition, ClassCondition, GatewayCondition, ListenerCondition, PolicyCondition, RouteCondition,
};
use crate::api::consts::{GATEWAY_GROUP, KIND_GATEWAY};
use crate::model::ObjectKey;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    /// Static: every status pier writes is of a kind it knows, and the engine keeps one per object.
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: StatusMeta,
    pub status: StatusBody,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StatusMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
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
    /// HTTPRoute and GRPCRoute.
    Route { parents: Vec<RouteParentStatus> },
    /// BackendTLSPolicy.
    Policy { ancestors: Vec<PolicyAncestorStatus> },
    /// XBackend and the standard-group Backend: one entry per Gateway that uses it, in `status.ancestors`
    /// (Gateway API v1.7; v1.6.0 called the list `parents`, and a cluster with the v1.7 CRD prunes that
    /// name, so the status would silently vanish there).
    Backend { ancestors: Vec<BackendParentStatus> },
    /// Envoy Gateway's Backend: plain conditions, reported whether used or not.
    EgBackend { conditions: Vec<BackendCondition> },
}

/// `status.listeners[]` of a Gateway.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    pub name: String,
    pub attached_routes: i32,
    pub supported_kinds: Vec<RouteGroupKind>,
    pub conditions: Vec<ListenerCondition>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteGroupKind {
    pub group: &'static str,
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    pub parent_ref: ParentRef,
    pub controller_name: String,
    pub conditions: Vec<RouteCondition>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAncestorStatus {
    pub ancestor_ref: ParentRef,
    pub controller_name: String,
    pub conditions: Vec<PolicyCondition>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendParentStatus {
    pub controller_name: String,
    #[serde(rename = "ancestorRef")]
    pub parent_ref: ParentRef,
    pub conditions: Vec<BackendCondition>,
}

/// A Gateway API `ParentReference` to a Gateway (also a policy's `ancestorRef`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub group: &'static str,
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
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
            StatusBody::Route { parents } => {
                parents.shrink_to_fit();
                for p in parents.iter_mut() {
                    p.conditions.shrink_to_fit();
                }
            }
            StatusBody::Policy { ancestors } => {
                ancestors.shrink_to_fit();
                for a in ancestors.iter_mut() {
                    a.conditions.shrink_to_fit();
                }
            }
            StatusBody::Backend { ancestors } => {
                ancestors.shrink_to_fit();
                for a in ancestors.iter_mut() {
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
