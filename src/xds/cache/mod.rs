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
//!
//! Each snapshot also dates its types: the instant of the publish that first carried the type's current
//! version for that Gateway (an unchanged type keeps its date across publishes). Streams time push
//! latency from it (`latency`); nothing here reads it back.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use serde_json::{Value, json};
use tokio::sync::watch;

use self::bodies::{Bodies, Body, Selection};
use self::merges::Merges;
use super::XdsType;
use crate::envoy::Resources;
use crate::envoy::pb::{cluster, endpoint, listener, route, tls};
use crate::envoy::{fingerprint, render};
use crate::snapshot::{self as out, GatewayOut, Guard, Res};

/// One resource, packed, with its content version (the translator's own: see `snapshot::Res`).
pub type Entry = Res;

/// Resources of one type by name, shared with the translator (cloning is O(1)).
pub type Entries = imbl::OrdMap<String, Arc<Res>>;

/// The resources of one type, by name, and the type's version: a hash of every resource's
/// fingerprint in name order (a fingerprint covers the resource's name, which is in its content).
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub version: String,
    pub entries: Entries,
    /// The longest resource name, in bytes: what a request naming every resource may cost
    /// (`xds::bounds`).
    pub longest_name: usize,
    /// State-of-the-world response bodies of this view, shared among the streams sent them.
    bodies: Bodies,
}

impl View {
    pub fn new(entries: Entries) -> View {
        let mut longest_name = 0;
        let fp = fingerprint::combine(entries.iter().map(|(name, e)| {
            longest_name = longest_name.max(name.len());
            e.fingerprint
        }));
        View {
            version: fingerprint::version(fp),
            entries,
            longest_name,
            bodies: Bodies::default(),
        }
    }

    /// The response body carrying `selection` of this view's resources (of type `ty`), shared with
    /// every stream sent the same one while any of them holds it.
    pub(crate) fn body(&self, ty: XdsType, selection: Selection<'_>) -> Arc<Body> {
        self.bodies.body(&self.version, ty.type_url(), &self.entries, selection)
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
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub gateway: String,
    types: [Arc<View>; 5],
    /// Per type, when the publish that first carried its current version happened.
    published: [Instant; 5],
    /// What the Gateway's proxyless gRPC clients are served (possibly nothing); `None` in that
    /// snapshot itself.
    proxyless: Option<Arc<Snapshot>>,
    /// In a proxyless half: the clusters only clients declaring a certificate provider get as they are
    /// ([`guards`]).
    guards: imbl::OrdMap<String, Arc<Guard>>,
    /// This snapshot's views merged with older snapshots', shared by the streams serving them.
    merges: Merges,
}

impl Snapshot {
    /// A snapshot of what the translator packed for one Gateway, dated now.
    pub fn of(gateway: &str, out: &GatewayOut) -> Snapshot {
        let empty = GatewayOut::default();
        let grpc = out.grpc.as_deref().unwrap_or(&empty);
        Snapshot {
            proxyless: Some(Arc::new(Snapshot::of_types(gateway, grpc))),
            ..Snapshot::of_types(gateway, out)
        }
    }

    /// The five types of `out`, without a proxyless half.
    fn of_types(gateway: &str, out: &GatewayOut) -> Snapshot {
        let mut types: [Arc<View>; 5] = Default::default();
        types[XdsType::Secret.index()] = Arc::new(View::new(out.secrets.clone()));
        types[XdsType::Cluster.index()] = Arc::new(View::new(out.clusters.clone()));
        types[XdsType::Endpoint.index()] = Arc::new(View::new(out.endpoints.clone()));
        types[XdsType::Listener.index()] = Arc::new(View::new(out.listeners.clone()));
        types[XdsType::Route.index()] = Arc::new(View::new(out.routes.clone()));
        Snapshot {
            gateway: gateway.to_string(),
            types,
            published: [Instant::now(); 5],
            proxyless: None,
            guards: out.guards.clone(),
            merges: Merges::default(),
        }
    }

    /// What this Gateway's proxyless gRPC clients are served (an empty snapshot when nothing).
    pub fn proxyless(self: &Arc<Self>) -> Arc<Snapshot> {
        self.proxyless.clone().unwrap_or_else(|| self.clone())
    }

    /// Dates every type `at`, except those whose version `prev` (the Gateway's previous snapshot)
    /// already had: they keep `prev`'s date, since no publish since then changed them.
    pub(crate) fn dated(mut self, at: Instant, prev: Option<&Snapshot>) -> Snapshot {
        if let Some(grpc) = self.proxyless.take() {
            let inner = Arc::unwrap_or_clone(grpc);
            let prev_inner = prev.and_then(|p| p.proxyless.as_deref());
            let kept = match prev.and_then(|p| p.proxyless.clone()) {
                Some(old) if old.same_content(&inner) => old,
                _ => Arc::new(inner.dated(at, prev_inner)),
            };
            self.proxyless = Some(kept);
        }
        for ty in XdsType::ALL {
            self.published[ty.index()] = match prev {
                Some(prev) if prev.version(ty) == self.version(ty) => prev.published(ty),
                _ => at,
            };
        }
        self
    }

    /// When the publish that first carried this type's current version happened.
    pub fn published(&self, ty: XdsType) -> Instant {
        self.published[ty.index()]
    }

    /// Packs and versions `res` (for callers that hold decoded resources: tests, tools). A duplicate
    /// name keeps the first resource (Envoy would reject a response that sends one twice).
    pub fn build(gateway: &str, res: &Resources) -> Snapshot {
        Snapshot::of(gateway, &out::pack(gateway, res))
    }

    pub fn view(&self, ty: XdsType) -> &Arc<View> {
        &self.types[ty.index()]
    }

    /// This snapshot's view of `ty` merged with `older` snapshots' (newest first) by `compute`, shared
    /// with every stream asking for the same merge while any of them serves it.
    pub(crate) fn merged(
        &self,
        ty: XdsType,
        older: &[&Arc<Snapshot>],
        compute: impl FnOnce() -> Arc<View>,
    ) -> Arc<View> {
        self.merges.merge(ty, older, compute)
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

    /// Same resources, same versions (the proxyless half's too): publishing it again must not disturb
    /// any stream.
    fn same_content(&self, other: &Snapshot) -> bool {
        let halves = match (&self.proxyless, &other.proxyless) {
            (Some(a), Some(b)) => a.same_content(b),
            (a, b) => a.is_none() == b.is_none(),
        };
        halves && XdsType::ALL.into_iter().all(|t| self.version(t) == other.version(t))
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

/// A publish as streams see it: the cache generation and when the publish that set it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    pub number: u64,
    /// For generation 0 (nothing published yet), when the cache was created.
    pub at: Instant,
}

/// The latest good snapshot per Gateway (`"namespace/name"`).
#[derive(Debug)]
pub struct SnapshotCache {
    snapshots: RwLock<Arc<BTreeMap<String, Arc<Snapshot>>>>,
    generation: watch::Sender<Generation>,
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
            generation: watch::Sender::new(Generation {
                number: 0,
                at: Instant::now(),
            }),
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
        // Push latency is timed from here: the publish begins (building snapshots takes microseconds).
        let now = Instant::now();
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
                Some(prev) => {
                    report.changed.push(name.clone());
                    Arc::new(built.dated(now, Some(prev)))
                }
                None => {
                    report.added.push(name.clone());
                    Arc::new(built.dated(now, None))
                }
            };
            next.insert(name.clone(), kept);
        }
        report.removed = old.keys().filter(|k| !gateways.contains_key(*k)).cloned().collect();
        *self.snapshots.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        let first = !self.published.swap(true, Ordering::SeqCst);
        if report.changed_anything() || first {
            self.generation.send_modify(|g| {
                g.number += 1;
                g.at = now;
            });
        }
        report.generation = self.generation.borrow().number;
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
    pub fn subscribe(&self) -> watch::Receiver<Generation> {
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

pub mod bodies;
pub mod guards;
mod memo;
mod merges;
#[cfg(test)]
mod tests;
