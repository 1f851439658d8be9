//! Merged views (make-before-break), computed once per snapshot and set of older snapshots and shared
//! by every stream that serves the same merge.
//!
//! While a change rolls out, a stream serves clusters, endpoints and secrets from its latest snapshot
//! plus whatever the snapshots its proxy may still use have that the latest lacks (`plan`). Every
//! proxy of a Gateway goes through the same snapshots, so every stream computed the same merge: a
//! lookup of each older resource in the latest view, per stream, per change (a tenth of pier's time
//! in a 10,000-stream fan-out, docs/performance.md), and, when a resource was removed, a view of its
//! own per stream, which no other stream could share a response body with (`bodies`).
//!
//! Entries hold weak references only (`memo`): a merge lives while a stream serves it. A key's `Weak`
//! keeps its snapshot's allocation, so its address cannot be reused by another snapshot while the
//! entry exists.

use std::sync::{Arc, Weak};

use super::memo::WeakMemo;
use super::{Snapshot, View};
use crate::xds::XdsType;

/// Distinct merges kept per snapshot (streams part ways only when their proxies ACK at different
/// times; a handful of generations in flight at once is the most a fleet shows).
const MAX_MERGES: usize = 16;

/// Which merge: the type and the older snapshots, by address (newest first).
pub struct MergeKey {
    ty: XdsType,
    older: Vec<Weak<Snapshot>>,
}

impl MergeKey {
    fn is(&self, ty: XdsType, older: &[&Arc<Snapshot>]) -> bool {
        self.ty == ty
            && self.older.len() == older.len()
            && self
                .older
                .iter()
                .zip(older)
                .all(|(w, s)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(s)))
    }
}

/// A snapshot's merges with older snapshots.
pub type Merges = WeakMemo<MergeKey, View, MAX_MERGES>;

impl Merges {
    /// The merge of `ty` over `older`, shared with every stream that serves it while any does.
    pub fn merge(&self, ty: XdsType, older: &[&Arc<Snapshot>], compute: impl FnOnce() -> Arc<View>) -> Arc<View> {
        let key = || MergeKey {
            ty,
            older: older.iter().map(|s| Arc::downgrade(s)).collect(),
        };
        self.get(|k| k.is(ty, older), key, compute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::Resources;
    use crate::envoy::pb::cluster::Cluster;

    fn snap(clusters: &[&str]) -> Arc<Snapshot> {
        let res = Resources {
            clusters: clusters
                .iter()
                .map(|n| Cluster {
                    name: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        Arc::new(Snapshot::build("ns/gw", &res))
    }

    #[test]
    fn one_merge_per_set_of_older_snapshots_while_served() {
        let (back, a, b) = (snap(&["x"]), snap(&["x", "y"]), snap(&["z"]));
        let merges = Merges::default();
        let mut computed = 0;
        let mut get = |older: &[&Arc<Snapshot>]| {
            merges.merge(XdsType::Cluster, older, || {
                computed += 1;
                Arc::new(View::empty())
            })
        };
        let first = get(&[&a]);
        assert!(Arc::ptr_eq(&first, &get(&[&a])), "the same merge is shared");
        let other = get(&[&a, &b]);
        assert!(!Arc::ptr_eq(&first, &other), "other older snapshots are another merge");
        drop((first, other));
        get(&[&a]);
        assert_eq!(computed, 3, "a merge no stream holds is computed again");
        drop(back);
    }

    #[test]
    fn merges_are_per_type_and_bounded() {
        let older: Vec<_> = (0..MAX_MERGES + 3).map(|i| snap(&[&format!("c{i}")])).collect();
        let merges = Merges::default();
        let held: Vec<_> = older
            .iter()
            .map(|s| merges.merge(XdsType::Cluster, &[s], || Arc::new(View::empty())))
            .collect();
        assert_eq!(merges.len(), MAX_MERGES);
        let endpoints = merges.merge(XdsType::Endpoint, &[&older[0]], || Arc::new(View::empty()));
        assert!(!Arc::ptr_eq(&endpoints, &held[0]));
    }
}
