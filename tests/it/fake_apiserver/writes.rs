//! The fake API server's writes: create, status replace (with resourceVersion preconditions), and
//! patches (merge, strategic merge, server-side apply, on the object or its status). Every write is
//! pruned and validated with the kind's schema ([`super::schema`]); a change outside metadata and status
//! bumps `metadata.generation`, as the API server does.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Shared;
use super::http::{Target, status, with_version};

fn invalid(t: &Target, name: &str, e: String) -> Response {
    status(422, "Invalid", format!("{} {name:?} is invalid: {e}", t.plural))
}

/// POST to a collection.
pub(crate) fn create(shared: &Shared, t: &Target, api_version: &str, ns: &str, body: &Bytes) -> Response {
    let Ok(obj) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "body is not JSON".into());
    };
    insert(shared, t, api_version, ns, obj)
}

/// Stores a new object: defaults the API server sets, then the schema.
fn insert(shared: &Shared, t: &Target, api_version: &str, ns: &str, mut obj: Value) -> Response {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
    if name.is_empty() {
        return invalid(t, &name, "metadata.name: Required value".into());
    }
    let key = (t.group.clone(), t.plural.clone(), ns.to_string(), name.clone());
    let mut inner = shared.inner.lock().unwrap();
    if inner.objects.contains_key(&key) {
        return status(409, "AlreadyExists", format!("{} {name:?} already exists", t.plural));
    }
    if t.namespace.is_some() {
        obj["metadata"]["namespace"] = json!(ns);
    }
    obj["metadata"]["generation"] = json!(1);
    obj["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    obj["metadata"]["uid"] = json!(format!("uid-{}", inner.rv + 1));
    let mut obj = with_version(obj, api_version);
    if let Err(e) = super::schema::object(&t.group, &t.plural, &t.version, &mut obj, t.fields) {
        return invalid(t, &name, e);
    }
    inner.store(key.clone(), obj, "ADDED", &shared.events);
    (StatusCode::CREATED, axum::Json(inner.objects[&key].clone())).into_response()
}

/// PUT to `…/status`: only the status changes, and only at the object's current resourceVersion.
pub(crate) fn replace_status(
    shared: &Shared,
    t: &Target,
    api_version: &str,
    ns: String,
    name: &str,
    body: &Bytes,
) -> Response {
    let Ok(obj) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "body is not JSON".into());
    };
    let key = (t.group.clone(), t.plural.clone(), ns, name.to_string());
    let mut inner = shared.inner.lock().unwrap();
    if let Some(f) = inner.interfere.remove(&key)
        && let Some(mut current) = inner.objects.get(&key).cloned()
    {
        f(&mut current);
        inner.store(key.clone(), current, "MODIFIED", &shared.events);
    }
    let Some(mut current) = inner.objects.get(&key).cloned() else {
        return status(404, "NotFound", format!("{} {name:?} not found", t.plural));
    };
    if obj["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"] {
        return status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
                t.plural
            ),
        );
    }
    current["status"] = obj.get("status").cloned().unwrap_or(Value::Null);
    if let Err(e) = super::schema::status(&t.group, &t.plural, &t.version, &mut current["status"], t.fields) {
        return invalid(t, name, e);
    }
    inner.store(key.clone(), current, "MODIFIED", &shared.events);
    axum::Json(with_version(inner.objects[&key].clone(), api_version)).into_response()
}

/// PATCH of an object or its status. Server-side apply (`application/apply-patch+yaml`) of an object
/// that does not exist creates it; on a Lease it refuses to change another holder (field ownership).
pub(crate) fn patch(
    shared: &Shared,
    t: &Target,
    api_version: &str,
    ns: String,
    name: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let apply = content_type.starts_with("application/apply-patch");
    let patch: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => match serde_saphyr::from_slice(body) {
            Ok(v) => v,
            Err(e) => return status(400, "BadRequest", format!("patch body: {e}")),
        },
    };
    let key = (t.group.clone(), t.plural.clone(), ns.clone(), name.to_string());
    let existing = shared.inner.lock().unwrap().objects.get(&key).cloned();
    let Some(mut current) = existing else {
        if apply && !t.status {
            return insert(shared, t, api_version, &ns, patch);
        }
        return status(404, "NotFound", format!("{} {name:?} not found", t.plural));
    };
    if let Some(rv) = patch["metadata"].get("resourceVersion")
        && rv != &current["metadata"]["resourceVersion"]
    {
        return status(
            409,
            "Conflict",
            format!("{} {name:?}: resourceVersion mismatch", t.plural),
        );
    }
    if apply && t.plural == "leases" {
        let held = current["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let wanted = patch["spec"]["holderIdentity"].as_str();
        if !held.is_empty() && wanted.is_some_and(|w| w != held) {
            return status(
                409,
                "Conflict",
                format!("Apply failed with 1 conflict: conflict with {held:?}: .spec.holderIdentity"),
            );
        }
    }
    if t.status {
        merge_patch(&mut current["status"], patch.get("status").unwrap_or(&Value::Null));
        if let Err(e) = super::schema::status(&t.group, &t.plural, &t.version, &mut current["status"], t.fields) {
            return invalid(t, name, e);
        }
    } else {
        let before = current.clone();
        let mut p = patch.clone();
        if let Some(m) = p.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
            // Status is written through its subresource only.
            m.remove("status");
        }
        merge_patch(&mut current, &p);
        if let Err(e) = super::schema::object(&t.group, &t.plural, &t.version, &mut current, t.fields) {
            return invalid(t, name, e);
        }
        bump_generation(&before, &mut current);
    }
    let mut inner = shared.inner.lock().unwrap();
    inner.store(key.clone(), current, "MODIFIED", &shared.events);
    axum::Json(with_version(inner.objects[&key].clone(), api_version)).into_response()
}

/// `metadata.generation` counts changes to everything but metadata and status.
pub(crate) fn bump_generation(before: &Value, after: &mut Value) {
    let body = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
            m.remove("apiVersion");
        }
        v
    };
    if body(before) != body(after) {
        let generation = before["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        after["metadata"]["generation"] = json!(generation);
    }
}

/// RFC 7386 JSON merge patch (also how this fake treats strategic merge patches: every patch pier or
/// kube-lease-manager sends is a plain map of scalars, where the two agree).
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}
