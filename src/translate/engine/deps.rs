//! What changed between two models, and which units of work read it.
//!
//! Every unit the engine memoizes (one BackendTLSPolicy's verdict, one Backend's evaluation, one Gateway's base, one
//! route's attachment to one Gateway) ran under `model::objects::track`, so its reads are known exactly.
//! [`DepIndex`] inverts them: from a changed object (or a namespace, a kind, a Service's slices, a derived
//! result) to the units that read it. [`Changes`] is what a model diff gives, in the same terms.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::ir::few::Few;
use crate::model::objects::Read;
use crate::model::{Kind, Model, ModelKind, ObjectKey, Objects, slice_service};

/// One unit of memoized work.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    /// One BackendTLSPolicy's verdict.
    Policy(ObjectKey),
    Backend(crate::ir::names::BackendKind, ObjectKey),
    /// A Gateway's listeners, client certificate and their secrets.
    Base(ObjectKey),
    /// A route's attachment to a Gateway: (Gateway, route kind, route).
    Route(ObjectKey, crate::gateway::spec::RouteKind, ObjectKey),
}

/// Reads → units, and units → their reads (to forget them when a unit is redone).
///
/// Each read and each unit is stored once and shared (`Arc`) between the two maps: thousands of units
/// read the same few objects (every route reads its Gateway), and owned copies of each key made this
/// index a tenth of the engine's memory.
///
/// Hash maps, not B-trees: the index is only ever looked up, never walked in order (what `hit` returns
/// is ordered by the units themselves), and at 10,000 routes the B-trees' string comparisons were a
/// seventh of the first build.
#[derive(Debug, Default)]
pub struct DepIndex {
    by_read: foldhash::HashMap<Arc<Read>, Few<Arc<Unit>, ()>>,
    /// Boxed slices: a `Vec` collected in place from the recorded `Read`s (each several times an
    /// `Arc`'s size) kept their whole allocation; `into_boxed_slice` gives it back.
    reads_of: foldhash::HashMap<Arc<Unit>, Box<[Arc<Read>]>>,
    /// Records nothing: the engine of a one-shot translation, which no update follows.
    off: bool,
}

impl crate::api::dense::Densify for DepIndex {
    /// The index's maps are hashed; what a B-tree holds is the units that read one object, which for
    /// a Gateway or a namespace is every route on it.
    fn densify(&mut self) {
        self.by_read.values_mut().for_each(Few::densify);
    }
}

impl DepIndex {
    /// An index that records nothing, so hits nothing: for an engine that translates once (before any
    /// unit is recorded, every hit is empty anyway).
    pub fn off() -> DepIndex {
        DepIndex {
            off: true,
            ..DepIndex::default()
        }
    }

    pub fn is_off(&self) -> bool {
        self.off
    }

    /// Records that `unit` (redone) read `reads`, forgetting what it read before.
    pub fn set(&mut self, unit: Unit, mut reads: Vec<Read>) {
        if self.off {
            return;
        }
        self.forget(&unit);
        reads.sort();
        reads.dedup();
        let unit = Arc::new(unit);
        let reads: Box<[Arc<Read>]> = reads
            .into_iter()
            .map(|r| {
                self.by_read
                    .get_key_value(&r)
                    .map_or_else(|| Arc::new(r), |(shared, _)| shared.clone())
            })
            .collect();
        for r in &reads {
            self.by_read.entry(r.clone()).or_default().insert(unit.clone(), ());
        }
        self.reads_of.insert(unit, reads);
    }

    pub fn forget(&mut self, unit: &Unit) {
        for r in self.reads_of.remove(unit).into_iter().flat_map(Vec::from) {
            if let Some(units) = self.by_read.get_mut(&r) {
                units.remove(unit);
                if units.is_empty() {
                    self.by_read.remove(&r);
                }
            }
        }
    }

    /// The units that read anything in `changes`.
    pub fn hit(&self, changes: &Changes) -> BTreeSet<Unit> {
        let mut out = BTreeSet::new();
        for r in &changes.reads {
            if let Some(units) = self.by_read.get(r) {
                out.extend(units.keys().map(|u| Unit::clone(u)));
            }
        }
        out
    }
}

/// What differs between two models (and what the engine derived differently), as the reads that would
/// see it.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    pub reads: BTreeSet<Read>,
    /// Changed keys, by kind.
    pub keys: BTreeMap<Kind, BTreeSet<ObjectKey>>,
}

impl Changes {
    pub fn between(old: &Model, new: &Model) -> Changes {
        let mut c = Changes::default();
        c.diff(&old.gateway_classes, &new.gateway_classes);
        c.diff(&old.gateways, &new.gateways);
        c.diff(&old.http_routes, &new.http_routes);
        c.diff(&old.http_route_extras, &new.http_route_extras);
        c.diff(&old.grpc_routes, &new.grpc_routes);
        c.diff(&old.reference_grants, &new.reference_grants);
        c.diff(&old.backend_tls_policies, &new.backend_tls_policies);
        c.diff(&old.xbackends, &new.xbackends);
        c.diff(&old.backends, &new.backends);
        c.diff(&old.eg_backends, &new.eg_backends);
        c.diff(&old.services, &new.services);
        c.diff(&old.endpoint_slices, &new.endpoint_slices);
        c.diff(&old.pods, &new.pods);
        c.diff(&old.secrets, &new.secrets);
        c.diff(&old.config_maps, &new.config_maps);
        c.diff(&old.cluster_trust_bundles, &new.cluster_trust_bundles);
        c.diff(&old.namespaces, &new.namespaces);
        c.diff(&old.resolutions, &new.resolutions);
        // A kind turning unreadable (or readable, or unreadable for another reason).
        let (was, now): (BTreeMap<Kind, &str>, BTreeMap<Kind, &str>) =
            (old.unavailable_kinds().collect(), new.unavailable_kinds().collect());
        for kind in was.keys().chain(now.keys()) {
            if was.get(kind) != now.get(kind) {
                c.reads.insert(Read::Unavailable(*kind));
            }
        }
        // A slice moves between Services by its label: both the Service it left and the one it joined.
        for key in c.keys.get(&Kind::EndpointSlice).cloned().unwrap_or_default() {
            for model in [old, new] {
                if let Some(slice) = model.endpoint_slices.peek(&key)
                    && let Some(svc) = slice_service(&key, slice)
                {
                    c.reads.insert(Read::SlicesOf(svc));
                }
            }
        }
        c
    }

    fn diff<T: ModelKind>(&mut self, old: &Objects<T>, new: &Objects<T>) {
        for key in old.changed_keys(new) {
            self.reads.insert(Read::Key(T::KIND, key.clone()));
            self.reads.insert(Read::Namespace(T::KIND, key.namespace.clone()));
            self.reads.insert(Read::All(T::KIND));
            self.keys.entry(T::KIND).or_default().insert(key.clone());
        }
    }

    /// Something the engine derived (an evaluation, the policy for a Service) came out differently.
    pub fn derived(&mut self, tag: &'static str, key: ObjectKey) {
        self.reads.insert(Read::Derived(tag, key));
    }

    pub fn touches(&self, kind: Kind) -> bool {
        self.keys.contains_key(&kind)
    }

    pub fn keys(&self, kind: Kind) -> impl Iterator<Item = &ObjectKey> {
        self.keys.get(&kind).into_iter().flatten()
    }

    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }
}
