//! The status pier computes for each object, in the shape Kubernetes stores it (`status` of the
//! object's own kind), without timestamps. `pier translate` prints these; the status writers of the
//! serving modes add `lastTransitionTime` and write them back.

use serde::Serialize;
use serde_json::{Value, json};

use super::conditions::Condition;
use crate::model::ObjectKey;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    pub api_version: String,
    pub kind: String,
    pub metadata: StatusMeta,
    pub status: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StatusMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectStatus {
    pub fn new(api_version: &str, kind: &str, key: &ObjectKey, status: Value) -> Self {
        Self {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            metadata: StatusMeta {
                namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
                name: key.name.clone(),
            },
            status,
        }
    }

    /// Output order: by kind, then namespace/name.
    pub fn sort_key(&self) -> (String, String, StatusMeta) {
        (self.kind.clone(), self.api_version.clone(), self.metadata.clone())
    }
}

/// A Gateway API `ParentReference` to a Gateway (also used as a policy `ancestorRef`).
pub fn gateway_ref(gw: &ObjectKey, section: Option<&str>, port: Option<i32>) -> Value {
    let mut v = json!({
        "group": crate::api::consts::GATEWAY_GROUP,
        "kind": crate::api::consts::KIND_GATEWAY,
        "namespace": gw.namespace,
        "name": gw.name,
    });
    if let Some(s) = section {
        v["sectionName"] = json!(s);
    }
    if let Some(p) = port {
        v["port"] = json!(p);
    }
    v
}

pub fn conditions(cs: &[Condition]) -> Value {
    serde_json::to_value(cs).expect("conditions serialize")
}
