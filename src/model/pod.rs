//! Pods, as pier keeps them: only what an EndpointSelector Backend reads — labels, `status.podIPs` /
//! `status.podIP`, the `Ready` condition and `metadata.deletionTimestamp`. A Pod's spec and the rest of
//! its status are large and churn (every probe result, every container restart), so they are dropped
//! before the object is typed, by the one parser both sources use: a Pod change that pier does not read
//! then compares equal and costs nothing downstream.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value};

/// Metadata fields kept; the rest (annotations, owner references, finalizers, managed fields) go.
const METADATA: &[&str] = &[
    "name",
    "namespace",
    "labels",
    "deletionTimestamp",
    "creationTimestamp",
    "uid",
    "resourceVersion",
];

/// `value` (a Pod document) with only the fields pier reads.
pub fn trim(value: Value) -> Value {
    let Value::Object(mut doc) = value else {
        return value;
    };
    let mut out = Map::new();
    for k in ["apiVersion", "kind"] {
        if let Some(v) = doc.remove(k) {
            out.insert(k.into(), v);
        }
    }
    if let Some(Value::Object(mut meta)) = doc.remove("metadata") {
        let kept: Map<String, Value> = METADATA
            .iter()
            .filter_map(|k| Some(((*k).to_string(), meta.remove(*k)?)))
            .collect();
        out.insert("metadata".into(), Value::Object(kept));
    }
    if let Some(Value::Object(mut status)) = doc.remove("status") {
        let mut kept = Map::new();
        for k in ["podIP", "podIPs"] {
            if let Some(v) = status.remove(k) {
                kept.insert(k.into(), v);
            }
        }
        if let Some(Value::Array(conds)) = status.remove("conditions") {
            let ready: Vec<Value> = conds
                .into_iter()
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
                .map(|c| {
                    let mut m = Map::new();
                    for k in ["type", "status"] {
                        if let Some(v) = c.get(k) {
                            m.insert(k.into(), v.clone());
                        }
                    }
                    Value::Object(m)
                })
                .collect();
            kept.insert("conditions".into(), Value::Array(ready));
        }
        out.insert("status".into(), Value::Object(kept));
    }
    Value::Object(out)
}

/// Ready (`Ready=True`) and not being deleted: a Pod that may take new traffic.
pub fn serving(pod: &Pod) -> bool {
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    ready && pod.metadata.deletion_timestamp.is_none()
}

/// The Pod's IPs: `status.podIPs`, else `status.podIP` (older API servers and hand-written files).
pub fn ips(pod: &Pod) -> Vec<&str> {
    let Some(status) = pod.status.as_ref() else {
        return Vec::new();
    };
    let listed: Vec<&str> = status.pod_ips.iter().flatten().map(|p| p.ip.as_str()).collect();
    if listed.is_empty() {
        status.pod_ip.as_deref().into_iter().collect()
    } else {
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_keeps_what_pier_reads_and_nothing_else() {
        let v = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"}, "annotations": {"x": "y"},
                         "ownerReferences": [{"kind": "ReplicaSet"}]},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null},
                                      {"type": "PodScheduled", "status": "True"}],
                       "containerStatuses": [{"name": "c"}]}
        });
        let t = trim(v);
        assert_eq!(
            t,
            serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"}},
                "status": {"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                           "conditions": [{"type": "Ready", "status": "True"}]}
            })
        );
        let pod: Pod = serde_json::from_value(t).unwrap();
        assert!(serving(&pod));
        assert_eq!(ips(&pod), ["10.0.0.1"]);
    }
}
