//! `SnapshotCache`: the latest good translation of every Gateway, as immutable [`Snapshot`]s with
//! content-derived versions.
//!
//! Versions come from the translator ([`Res`]): a resource's version is its fingerprint (a hash of a
//! deterministic walk of the message, map entries sorted; prost's bytes are not deterministic because
//! proto `map` fields are Rust `HashMap`s), computed once when the resource is built, never by
//! rendering JSON. A type's version combines its resources' fingerprints in name order. Identical
//! input therefore gives identical versions across restarts and replicas, which is what lets a
//! reconnecting proxy see "nothing new" instead of a full re-apply. A `ClusterLoadAssignment`'s version
//! also covers its cluster's: Envoy re-warms a changed cluster and waits for a fresh assignment even
//! when the endpoints did not change.
//!
//! The entries are the translator's own persistent maps (`imbl`), so a snapshot costs its type versions,
//! not a copy. Publishing replaces every Gateway at once; a Gateway whose content did not change keeps
//! its `Arc`, and an unchanged resource keeps its `Arc` inside a changed Gateway, so streams (which
//! compare by pointer and version) send only what changed. The cache never decides what is served to
//! whom: that is `stream` (node → Gateway) and [`plan`](super::plan) (ordering).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::XdsType;
use crate::envoy::Resources;
use crate::envoy::pb::{cluster, endpoint, listener, route, tls};
use crate::envoy::{fingerprint, render};
use crate::translate::engine::out::{self, GatewayOut, Res};

/// One resource, packed, with its content version (the translator's own: see `engine::out::Res`).
pub type Entry = Res;

/// Resources of one type by name, shared with the translator (cloning is O(1)).
pub type Entries = imbl::OrdMap<String, Arc<Res>>;

/// The resources of one type, by name, and the type's version: a hash of every resource's
/// fingerprint in name order (a fingerprint covers the resource's name, which is in its content).
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub version: String,
    pub entries: Entries,
}

impl View {
    pub fn new(entries: Entries) -> View {
        let fp = fingerprint::combine(entries.values().map(|e| e.fingerprint));
        View {
            version: fingerprint::version(fp),
            entries,
        }
    }

    pub fn empty() -> View {
        View::new(Entries::new())
    }
}

impl Default for View {
    fn default() -> Self {
        View::empty()
    }
}

/// Everything one Gateway serves, per type. Immutable; replaced wholesale on publish.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub gateway: String,
    types: [Arc<View>; 5],
}

impl Snapshot {
    /// A snapshot of what the translator packed for one Gateway.
    pub fn of(gateway: &str, out: &GatewayOut) -> Snapshot {
        let mut types: [Arc<View>; 5] = Default::default();
        types[XdsType::Secret.index()] = Arc::new(View::new(out.secrets.clone()));
        types[XdsType::Cluster.index()] = Arc::new(View::new(out.clusters.clone()));
        types[XdsType::Endpoint.index()] = Arc::new(View::new(out.endpoints.clone()));
        types[XdsType::Listener.index()] = Arc::new(View::new(out.listeners.clone()));
        types[XdsType::Route.index()] = Arc::new(View::new(out.routes.clone()));
        Snapshot {
            gateway: gateway.to_string(),
            types,
        }
    }

    /// Packs and versions `res` (for callers that hold decoded resources: tests, tools). A duplicate
    /// name keeps the first resource (Envoy would reject a response that sends one twice).
    pub fn build(gateway: &str, res: &Resources) -> Snapshot {
        Snapshot::of(gateway, &out::pack(gateway, res))
    }

    pub fn view(&self, ty: XdsType) -> &Arc<View> {
        &self.types[ty.index()]
    }

    pub fn version(&self, ty: XdsType) -> &str {
        &self.types[ty.index()].version
    }

    pub fn type_versions(&self) -> BTreeMap<XdsType, String> {
        XdsType::ALL
            .into_iter()
            .map(|t| (t, self.version(t).to_string()))
            .collect()
    }

    /// Same resources, same versions: publishing it again must not disturb any stream.
    fn same_content(&self, other: &Snapshot) -> bool {
        XdsType::ALL.into_iter().all(|t| self.version(t) == other.version(t))
    }

    /// What this snapshot serves, as canonical proto3 JSON: `{gateway, <type>: {version, resources:
    /// [{name, version, resource}]}}`. Private keys are *not* redacted here; admin callers must apply
    /// [`render::redact_private_keys`].
    pub fn to_json(&self) -> Value {
        let mut doc = json!({ "gateway": self.gateway });
        for ty in XdsType::ALL {
            let view = self.view(ty);
            let resources: Vec<Value> = view
                .entries
                .iter()
                .map(|(name, e)| json!({"name": name, "version": e.version, "resource": any_to_json(ty, e.resource())}))
                .collect();
            doc[ty.as_str()] = json!({ "version": view.version, "resources": resources });
        }
        doc
    }
}

fn any_to_json(ty: XdsType, any: &Any) -> Value {
    fn decode<M: Message + prost::Name + Default>(any: &Any) -> Value {
        M::decode(any.value.as_slice())
            .map_or_else(|e| json!({ "decode_error": e.to_string() }), |m| render::to_json(&m))
    }
    match ty {
        XdsType::Secret => decode::<tls::Secret>(any),
        XdsType::Cluster => decode::<cluster::Cluster>(any),
        XdsType::Endpoint => decode::<endpoint::ClusterLoadAssignment>(any),
        XdsType::Listener => decode::<listener::Listener>(any),
        XdsType::Route => decode::<route::RouteConfiguration>(any),
    }
}

/// What a publish changed, by Gateway name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishReport {
    /// The cache generation after this publish (bumped only if something changed).
    pub generation: u64,
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: Vec<String>,
}

impl PublishReport {
    pub fn changed_anything(&self) -> bool {
        !(self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty())
    }
}

/// The latest good snapshot per Gateway (`"namespace/name"`).
#[derive(Debug)]
pub struct SnapshotCache {
    snapshots: RwLock<Arc<BTreeMap<String, Arc<Snapshot>>>>,
    generation: watch::Sender<u64>,
    published: AtomicBool,
    /// Serializes publishers: compare-with-old and replace must not interleave.
    publishing: Mutex<()>,
}

impl Default for SnapshotCache {
    fn default() -> Self {
        SnapshotCache::new()
    }
}

impl SnapshotCache {
    pub fn new() -> SnapshotCache {
        SnapshotCache {
            snapshots: RwLock::new(Arc::new(BTreeMap::new())),
            generation: watch::Sender::new(0),
            published: AtomicBool::new(false),
            publishing: Mutex::new(()),
        }
    }

    /// Replaces every Gateway's snapshot at once with decoded resources (packed here). Gateways absent
    /// from `gateways` are removed; unchanged ones keep their `Arc`. Subscribers are woken only if
    /// something changed.
    pub fn publish(&self, gateways: &BTreeMap<String, Resources>) -> PublishReport {
        let packed = gateways
            .iter()
            .map(|(name, res)| (name.clone(), out::pack(name, res)))
            .collect();
        self.publish_packed(&packed)
    }

    /// Replaces every Gateway's snapshot at once with what the translator packed. Building a snapshot
    /// shares the translator's maps, so an unchanged Gateway costs its type versions only.
    pub fn publish_packed(&self, gateways: &BTreeMap<String, GatewayOut>) -> PublishReport {
        let _guard = self.publishing.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.all();
        let mut report = PublishReport::default();
        let mut next = BTreeMap::new();
        for (name, res) in gateways {
            let built = Snapshot::of(name, res);
            let kept = match old.get(name) {
                Some(prev) if prev.same_content(&built) => {
                    report.unchanged.push(name.clone());
                    prev.clone()
                }
                Some(_) => {
                    report.changed.push(name.clone());
                    Arc::new(built)
                }
                None => {
                    report.added.push(name.clone());
                    Arc::new(built)
                }
            };
            next.insert(name.clone(), kept);
        }
        report.removed = old.keys().filter(|k| !gateways.contains_key(*k)).cloned().collect();
        *self.snapshots.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        let first = !self.published.swap(true, Ordering::SeqCst);
        if report.changed_anything() || first {
            self.generation.send_modify(|g| *g += 1);
        }
        report.generation = *self.generation.borrow();
        tracing::debug!(
            generation = report.generation,
            added = report.added.len(),
            changed = report.changed.len(),
            removed = report.removed.len(),
            unchanged = report.unchanged.len(),
            "published snapshots"
        );
        report
    }

    pub fn get(&self, gateway: &str) -> Option<Arc<Snapshot>> {
        self.snapshots
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(gateway)
            .cloned()
    }

    /// Every snapshot, by Gateway.
    pub fn all(&self) -> Arc<BTreeMap<String, Arc<Snapshot>>> {
        self.snapshots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A receiver of the generation, bumped whenever a publish changed something (and on the first).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Whether anything was ever published. Before that, streams are sent nothing: an empty state
    /// would delete the configuration a (re)connecting proxy still runs.
    pub fn has_published(&self) -> bool {
        self.published.load(Ordering::SeqCst)
    }

    /// Type versions of one Gateway (empty if unknown), for /metrics and /debug.
    pub fn versions(&self, gateway: &str) -> BTreeMap<XdsType, String> {
        self.get(gateway).map(|s| s.type_versions()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::pb::cluster::Cluster;

    fn cluster(name: &str, ms: i64) -> Cluster {
        Cluster {
            name: name.to_string(),
            connect_timeout: Some(envoy_types::pb::google::protobuf::Duration { seconds: ms, nanos: 0 }),
            ..Default::default()
        }
    }

    #[test]
    fn versions_follow_content() {
        let a = Resources {
            clusters: vec![cluster("a", 1), cluster("b", 1)],
            ..Default::default()
        };
        let mut b = a.clone();
        b.clusters[1].connect_timeout = Some(envoy_types::pb::google::protobuf::Duration { seconds: 2, nanos: 0 });
        let (sa, sa2, sb) = (
            Snapshot::build("ns/g", &a),
            Snapshot::build("ns/g", &a),
            Snapshot::build("ns/g", &b),
        );
        assert_eq!(sa.type_versions(), sa2.type_versions());
        let (va, vb) = (sa.view(XdsType::Cluster), sb.view(XdsType::Cluster));
        assert_eq!(va.entries["a"].version, vb.entries["a"].version);
        assert_ne!(va.entries["b"].version, vb.entries["b"].version);
        assert_ne!(va.version, vb.version);
        assert_eq!(va.version.len(), 16);
        assert_eq!(sa.version(XdsType::Route), sb.version(XdsType::Route));
    }

    #[test]
    fn endpoint_versions_follow_their_cluster() {
        use crate::envoy::pb::endpoint::ClusterLoadAssignment;
        let cla = ClusterLoadAssignment {
            cluster_name: "a".into(),
            ..Default::default()
        };
        let a = Resources {
            clusters: vec![cluster("a", 1)],
            endpoints: vec![cla],
            ..Default::default()
        };
        let mut b = a.clone();
        b.clusters[0] = cluster("a", 2);
        let (sa, sb) = (Snapshot::build("ns/g", &a), Snapshot::build("ns/g", &b));
        assert_ne!(sa.version(XdsType::Endpoint), sb.version(XdsType::Endpoint));
        assert_eq!(
            sa.view(XdsType::Endpoint).entries["a"].resource(),
            sb.view(XdsType::Endpoint).entries["a"].resource()
        );
    }

    #[test]
    fn publish_keeps_unchanged_snapshots_and_bumps_only_on_change() {
        let cache = SnapshotCache::new();
        assert!(!cache.has_published());
        let rx = cache.subscribe();
        let mut gws = BTreeMap::new();
        gws.insert("ns/a".to_string(), Resources::default());
        let r1 = cache.publish(&gws);
        assert!(cache.has_published());
        assert_eq!((r1.generation, r1.added.clone()), (1, vec!["ns/a".to_string()]));
        let before = cache.get("ns/a").unwrap();
        let r2 = cache.publish(&gws);
        assert_eq!(r2.generation, 1);
        assert!(!r2.changed_anything());
        assert!(Arc::ptr_eq(&before, &cache.get("ns/a").unwrap()));
        let r3 = cache.publish(&BTreeMap::new());
        assert_eq!((r3.generation, r3.removed), (2, vec!["ns/a".to_string()]));
        assert!(cache.get("ns/a").is_none());
        assert_eq!(*rx.borrow(), 2);
    }
}
