//! An in-process fake Kubernetes API server, for tests only (it is never built into the `pier` binary).
//! No API server binary can be installed on these machines, so the Kubernetes tests run pier's real
//! kube-rs client against this: the same HTTP paths, JSON bodies and watch stream kube-rs speaks to a
//! real API server, for the kinds pier uses.
//!
//! Speaks: list (with the store's resourceVersion), watch from a resourceVersion (replaying what
//! happened since, then live events, with bookmarks when asked), 410 Gone for a resourceVersion older
//! than the last compaction, get, create, status replace with resourceVersion preconditions (409 on
//! mismatch), merge/strategic/apply patches (apply on a Lease refuses to change another holder with 409,
//! which is what server-side apply's field ownership does for kube-lease-manager). Resources whose CRD is
//! "not installed" answer 404. Every request from pier is checked against the RBAC `deploy/10-rbac.yaml`
//! grants ([`rbac`]), and status writes are pruned and validated with the kind's schema ([`schema`]).
//! Test controls: apply/delete objects, drop every watch connection, expire
//! watches (410), install/uninstall a CRD, interfere with the next status write, revoke RBAC grants, and
//! a request log.

mod controls;
pub mod faults;
mod http;
pub mod rbac;
mod resources;
mod schema;
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;

pub use resources::RESOURCES;

/// One event in the store's history.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub group: String,
    pub plural: String,
    pub namespace: String,
    pub object: Value,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    /// The `x-client` header: which of several clients sent it (tests give each pier its own).
    pub client: String,
    pub at: std::time::Instant,
}

impl Request {
    /// A list (a GET of a collection, not a watch).
    pub fn is_list_of(&self, plural: &str) -> bool {
        self.method == "GET" && self.path.ends_with(&format!("/{plural}")) && !self.query.contains("watch=true")
    }
}

type ObjKey = (String, String, String, String); // group, plural, namespace, name

/// Runs just before the next status write to an object is checked (another controller writing).
pub type Interference = Box<dyn FnOnce(&mut Value) + Send>;

#[derive(Default)]
pub(crate) struct Inner {
    pub rv: u64,
    pub uninstalled: BTreeSet<(String, String)>,
    pub objects: BTreeMap<ObjKey, Value>,
    pub log: Vec<Event>,
    /// Watches from a resourceVersion below this get 410 Gone.
    pub compacted: u64,
    pub requests: Vec<Request>,
    pub interfere: BTreeMap<ObjKey, Interference>,
    /// Lists of these plurals wait until released (to hold a watch before its first sync).
    pub held: BTreeSet<String>,
    pub faults: faults::Faults,
    /// pier's ServiceAccount's permissions, checked on every request.
    pub rbac: rbac::Rbac,
}

pub(crate) struct Shared {
    pub inner: Mutex<Inner>,
    pub events: broadcast::Sender<Event>,
    /// Bumped to end every open watch; the bool says whether they end with 410 Gone.
    pub epoch: watch::Sender<(u64, bool)>,
}

pub struct FakeApiServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl FakeApiServer {
    /// Serves every resource in [`RESOURCES`] except `missing` (`plural.group`, e.g.
    /// `xbackends.gateway.networking.x-k8s.io`), on an ephemeral loopback port.
    pub async fn start(missing: &[&str]) -> FakeApiServer {
        let (events, _) = broadcast::channel(4096);
        let (epoch, _) = watch::channel((0, false));
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                rbac: rbac::Rbac::from_manifests(),
                ..Inner::default()
            }),
            events,
            epoch,
        });
        for m in missing {
            shared.inner.lock().unwrap().uninstalled.insert(split(m));
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, task) = serve(listener, shared.clone());
        FakeApiServer {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client configuration pointing here; `client` names its requests in [`requests`](Self::requests).
    pub fn kube_config(&self, client: &str) -> kube::Config {
        let mut c = kube::Config::new(self.url().parse().unwrap());
        c.headers.push(("x-client".parse().unwrap(), client.parse().unwrap()));
        c
    }

    /// Creates or replaces an object (given with apiVersion and kind); keeps its status unless given.
    /// Returns the new resourceVersion. Panics on an object the API server would refuse.
    pub fn apply(&self, obj: Value) -> u64 {
        self.try_apply(obj).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`apply`](Self::apply), or why the API server refuses the object (its schema).
    pub fn try_apply(&self, mut obj: Value) -> Result<u64, String> {
        let (group, plural, kind, namespaced) = resource_of(&obj);
        let ns = if namespaced {
            obj["metadata"]["namespace"].as_str().unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let name = obj["metadata"]["name"].as_str().expect("metadata.name").to_string();
        let mut inner = self.shared.inner.lock().unwrap();
        let key = (group.clone(), plural.clone(), ns.clone(), name);
        let previous = inner.objects.get(&key).cloned();
        if namespaced {
            obj["metadata"]["namespace"] = json!(ns);
        }
        let generation = match &previous {
            Some(p) if p.get("spec") == obj.get("spec") => p["metadata"]["generation"].as_i64().unwrap_or(1),
            Some(p) => p["metadata"]["generation"].as_i64().unwrap_or(1) + 1,
            // A test may create an object at a later generation (to check observedGeneration).
            None => obj["metadata"]["generation"].as_i64().unwrap_or(1),
        };
        obj["metadata"]["generation"] = json!(generation);
        // What the API server does with a Secret's write-only stringData.
        if kind == "Secret"
            && let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|o| o.remove("stringData"))
        {
            for (k, v) in strings {
                let bytes = k8s_openapi::ByteString(v.as_str().unwrap_or_default().as_bytes().to_vec());
                obj["data"][k] = serde_json::to_value(bytes).unwrap();
            }
        }
        if obj.get("status").is_none()
            && let Some(status) = previous.as_ref().and_then(|p| p.get("status"))
        {
            obj["status"] = status.clone();
        }
        let version = obj["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        if let Err(e) = schema::object(&group, &plural, &version, &mut obj, schema::Fields::Prune) {
            return Err(format!(
                "{kind} {name:?} is invalid, and an API server would refuse it: {e}",
                name = key.3
            ));
        }
        let created = previous.is_none();
        Ok(inner.store(
            key,
            obj,
            if created { "ADDED" } else { "MODIFIED" },
            &self.shared.events,
        ))
    }

    /// Applies each document the API server accepts; returns the accepted ones as YAML, and why the
    /// others were refused.
    pub fn apply_accepted(&self, text: &str) -> (String, Vec<String>) {
        let (mut accepted, mut refused) = (String::new(), Vec::new());
        for v in pier::model::yaml::values("apply_accepted", text)
            .unwrap()
            .into_iter()
            .flatten()
        {
            match self.try_apply(v.clone()) {
                Ok(_) => accepted += &format!("---\n{}", pier::model::yaml::to_yaml(&v).unwrap()),
                Err(e) => refused.push(e),
            }
        }
        (accepted, refused)
    }

    /// Parses YAML (one or more documents) and applies each.
    pub fn apply_yaml(&self, text: &str) {
        for v in pier::model::yaml::values("apply_yaml", text)
            .unwrap()
            .into_iter()
            .flatten()
        {
            self.apply(v);
        }
    }

    pub fn delete(&self, group: &str, plural: &str, namespace: &str, name: &str) {
        let mut inner = self.shared.inner.lock().unwrap();
        let key = (
            group.to_string(),
            plural.to_string(),
            namespace.to_string(),
            name.to_string(),
        );
        if let Some(mut obj) = inner.objects.remove(&key) {
            inner.rv += 1;
            let rv = inner.rv;
            obj["metadata"]["resourceVersion"] = json!(rv.to_string());
            inner.event(key, obj, "DELETED", &self.shared.events);
        }
    }

    pub fn get(&self, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let inner = self.shared.inner.lock().unwrap();
        inner
            .objects
            .get(&(group.into(), plural.into(), namespace.into(), name.into()))
            .cloned()
    }

    /// Ends every open watch connection (kube-rs resumes from its last resourceVersion).
    pub fn drop_watches(&self) {
        self.shared.epoch.send_modify(|(n, gone)| {
            *n += 1;
            *gone = false;
        });
    }

    /// Compacts history: every open watch ends with 410 Gone, and so does any watch from an older
    /// resourceVersion (kube-rs then re-lists).
    pub fn expire_watches(&self) {
        {
            let mut inner = self.shared.inner.lock().unwrap();
            inner.compacted = inner.rv;
            inner.log.clear();
        }
        self.shared.epoch.send_modify(|(n, gone)| {
            *n += 1;
            *gone = true;
        });
    }

    pub fn install(&self, plural_group: &str) {
        self.shared
            .inner
            .lock()
            .unwrap()
            .uninstalled
            .remove(&split(plural_group));
    }

    /// Before the next status write to this object is checked, `f` changes it (as another controller
    /// writing in between would), so pier's write conflicts.
    pub fn interfere_next_status_write(&self, group: &str, plural: &str, namespace: &str, name: &str, f: Interference) {
        let key = (
            group.to_string(),
            plural.to_string(),
            namespace.to_string(),
            name.to_string(),
        );
        self.shared.inner.lock().unwrap().interfere.insert(key, f);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.shared.inner.lock().unwrap().requests.clone()
    }

    /// How many requests of `method` had a path ending in `suffix`.
    pub fn count(&self, method: &str, suffix: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method && r.path.ends_with(suffix))
            .count()
    }

    pub async fn shutdown(mut self) {
        self.drop_watches();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), task).await;
        }
    }
}

impl Drop for FakeApiServer {
    /// Fails the test if pier made a call that `deploy/10-rbac.yaml` does not grant and no test revoked:
    /// in a cluster that call would be refused.
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let unexpected = std::mem::take(&mut self.shared.inner.lock().unwrap().rbac.unexpected);
        if !std::thread::panicking() {
            assert!(
                unexpected.is_empty(),
                "pier made API calls deploy/10-rbac.yaml does not grant: {unexpected:?}"
            );
        }
    }
}

/// Serves `shared` on `listener` until the sender is used.
fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = oneshot::channel();
    let app = http::router(shared);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    (stop, task)
}

impl Inner {
    /// Stores `obj` at a new resourceVersion and records the event.
    pub fn store(&mut self, key: ObjKey, mut obj: Value, ty: &'static str, tx: &broadcast::Sender<Event>) -> u64 {
        self.rv += 1;
        let rv = self.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        if obj["metadata"].get("uid").is_none() {
            obj["metadata"]["uid"] = json!(format!("uid-{rv}"));
        }
        self.objects.insert(key.clone(), obj.clone());
        self.event(key, obj, ty, tx);
        rv
    }

    fn event(&mut self, key: ObjKey, obj: Value, ty: &'static str, tx: &broadcast::Sender<Event>) {
        let ev = Event {
            rv: self.rv,
            group: key.0,
            plural: key.1,
            namespace: key.2,
            object: json!({"type": ty, "object": obj}),
        };
        self.log.push(ev.clone());
        let _ = tx.send(ev);
    }
}

fn split(plural_group: &str) -> (String, String) {
    let (plural, group) = plural_group.split_once('.').unwrap_or((plural_group, ""));
    (group.to_string(), plural.to_string())
}

pub fn kind_of(group: &str, plural: &str) -> &'static str {
    RESOURCES
        .iter()
        .find(|r| r.0 == group && r.1 == plural)
        .map(|r| r.2)
        .unwrap_or("Unknown")
}

/// (group, plural, kind, namespaced) of an object by its apiVersion and kind.
fn resource_of(obj: &Value) -> (String, String, &'static str, bool) {
    let api_version = obj["apiVersion"].as_str().expect("apiVersion");
    let kind = obj["kind"].as_str().expect("kind");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let r = RESOURCES
        .iter()
        .find(|r| r.0 == group && r.2 == kind)
        .unwrap_or_else(|| panic!("fake API server does not know {api_version} {kind}"));
    (group.to_string(), r.1.to_string(), r.2, r.3)
}
