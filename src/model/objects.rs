//! [`Objects`]: the objects of one kind, as a persistent ordered map, and the record of what a
//! computation read from them.
//!
//! Persistent (`imbl::OrdMap`, a B-tree with structural sharing): cloning a model is O(1) and changing one
//! object copies only the path to it, so every snapshot a source publishes shares almost everything with
//! the one before, and two snapshots are compared in time proportional to what differs
//! ([`Objects::diff`]). `imbl` is the maintained fork of `im`; its `OrdMap` keeps the order, range and
//! lookup API of `BTreeMap` that the translator relies on for deterministic output.
//!
//! Reads are recorded while [`track`] runs: a lookup records the key, a namespace scan the namespace, an
//! iteration the whole kind. The incremental translator (`translate::engine`) memoizes each unit of work
//! on exactly what it read this way, so no dependency has to be declared by hand and none can be
//! forgotten. Outside `track`, recording costs one thread-local check.

use std::cell::RefCell;
use std::sync::Arc;

use super::{Name, ObjectKey};
use crate::api::dense::Densify;

/// The kinds a [`Model`](super::Model) holds, for recording reads and reporting changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    GatewayClass,
    Gateway,
    HttpRoute,
    HttpRouteExtras,
    GrpcRoute,
    ReferenceGrant,
    BackendTlsPolicy,
    XBackend,
    Backend,
    EgBackend,
    Service,
    EndpointSlice,
    /// Pods, read for XBackends of type EndpointSelector with `matchLabels` (trimmed: `model::pod`).
    Pod,
    Secret,
    ConfigMap,
    /// Cluster-scoped CA bundles (`certificates.k8s.io`), read for `caCertificateRefs` naming one.
    ClusterTrustBundle,
    Namespace,
    /// pier's own resolver's answer for one hostname (`model::resolution`); never read from a source.
    Resolution,
}

impl Kind {
    /// How a status message names the kind's objects: `Pods`, `EndpointSlices`, `BackendTLSPolicies`.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::GatewayClass => "GatewayClasses",
            Kind::Gateway => "Gateways",
            Kind::HttpRoute | Kind::HttpRouteExtras => "HTTPRoutes",
            Kind::GrpcRoute => "GRPCRoutes",
            Kind::ReferenceGrant => "ReferenceGrants",
            Kind::BackendTlsPolicy => "BackendTLSPolicies",
            Kind::XBackend => "XBackends",
            Kind::Backend => "Backends (gateway.networking.k8s.io)",
            Kind::EgBackend => "Backends (gateway.envoyproxy.io)",
            Kind::Service => "Services",
            Kind::EndpointSlice => "EndpointSlices",
            Kind::Pod => "Pods",
            Kind::Secret => "Secrets",
            Kind::ConfigMap => "ConfigMaps",
            Kind::ClusterTrustBundle => "ClusterTrustBundles",
            Kind::Namespace => "Namespaces",
            Kind::Resolution => "DNS answers",
        }
    }
}

impl Kind {
    /// The kind whose objects [`Object::kind_name`](super::Object::kind_name) calls `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Some(match name {
            "GatewayClass" => Kind::GatewayClass,
            "Gateway" => Kind::Gateway,
            "HTTPRoute" => Kind::HttpRoute,
            "GRPCRoute" => Kind::GrpcRoute,
            "ReferenceGrant" => Kind::ReferenceGrant,
            "BackendTLSPolicy" => Kind::BackendTlsPolicy,
            "XBackend" => Kind::XBackend,
            "Backend" => Kind::Backend,
            "Backend.gateway.envoyproxy.io" => Kind::EgBackend,
            "Service" => Kind::Service,
            "EndpointSlice" => Kind::EndpointSlice,
            "Pod" => Kind::Pod,
            "Secret" => Kind::Secret,
            "ConfigMap" => Kind::ConfigMap,
            "ClusterTrustBundle" => Kind::ClusterTrustBundle,
            "Namespace" => Kind::Namespace,
            _ => return None,
        })
    }
}

/// A type stored in a [`Model`](super::Model) map.
pub trait ModelKind {
    const KIND: Kind;
}

/// One read a tracked computation made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Read {
    /// One object, present or not.
    Key(Kind, ObjectKey),
    /// Every object of the kind in one namespace.
    Namespace(Kind, Name),
    /// Every object of the kind.
    All(Kind),
    /// The EndpointSlices that name a Service (by their `kubernetes.io/service-name` label).
    SlicesOf(ObjectKey),
    /// Something the translator derived once per translation and shares (an evaluated Backend, the
    /// BackendTLSPolicy applying to a Service), by a tag and the key it is about.
    Derived(&'static str, ObjectKey),
    /// Whether the source could read the kind at all ([`Model::unavailable`](super::Model::unavailable)).
    Unavailable(Kind),
}

thread_local! {
    static FRAMES: RefCell<Vec<Vec<Read>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f`, returning what it read from any model (nested calls record into every enclosing frame).
pub fn track<R>(f: impl FnOnce() -> R) -> (R, Vec<Read>) {
    FRAMES.with(|frames| frames.borrow_mut().push(Vec::new()));
    // Pops the frame even if `f` panics, so a later computation does not record into a stale one.
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            FRAMES.with(|frames| {
                frames.borrow_mut().pop();
            });
        }
    }
    let pop = Pop;
    let out = f();
    let reads = FRAMES.with(|frames| std::mem::take(frames.borrow_mut().last_mut().expect("own frame")));
    drop(pop);
    (out, reads)
}

/// Records `read` in every active frame (no-op outside [`track`]).
pub(crate) fn record(read: impl FnOnce() -> Read) {
    FRAMES.with(|frames| {
        let mut frames = frames.borrow_mut();
        let Some((last, outer)) = frames.split_last_mut() else {
            return;
        };
        let read = read();
        for f in outer {
            f.push(read.clone());
        }
        last.push(read);
    });
}

/// The objects of one kind, by key, in key order.
pub struct Objects<T> {
    map: imbl::OrdMap<ObjectKey, Shared<T>>,
}

/// An object as the map holds it: equal only to itself (the same `Arc`), so comparing two snapshots never
/// compares object contents — an object a source replaced counts as changed.
struct Shared<T>(Arc<T>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Clone for Objects<T> {
    fn clone(&self) -> Self {
        Self { map: self.map.clone() }
    }
}

impl<T> Default for Objects<T> {
    fn default() -> Self {
        Self {
            map: imbl::OrdMap::new(),
        }
    }
}

impl<T> Densify for Objects<T> {
    fn densify(&mut self) {
        self.map.densify();
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Objects<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.map.iter().map(|(k, v)| (k, &v.0))).finish()
    }
}

impl<T: ModelKind> Objects<T> {
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<T>> {
        record(|| Read::Key(T::KIND, key.clone()));
        self.map.get(key).map(|v| &v.0)
    }

    pub fn contains_key(&self, key: &ObjectKey) -> bool {
        self.get(key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Arc<T>)> {
        record(|| Read::All(T::KIND));
        self.map.iter().map(|(k, v)| (k, &v.0))
    }

    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        record(|| Read::All(T::KIND));
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects in namespace `ns`, in key order.
    pub fn in_namespace<'a>(&'a self, ns: &'a str) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<T>)> + 'a {
        record(|| Read::Namespace(T::KIND, Name::new(ns)));
        self.map
            .range(ObjectKey::new(ns, "")..)
            .take_while(move |(k, _)| k.namespace == ns)
            .map(|(k, v)| (k, &v.0))
    }

    pub(crate) fn insert(&mut self, key: ObjectKey, value: Arc<T>) -> Option<Arc<T>> {
        self.map.insert(key, Shared(value)).map(|v| v.0)
    }

    pub(crate) fn remove(&mut self, key: &ObjectKey) -> Option<Arc<T>> {
        self.map.remove(key).map(|v| v.0)
    }

    /// Keys whose object differs between `self` (older) and `other` (newer): added, changed (a different
    /// `Arc`) or removed. Proportional to what differs, not to the size of the maps. Not recorded.
    pub fn changed_keys<'a>(&'a self, other: &'a Self) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        use imbl::ordmap::DiffItem;
        self.map.diff(&other.map).map(|d| match d {
            DiffItem::Add(k, _) | DiffItem::Remove(k, _) | DiffItem::Update { old: (k, _), .. } => k,
        })
    }

    /// The object without recording the read (for the engine's own bookkeeping).
    pub(crate) fn peek(&self, key: &ObjectKey) -> Option<&Arc<T>> {
        self.map.get(key).map(|v| &v.0)
    }
}

impl<T: ModelKind> std::ops::Index<&ObjectKey> for Objects<T> {
    type Output = Arc<T>;

    fn index(&self, key: &ObjectKey) -> &Arc<T> {
        self.get(key).unwrap_or_else(|| panic!("no {:?} {key}", T::KIND))
    }
}

/// Same keys and equal objects (contents, not identity).
impl<T: ModelKind + PartialEq> PartialEq for Objects<T> {
    fn eq(&self, other: &Self) -> bool {
        self.map.len() == other.map.len()
            && self
                .map
                .iter()
                .zip(other.map.iter())
                .all(|((ka, a), (kb, b))| ka == kb && a.0 == b.0)
    }
}

impl<'a, T: ModelKind> IntoIterator for &'a Objects<T> {
    type Item = (&'a ObjectKey, &'a Arc<T>);
    type IntoIter = Box<dyn Iterator<Item = Self::Item> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl<T: ModelKind> FromIterator<(ObjectKey, Arc<T>)> for Objects<T> {
    fn from_iter<I: IntoIterator<Item = (ObjectKey, Arc<T>)>>(iter: I) -> Self {
        Self {
            map: iter.into_iter().map(|(k, v)| (k, Shared(v))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Meta, StoredService};

    fn svc() -> Arc<StoredService> {
        Arc::new(StoredService {
            metadata: Meta::default(),
            spec: None,
        })
    }

    #[test]
    fn reads_are_recorded_only_while_tracked() {
        let mut m: Objects<StoredService> = Objects::default();
        m.insert(ObjectKey::new("a", "x"), svc());
        m.insert(ObjectKey::new("b", "y"), svc());
        assert!(m.get(&ObjectKey::new("a", "x")).is_some(), "untracked reads work");
        let ((), reads) = track(|| {
            m.get(&ObjectKey::new("a", "x"));
            assert_eq!(m.in_namespace("b").count(), 1);
            let ((), inner) = track(|| {
                m.contains_key(&ObjectKey::new("c", "z"));
            });
            assert_eq!(inner, vec![Read::Key(Kind::Service, ObjectKey::new("c", "z"))]);
        });
        assert_eq!(
            reads,
            vec![
                Read::Key(Kind::Service, ObjectKey::new("a", "x")),
                Read::Namespace(Kind::Service, "b".into()),
                Read::Key(Kind::Service, ObjectKey::new("c", "z")),
            ]
        );
    }

    #[test]
    fn changed_keys_are_what_differs() {
        let mut a: Objects<StoredService> = Objects::default();
        for i in 0..1000 {
            a.insert(ObjectKey::new("ns", format!("s{i:04}")), svc());
        }
        let mut b = a.clone();
        b.insert(ObjectKey::new("ns", "s0005"), svc());
        b.remove(&ObjectKey::new("ns", "s0010"));
        b.insert(ObjectKey::new("ns", "new"), svc());
        let changed: Vec<String> = a.changed_keys(&b).map(|k| k.name.to_string()).collect();
        assert_eq!(changed, ["new", "s0005", "s0010"]);
        assert_eq!(a.changed_keys(&a.clone()).count(), 0);
    }
}
