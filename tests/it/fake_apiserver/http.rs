//! The fake API server's HTTP side: path parsing, list/watch/get/create/replace-status/patch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Event, Request, Shared, kind_of};

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let shared = shared.clone();
        async move { handle(shared, method, uri, headers, body).await }
    })
}

/// What a path names.
pub(crate) struct Target {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub status: bool,
    /// `fieldValidation` as the request asks.
    pub fields: super::schema::Fields,
}

fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] => (Some(ns.to_string()), [&[*plural][..], rest].concat()),
        rest => (None, rest.to_vec()),
    };
    Some(Target {
        group: group.to_string(),
        version: version.to_string(),
        plural: rest.first()?.to_string(),
        namespace,
        name: rest.get(1).map(|s| s.to_string()),
        status: rest.get(2) == Some(&"status"),
        fields: super::schema::Fields::Prune,
    })
}

pub(crate) fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code});
    (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

/// Who sent a request: the `x-client` header, else the bearer token; kubectl, which sends no token over
/// plain HTTP, is the cluster admin ([`super::rbac::ADMIN`]).
fn client_of(headers: &HeaderMap) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if let Some(token) = header("authorization").strip_prefix("Bearer ") {
        return token.to_string();
    }
    match header("x-client") {
        "" if header("user-agent").starts_with("kubectl/") => super::rbac::ADMIN.to_string(),
        c => c.to_string(),
    }
}

/// 403 Forbidden, worded as the API server words it, unless RBAC allows the request.
fn authorize(
    shared: &Shared,
    method: &Method,
    headers: &HeaderMap,
    t: &Target,
    query: &BTreeMap<String, String>,
) -> Option<Response> {
    if client_of(headers) == super::rbac::ADMIN {
        return None;
    }
    let watch = query.get("watch").map(String::as_str) == Some("true");
    let verb = super::rbac::verb(method.as_str(), t.name.is_some(), watch);
    let resource = if t.status {
        format!("{}/status", t.plural)
    } else {
        t.plural.clone()
    };
    let ns = t.namespace.as_deref();
    if shared.inner.lock().unwrap().rbac.check(verb, &t.group, &resource, ns) {
        return None;
    }
    let scope = ns.map_or("at the cluster scope".to_string(), |ns| {
        format!("in the namespace \"{ns}\"")
    });
    Some(status(
        403,
        "Forbidden",
        format!(
            "{plural} is forbidden: User \"system:serviceaccount:pier-system:pier\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}",
            plural = t.plural,
            group = t.group
        ),
    ))
}

async fn handle(shared: Arc<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let query: BTreeMap<String, String> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    shared.inner.lock().unwrap().requests.push(Request {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or_default().to_string(),
        client: client_of(&headers),
        at: std::time::Instant::now(),
    });
    if method == Method::GET {
        let uninstalled = shared.inner.lock().unwrap().uninstalled.clone();
        if let Some(document) = super::resources::discovery(uri.path(), &uninstalled) {
            return document;
        }
    }
    let Some(mut t) = parse_path(uri.path()) else {
        return status(404, "NotFound", format!("no route {}", uri.path()));
    };
    if query.get("fieldValidation").map(String::as_str) == Some("Strict") {
        t.fields = super::schema::Fields::Strict;
    }
    let served = super::RESOURCES
        .iter()
        .find(|r| r.0 == t.group && r.1 == t.plural && r.4.contains(&t.version.as_str()));
    let installed = !shared
        .inner
        .lock()
        .unwrap()
        .uninstalled
        .contains(&(t.group.clone(), t.plural.clone()));
    let Some(&(_, _, kind, _, _)) = served.filter(|_| installed) else {
        return status(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({})", t.plural),
        );
    };
    if let Some(refused) = authorize(&shared, &method, &headers, &t, &query) {
        return refused;
    }
    let list = method == Method::GET && t.name.is_none() && query.get("watch").map(String::as_str) != Some("true");
    let (faulted, slow) = {
        let mut inner = shared.inner.lock().unwrap();
        (
            inner.faults.answer(&t.plural, list, t.name.is_some()),
            inner.faults.slow_lists,
        )
    };
    if let Some(answer) = faulted {
        return answer;
    }
    if list && !slow.is_zero() {
        tokio::time::sleep(slow).await;
    }
    let api_version = if t.group.is_empty() {
        t.version.clone()
    } else {
        format!("{}/{}", t.group, t.version)
    };
    let ns = t.namespace.clone().unwrap_or_default();
    match (method.as_str(), &t.name) {
        ("GET", None) if query.get("watch").map(String::as_str) == Some("true") => {
            watch(shared, &t, &api_version, &query)
        }
        ("GET", None) => {
            for _ in 0..500 {
                if !shared.inner.lock().unwrap().held.contains(&t.plural) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let inner = shared.inner.lock().unwrap();
            let items: Vec<Value> = inner
                .objects
                .iter()
                .filter(|(k, _)| k.0 == t.group && k.1 == t.plural && (t.namespace.is_none() || k.2 == ns))
                .map(|(_, v)| with_version(v.clone(), &api_version))
                .collect();
            let body = json!({"apiVersion": api_version, "kind": format!("{kind}List"),
                "metadata": {"resourceVersion": inner.rv.to_string()}, "items": items});
            axum::Json(body).into_response()
        }
        ("GET", Some(name)) => {
            let inner = shared.inner.lock().unwrap();
            match inner
                .objects
                .get(&(t.group.clone(), t.plural.clone(), ns, name.clone()))
            {
                Some(v) => axum::Json(with_version(v.clone(), &api_version)).into_response(),
                None => status(404, "NotFound", format!("{} {name:?} not found", t.plural)),
            }
        }
        ("POST", None) => super::writes::create(&shared, &t, &api_version, &ns, &body),
        ("PUT", Some(name)) if t.status => super::writes::replace_status(&shared, &t, &api_version, ns, name, &body),
        ("PATCH", Some(name)) => super::writes::patch(&shared, &t, &api_version, ns, name, &headers, &body),
        _ => status(405, "MethodNotAllowed", format!("{method} {}", uri.path())),
    }
}

pub(crate) fn with_version(mut v: Value, api_version: &str) -> Value {
    v["apiVersion"] = json!(api_version);
    v
}

/// A watch: history since `resourceVersion`, then live events, bookmarks, and the end on a test's
/// request (dropped, or 410 Gone).
fn watch(shared: Arc<Shared>, t: &Target, api_version: &str, query: &BTreeMap<String, String>) -> Response {
    let from: u64 = query.get("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(0);
    let bookmarks = query.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(290), Duration::from_secs);
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let (group, plural, ns) = (t.group.clone(), t.plural.clone(), t.namespace.clone());
    let matches =
        move |e: &Event| e.group == group && e.plural == plural && ns.as_ref().is_none_or(|n| *n == e.namespace);
    let mut live = shared.events.subscribe();
    let mut epoch = shared.epoch.subscribe();
    epoch.borrow_and_update();
    let (backlog, gone) = {
        let inner = shared.inner.lock().unwrap();
        let gone = from < inner.compacted;
        let backlog: Vec<Event> = inner
            .log
            .iter()
            .filter(|e| e.rv > from && matches(e))
            .cloned()
            .collect();
        (backlog, gone)
    };
    let api_version = api_version.to_string();
    let kind = kind_of(&t.group, &t.plural);
    tokio::spawn(async move {
        let line = |v: &Value| Ok(Bytes::from(format!("{v}\n")));
        let gone_event = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "too old resource version", "reason": "Expired", "code": 410}});
        if gone {
            let _ = tx.send(line(&gone_event)).await;
            return;
        }
        let mut last = from;
        for e in backlog {
            last = e.rv;
            let mut ev = e.object.clone();
            ev["object"]["apiVersion"] = json!(api_version);
            if tx.send(line(&ev)).await.is_err() {
                return;
            }
        }
        last = last.max(from);
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = tx.closed() => return,
                changed = epoch.changed() => {
                    if changed.is_ok() && epoch.borrow().1 {
                        let _ = tx.send(line(&gone_event)).await;
                    }
                    return;
                }
                _ = tick.tick(), if bookmarks => {
                    let bm = json!({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                        "metadata": {"resourceVersion": last.to_string()}}});
                    if tx.send(line(&bm)).await.is_err() { return; }
                }
                ev = live.recv() => match ev {
                    Ok(e) if e.rv > last && matches(&e) => {
                        last = e.rv;
                        let mut ev = e.object.clone();
                        ev["object"]["apiVersion"] = json!(api_version);
                        if tx.send(line(&ev)).await.is_err() { return; }
                    }
                    Ok(_) => {}
                    Err(_) => return,
                },
            }
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    ([("content-type", "application/json")], body).into_response()
}
