//! Pure status merging: what pier writes into an object's existing `status`, given what the translator
//! computed. No I/O, no clock (the caller passes `now`).
//!
//! - Shared lists (`status.parents` of routes, `status.ancestors` of policies and Backends) belong to
//!   every controller: entries with another `controllerName` are kept as they are, in their order; pier's
//!   own entries are replaced by the computed ones.
//! - Other fields (`conditions`, `listeners`, ...) of objects pier owns are replaced by the computed
//!   ones; fields pier does not compute are kept.
//! - `lastTransitionTime` is carried over from the existing condition of the same type (in the same
//!   list entry or listener) when its `status` did not change, and is `now` otherwise, so an unchanged
//!   status merges to exactly the existing one and the write can be skipped.

use serde_json::{Map, Value, json};

/// Lists shared between controllers, keyed by the reference each entry carries.
const SHARED: &[(&str, &str)] = &[("parents", "parentRef"), ("ancestors", "ancestorRef")];

/// pier's condition on a Gateway whose configuration a connected Envoy rejected (NACKed).
pub const ENVOY_REJECTED: &str = "pier.dev/EnvoyRejected";

/// The new status: `current` (the object's status now, `Null` if none) with pier's part replaced by
/// `desired`.
pub fn merge(current: &Value, desired: &Value, controller: &str, now: &str) -> Value {
    let mut out = current.as_object().cloned().unwrap_or_default();
    let Some(desired) = desired.as_object() else {
        return Value::Object(out);
    };
    // A Backend's list was `parents` before v1.7 and is `ancestors` now: pier's own entries under the
    // old name go (other controllers' stay), so no stale entry of pier's survives the rename.
    if desired.contains_key("ancestors")
        && !desired.contains_key("parents")
        && let Some(Value::Array(old)) = out.get_mut("parents")
    {
        old.retain(|e| e.get("controllerName").and_then(Value::as_str) != Some(controller));
        if old.is_empty() {
            out.remove("parents");
        }
    }
    for (field, value) in desired {
        let old = current.get(field).unwrap_or(&Value::Null);
        let merged = if let Some((_, ref_key)) = SHARED.iter().find(|(f, _)| f == field) {
            merge_shared(old, value, ref_key, controller, now)
        } else if field == "conditions" {
            conditions(old, value, now)
        } else if field == "listeners" {
            keyed(old, value, "name", now)
        } else {
            value.clone()
        };
        out.insert(field.clone(), merged);
    }
    Value::Object(out)
}

fn merge_shared(old: &Value, new: &Value, ref_key: &str, controller: &str, now: &str) -> Value {
    let old_items = old.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out: Vec<Value> = old_items
        .iter()
        .filter(|e| e.get("controllerName").and_then(Value::as_str) != Some(controller))
        .cloned()
        .collect();
    for entry in new.as_array().map(Vec::as_slice).unwrap_or_default() {
        let previous = old_items.iter().find(|e| {
            e.get("controllerName").and_then(Value::as_str) == Some(controller) && e.get(ref_key) == entry.get(ref_key)
        });
        out.push(entry_with_times(previous, entry, now));
    }
    Value::Array(out)
}

/// Lists of objects with their own `conditions`, matched by `key` (listeners by name).
fn keyed(old: &Value, new: &Value, key: &str, now: &str) -> Value {
    let old_items = old.as_array().map(Vec::as_slice).unwrap_or_default();
    let out = new
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|entry| {
            let previous = old_items.iter().find(|e| e.get(key) == entry.get(key));
            entry_with_times(previous, entry, now)
        })
        .collect();
    Value::Array(out)
}

fn entry_with_times(previous: Option<&Value>, entry: &Value, now: &str) -> Value {
    let mut entry = entry.clone();
    if let Some(conds) = entry.get("conditions") {
        let old = previous.and_then(|p| p.get("conditions")).unwrap_or(&Value::Null);
        entry["conditions"] = conditions(old, conds, now);
    }
    entry
}

fn conditions(old: &Value, new: &Value, now: &str) -> Value {
    let old_items = old.as_array().map(Vec::as_slice).unwrap_or_default();
    let out = new
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let mut c = c.clone();
            let same = old_items
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"));
            let time = same
                .and_then(|o| o.get("lastTransitionTime"))
                .cloned()
                .unwrap_or_else(|| Value::String(now.to_string()));
            if let Some(m) = c.as_object_mut() {
                m.insert("lastTransitionTime".into(), time);
            }
            c
        })
        .collect();
    Value::Array(out)
}

/// Adds pier's [`ENVOY_REJECTED`] condition to a Gateway's computed status: `True` naming each
/// rejected resource type and Envoy's message while a connected proxy rejects the configuration,
/// `False` otherwise.
pub fn with_rejections(mut status: Value, nacks: &[(String, String)]) -> Value {
    let generation = status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find_map(|c| c.get("observedGeneration").cloned()));
    let condition = if nacks.is_empty() {
        json!({"type": ENVOY_REJECTED, "status": "False", "reason": "Accepted",
               "message": "no connected Envoy rejects this Gateway's configuration"})
    } else {
        let message = nacks
            .iter()
            .map(|(type_url, msg)| format!("Envoy rejected {type_url}: {msg}"))
            .collect::<Vec<_>>()
            .join("; ");
        json!({"type": ENVOY_REJECTED, "status": "True", "reason": "Rejected", "message": truncate(message, 32 * 1024)})
    };
    let mut condition = condition;
    if let Some(g) = generation {
        condition["observedGeneration"] = g;
    }
    match status.get_mut("conditions").and_then(Value::as_array_mut) {
        Some(cs) => cs.push(condition),
        None => status["conditions"] = json!([condition]),
    }
    status
}

/// Condition messages are limited to 32768 bytes by the API server.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// `status` with pier's entries removed from its shared lists: what pier writes for an object whose
/// status it computed before and no longer does (the route left pier's Gateways).
pub fn only_shared_fields(previous: &Value) -> Value {
    let mut out = Map::new();
    for (field, _) in SHARED {
        if previous.get(*field).is_some() {
            out.insert((*field).to_string(), json!([]));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "pier.dev/gateway-controller";

    fn cond(t: &str, s: &str, time: Option<&str>) -> Value {
        let mut c = json!({"type": t, "status": s, "reason": "R", "message": "m"});
        if let Some(time) = time {
            c["lastTransitionTime"] = json!(time);
        }
        c
    }

    #[test]
    fn route_parents_keep_other_controllers_and_carry_transition_times() {
        let gw = json!({"name": "gw"});
        let current = json!({"parents": [
            {"controllerName": "other.io/ctl", "parentRef": gw, "conditions": [cond("Accepted", "False", Some("T0"))]},
            {"controllerName": ME, "parentRef": gw, "conditions": [cond("Accepted", "True", Some("T1")), cond("ResolvedRefs", "True", Some("T1"))]},
        ]});
        let desired = json!({"parents": [
            {"controllerName": ME, "parentRef": gw, "conditions": [cond("Accepted", "True", None), cond("ResolvedRefs", "False", None)]},
        ]});
        let merged = merge(&current, &desired, ME, "T2");
        assert_eq!(
            merged["parents"][0], current["parents"][0],
            "the other controller's entry is untouched"
        );
        let mine = &merged["parents"][1]["conditions"];
        assert_eq!(mine[0]["lastTransitionTime"], "T1", "unchanged status keeps its time");
        assert_eq!(mine[1]["lastTransitionTime"], "T2", "changed status gets now");
        // Merging the result again changes nothing: the writer skips that write.
        assert_eq!(merge(&merged, &desired, ME, "T3"), merged);
        // Leaving: only the other controller's entry stays.
        let gone = merge(&merged, &only_shared_fields(&desired), ME, "T3");
        assert_eq!(gone["parents"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn owned_status_replaces_conditions_and_listeners_and_adds_rejections() {
        let current = json!({"addresses": [{"value": "1.2.3.4"}], "conditions": [cond("Accepted", "True", Some("T1"))],
            "listeners": [{"name": "http", "attachedRoutes": 1, "conditions": [cond("Programmed", "True", Some("T1"))]}]});
        let desired = json!({"conditions": [cond("Accepted", "True", None)],
            "listeners": [{"name": "http", "attachedRoutes": 2, "conditions": [cond("Programmed", "True", None)]}]});
        let desired = with_rejections(
            desired,
            &[(
                "type.googleapis.com/envoy.config.cluster.v3.Cluster".into(),
                "bad cluster x".into(),
            )],
        );
        let merged = merge(&current, &desired, ME, "T2");
        assert_eq!(merged["addresses"], current["addresses"]);
        assert_eq!(merged["listeners"][0]["attachedRoutes"], 2);
        assert_eq!(merged["listeners"][0]["conditions"][0]["lastTransitionTime"], "T1");
        let rejected = &merged["conditions"][1];
        assert_eq!(rejected["type"], ENVOY_REJECTED);
        assert_eq!(rejected["status"], "True");
        assert!(rejected["message"].as_str().unwrap().contains("Cluster: bad cluster x"));
        assert_eq!(rejected["lastTransitionTime"], "T2");
    }

    #[test]
    fn a_backend_status_moves_from_parents_to_ancestors_keeping_other_controllers() {
        let gw = json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "ns", "name": "gw"});
        let current = json!({"parents": [
            {"controllerName": "other.io/ctl", "parentRef": gw, "conditions": []},
            {"controllerName": ME, "parentRef": gw, "conditions": [cond("Accepted", "True", Some("T1"))]},
        ]});
        let desired = json!({"ancestors": [{"controllerName": ME, "ancestorRef": gw, "conditions": [cond("Accepted", "True", None)]}]});
        let merged = merge(&current, &desired, ME, "T2");
        assert_eq!(merged["parents"].as_array().unwrap().len(), 1, "{merged}");
        assert_eq!(merged["parents"][0]["controllerName"], "other.io/ctl");
        assert_eq!(merged["ancestors"][0]["ancestorRef"], gw);
        let only_ours = json!({"parents": [{"controllerName": ME, "parentRef": gw, "conditions": []}]});
        assert!(merge(&only_ours, &desired, ME, "T2").get("parents").is_none());
    }
}
