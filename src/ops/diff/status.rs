//! Statuses as a flat map, to compare two translations: per object (`HTTPRoute default/web`), per scope
//! (`parent default/gw`, `listener https`, or the object itself) and condition type, the condition's
//! status, reason and message. Every status shape pier writes (`conditions`, `parents[]`,
//! `ancestors[]`, `listeners[]`) flattens the same way, so no kind needs code of its own.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// One condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cond {
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// `(scope, condition type)` → condition.
pub type Conditions = BTreeMap<(String, String), Cond>;

/// Every object's conditions, by object name (`Kind namespace/name`, the group added when it is not
/// Gateway API's own).
pub fn flatten(statuses: &Value) -> BTreeMap<String, Conditions> {
    let mut out = BTreeMap::new();
    for object in statuses.as_array().into_iter().flatten() {
        let mut conditions = Conditions::new();
        collect("", &object["status"], &mut conditions);
        out.insert(object_name(object), conditions);
    }
    out
}

pub fn object_name(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("?");
    let group = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .map(|(g, _)| g);
    let kind = match group {
        Some(g) if g != "gateway.networking.k8s.io" => format!("{kind}.{g}"),
        _ => kind.to_string(),
    };
    let meta = &object["metadata"];
    match meta["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{}", meta["name"].as_str().unwrap_or("?")),
        None => format!("{kind} {}", meta["name"].as_str().unwrap_or("?")),
    }
}

fn collect(scope: &str, v: &Value, out: &mut Conditions) {
    let Value::Object(map) = v else { return };
    for (key, value) in map {
        match (key.as_str(), value) {
            ("conditions", Value::Array(list)) => {
                for c in list {
                    let field = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    out.insert(
                        (scope.to_string(), field("type")),
                        Cond {
                            status: field("status"),
                            reason: field("reason"),
                            message: field("message"),
                        },
                    );
                }
            }
            (_, Value::Array(list)) => {
                for entry in list {
                    collect(&join(scope, &entry_scope(key, entry)), entry, out);
                }
            }
            _ => {}
        }
    }
}

/// How an entry of a status list is named: its parent or ancestor reference, or its own name.
fn entry_scope(list: &str, entry: &Value) -> String {
    let reference = entry.get("parentRef").or_else(|| entry.get("ancestorRef"));
    if let Some(r) = reference {
        let name = r["name"].as_str().unwrap_or("?");
        let ns = r["namespace"].as_str().map(|n| format!("{n}/")).unwrap_or_default();
        let section = r["sectionName"].as_str().map(|s| format!(" {s}")).unwrap_or_default();
        return format!("parent {ns}{name}{section}");
    }
    let name = entry["name"].as_str().unwrap_or("?");
    format!("{} {name}", list.trim_end_matches('s'))
}

fn join(scope: &str, more: &str) -> String {
    if scope.is_empty() {
        more.to_string()
    } else {
        format!("{scope}, {more}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_shape_flattens_to_scoped_conditions() {
        let statuses = json!([
            {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"namespace": "default", "name": "web"},
             "status": {"parents": [{"parentRef": {"name": "gw", "namespace": "default", "sectionName": "http"},
                 "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok"}]}]}},
            {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend",
             "metadata": {"namespace": "default", "name": "b"},
             "status": {"conditions": [{"type": "Accepted", "status": "False", "reason": "DestinationNotAllowed", "message": "m"}]}},
            {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
             "metadata": {"namespace": "default", "name": "gw"},
             "status": {"listeners": [{"name": "http", "conditions": [{"type": "Programmed", "status": "True", "reason": "Programmed"}]}]}}
        ]);
        let flat = flatten(&statuses);
        let keys: Vec<(&String, Vec<&(String, String)>)> = flat.iter().map(|(k, v)| (k, v.keys().collect())).collect();
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            keys,
            vec![
                (
                    &"Backend.gateway.envoyproxy.io default/b".to_string(),
                    vec![&pair("", "Accepted")]
                ),
                (
                    &"Gateway default/gw".to_string(),
                    vec![&pair("listener http", "Programmed")]
                ),
                (
                    &"HTTPRoute default/web".to_string(),
                    vec![&pair("parent default/gw http", "Accepted")]
                ),
            ]
        );
        assert_eq!(
            flat["Backend.gateway.envoyproxy.io default/b"][&pair("", "Accepted")].reason,
            "DestinationNotAllowed"
        );
    }
}
