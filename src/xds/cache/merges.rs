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
//! Entries hold weak references only: a merge lives while a stream serves it. A `Weak` keeps its
//! allocation, so a key's address cannot be reused by another snapshot while the entry exists.

use std::sync::{Arc, Mutex, Weak};

use super::{Snapshot, View};
use crate::xds::XdsType;

/// Distinct merges kept per snapshot (streams part ways only when their proxies ACK at different
/// times; a handful of generations in flight at once is the most a fleet shows).
const MAX_MERGES: usize = 16;

struct Merge {
    ty: XdsType,
    older: Vec<Weak<Snapshot>>,
    view: Weak<View>,
}

impl Merge {
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

/// A snapshot's merges with older snapshots, by type and older snapshots (newest first).
#[derive(Default)]
pub struct Merges(Mutex<Vec<Merge>>);

impl Merges {
    /// The merge of `ty` over `older`: shared if a stream still serves it, else `compute`d (under the
    /// lock, so a fan-out's streams wait for one computation rather than each making its own).
    pub fn get(&self, ty: XdsType, older: &[&Arc<Snapshot>], compute: impl FnOnce() -> Arc<View>) -> Arc<View> {
        let mut merges = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(view) = merges.iter().find(|m| m.is(ty, older)).and_then(|m| m.view.upgrade()) {
            return view;
        }
        let view = compute();
        merges.retain(|m| !m.is(ty, older) && m.view.strong_count() > 0);
        if merges.len() < MAX_MERGES {
            merges.push(Merge {
                ty,
                older: older.iter().map(|s| Arc::downgrade(s)).collect(),
                view: Arc::downgrade(&view),
            });
        }
        view
    }
}

impl Clone for Merges {
    /// A copied snapshot starts with no merges (they were computed over the original's views).
    fn clone(&self) -> Self {
        Merges::default()
    }
}

impl PartialEq for Merges {
    /// Merges are derived from snapshots' content: they never make two snapshots differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Merges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |v| v.len());
        write!(f, "Merges({n})")
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
            merges.get(XdsType::Cluster, older, || {
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
            .map(|s| merges.get(XdsType::Cluster, &[s], || Arc::new(View::empty())))
            .collect();
        assert_eq!(merges.0.lock().unwrap().len(), MAX_MERGES);
        let endpoints = merges.get(XdsType::Endpoint, &[&older[0]], || Arc::new(View::empty()));
        assert!(!Arc::ptr_eq(&endpoints, &held[0]));
    }
}
