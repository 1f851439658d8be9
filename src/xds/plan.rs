//! Make-before-break, per stream, shared by SotW and delta: *which snapshot each type is served from*.
//!
//! Why: Envoy warms new clusters (a cluster is usable only once its endpoints arrived) and new listeners
//! (once their routes arrived), but **routes are not warmed**. A route that names a cluster the proxy has
//! not finished warming answers 503 (NC); a cluster removed while a route still names it does the same.
//! So a new snapshot is rolled out in three steps (`docs/serving.md`, P4):
//!
//! 1. **Clusters first.** Secrets, clusters and endpoints are served from the *latest* snapshot (`back`)
//!    merged with every older snapshot the proxy's listeners and routes may still point at (`front` and
//!    `pinned`), so CDS = new clusters ∪ the ones the new snapshot dropped. Listeners and routes stay on
//!    `front`.
//! 2. **Then listeners and routes**, once the proxy has acknowledged that cluster view (Envoy 1.40 sends
//!    the CDS ACK only after the new clusters' endpoints arrived): `front` becomes `back`, the old front is
//!    pinned. A rejected (NACKed) cluster view never promotes: its listeners and routes may name rejected
//!    clusters, and the proxy stays on its last good version until a newer snapshot is acknowledged.
//! 3. **Then removal.** Once the proxy acknowledged `front`'s listeners and routes, and asked for every
//!    route configuration of `front` (new listeners have subscribed to theirs, so the old listeners are
//!    gone), the pins are dropped and the next push of clusters, endpoints and secrets no longer carries
//!    the old ones. Pins are whole snapshots, not reference analysis: conservative, never early.
//!
//! A stream also starts "inherited": the proxy may run configuration from before this stream (a pier
//! restart). Delta streams hold back removals of what the proxy reports having until step 3 first
//! completes (which needs the proxy to have asked for listeners). SotW cannot: its cluster list is full
//! state and pier does not have the old resources to repeat. This file owns the ordering only: it never sees a request, a nonce or the wire format
//! (those are the `sotw` and `delta` state machines, which report progress through
//! [`Progress`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use super::XdsType;
use super::cache::{Snapshot, View};

/// Bound on remembered old snapshots: only a proxy that keeps rejecting listeners accumulates them.
const MAX_PINNED: usize = 8;

/// What a mode's state machine tells the plan about one stream.
pub trait Progress {
    /// The proxy has asked for this type on this stream.
    fn subscribed(&self, ty: XdsType) -> bool;
    /// The proxy acknowledged `view` for `ty`: nothing in flight, not rejected, nothing left to send.
    fn applied(&self, ty: XdsType, view: &View) -> bool;
    /// The proxy has asked for every resource in `view` (for routes: every listener has subscribed).
    fn requested_all(&self, ty: XdsType, view: &View) -> bool;
}

/// A step the plan took, for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Clusters acknowledged: listeners and routes now come from the latest snapshot.
    Promoted,
    /// Listeners and routes acknowledged: clusters, endpoints and secrets of older snapshots released.
    Released { snapshots: usize },
}

/// Per-stream rollout state. See the module docs.
#[derive(Debug)]
pub struct Plan {
    back: Option<Arc<Snapshot>>,
    front: Option<Arc<Snapshot>>,
    pinned: Vec<Arc<Snapshot>>,
    inherited: bool,
    views: [Option<Arc<View>>; 5],
}

impl Default for Plan {
    fn default() -> Self {
        Plan::new()
    }
}

impl Plan {
    pub fn new() -> Plan {
        Plan {
            back: None,
            front: None,
            pinned: Vec::new(),
            inherited: true,
            views: Default::default(),
        }
    }

    /// Records the latest snapshot; returns whether it differs from the one already known.
    pub fn set_latest(&mut self, snapshot: Arc<Snapshot>) -> bool {
        if self.back.as_ref().is_some_and(|b| Arc::ptr_eq(b, &snapshot)) {
            return false;
        }
        self.back = Some(snapshot);
        self.recompute();
        true
    }

    /// What is served for `ty` right now; `None` until there is something to serve (no snapshot yet,
    /// or, for listeners and routes, no acknowledged clusters yet).
    pub fn view(&self, ty: XdsType) -> Option<&Arc<View>> {
        self.views[ty.index()].as_ref()
    }

    /// When the content served for `ty` was published (see [`Snapshot::published`]): for clusters,
    /// endpoints and secrets the latest snapshot's date (older snapshots merged in add nothing new),
    /// for listeners and routes the date of the snapshot being rolled out.
    pub fn published(&self, ty: XdsType) -> Option<Instant> {
        self.source(ty).map(|s| s.published(ty))
    }

    /// The snapshot `ty` is served from.
    fn source(&self, ty: XdsType) -> Option<&Arc<Snapshot>> {
        if ty.is_gated() {
            self.front.as_ref()
        } else {
            self.back.as_ref()
        }
    }

    /// Listeners and routes come from the latest snapshot (its clusters were acknowledged).
    pub fn promoted(&self) -> bool {
        match (&self.back, &self.front) {
            (Some(back), Some(front)) => Arc::ptr_eq(back, front),
            (None, _) => true,
            (Some(_), None) => false,
        }
    }

    /// Delta only: while true, resources the proxy holds but the view lacks are not reported removed
    /// (the proxy's listeners may come from before this stream and still use them).
    pub fn holds_removals(&self) -> bool {
        self.inherited
    }

    /// Takes every step the proxy's progress allows; call after each request and each new snapshot.
    pub fn advance(&mut self, progress: &impl Progress) -> Vec<Step> {
        let mut steps = Vec::new();
        loop {
            if let Some(back) = &self.back
                && !self.front.as_ref().is_some_and(|f| Arc::ptr_eq(f, back))
                && self
                    .view(XdsType::Cluster)
                    .is_some_and(|v| !progress.subscribed(XdsType::Cluster) || progress.applied(XdsType::Cluster, v))
            {
                if let Some(old) = self.front.replace(back.clone()) {
                    self.pinned.insert(0, old);
                    if self.pinned.len() > MAX_PINNED {
                        tracing::warn!(
                            gateway = %back.gateway,
                            kept = MAX_PINNED,
                            "proxy has not acknowledged listeners and routes for many snapshots; forgetting the oldest"
                        );
                        self.pinned.truncate(MAX_PINNED);
                    }
                }
                self.recompute();
                steps.push(Step::Promoted);
                continue;
            }
            if self.front.is_some() && (self.inherited || !self.pinned.is_empty()) && self.front_applied(progress) {
                let snapshots = std::mem::take(&mut self.pinned).len();
                self.inherited = false;
                self.recompute();
                steps.push(Step::Released { snapshots });
                continue;
            }
            return steps;
        }
    }

    /// Whether the proxy runs `front`'s listeners and routes: it acknowledged the listeners, and asked
    /// for and acknowledged every route configuration. A proxy that never asked for listeners runs none
    /// of pier's, unless it may still run some from before this stream (`inherited`).
    fn front_applied(&self, progress: &impl Progress) -> bool {
        let (Some(listeners), Some(routes)) = (self.view(XdsType::Listener), self.view(XdsType::Route)) else {
            return false;
        };
        if !progress.subscribed(XdsType::Listener) {
            return !self.inherited;
        }
        let routes_applied = if progress.subscribed(XdsType::Route) {
            progress.applied(XdsType::Route, routes) && progress.requested_all(XdsType::Route, routes)
        } else {
            routes.entries.is_empty()
        };
        progress.applied(XdsType::Listener, listeners) && routes_applied
    }

    fn recompute(&mut self) {
        for ty in XdsType::ALL {
            self.views[ty.index()] = match self.source(ty) {
                Some(front) if ty.is_gated() => Some(front.view(ty).clone()),
                Some(back) => Some(self.merged(back, ty)),
                None => None,
            };
        }
    }

    /// `back`'s view of `ty` plus whatever `front` and the pins have that `back` lacks (newest first).
    /// Every stream in the same state serves the same merge, so it is computed once (`Snapshot::merged`).
    fn merged(&self, back: &Arc<Snapshot>, ty: XdsType) -> Arc<View> {
        let base = back.view(ty);
        let older: Vec<&Arc<Snapshot>> = self
            .front
            .iter()
            .chain(&self.pinned)
            .filter(|s| !Arc::ptr_eq(s.view(ty), base))
            .collect();
        if older.is_empty() {
            return base.clone();
        }
        back.merged(ty, &older, || {
            let mut extra: BTreeMap<&String, &Arc<_>> = BTreeMap::new();
            for view in older.iter().map(|s| s.view(ty)) {
                for (name, entry) in &view.entries {
                    if !base.entries.contains_key(name) {
                        extra.entry(name).or_insert(entry);
                    }
                }
            }
            if extra.is_empty() {
                return base.clone();
            }
            let mut entries = base.entries.clone();
            entries.extend(extra.into_iter().map(|(n, e)| (n.clone(), e.clone())));
            Arc::new(View::new(entries))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::envoy::Resources;
    use crate::envoy::pb::{cluster::Cluster, listener::Listener};

    /// A proxy that has applied exactly the recorded versions.
    #[derive(Default)]
    struct Proxy {
        applied: BTreeMap<XdsType, String>,
    }

    impl Progress for Proxy {
        fn subscribed(&self, _: XdsType) -> bool {
            true
        }
        fn applied(&self, ty: XdsType, view: &View) -> bool {
            self.applied.get(&ty) == Some(&view.version)
        }
        fn requested_all(&self, _: XdsType, _: &View) -> bool {
            true
        }
    }

    fn snap(clusters: &[&str], listener: &str) -> Arc<Snapshot> {
        let res = Resources {
            clusters: clusters
                .iter()
                .map(|n| Cluster {
                    name: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            listeners: vec![Listener {
                name: listener.to_string(),
                ..Default::default()
            }],
            ..Default::default()
        };
        Arc::new(Snapshot::build("ns/gw", &res))
    }

    fn names(plan: &Plan, ty: XdsType) -> BTreeSet<String> {
        plan.view(ty)
            .map(|v| v.entries.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn ack(proxy: &mut Proxy, plan: &Plan, ty: XdsType) {
        proxy.applied.insert(ty, plan.view(ty).unwrap().version.clone());
    }

    #[test]
    fn clusters_then_listeners_then_removal() {
        let (mut plan, mut proxy) = (Plan::new(), Proxy::default());
        plan.set_latest(snap(&["a"], "l1"));
        assert!(plan.advance(&proxy).is_empty());
        assert!(
            plan.view(XdsType::Listener).is_none(),
            "no listeners before the clusters are acknowledged"
        );
        ack(&mut proxy, &plan, XdsType::Cluster);
        assert_eq!(plan.advance(&proxy), vec![Step::Promoted]);
        for ty in [XdsType::Listener, XdsType::Route] {
            ack(&mut proxy, &plan, ty);
        }
        assert_eq!(plan.advance(&proxy), vec![Step::Released { snapshots: 0 }]);

        let (first, second) = (plan.back.clone().unwrap(), snap(&["b"], "l2"));
        plan.set_latest(second.clone());
        plan.advance(&proxy);
        assert_eq!(names(&plan, XdsType::Cluster), BTreeSet::from(["a".into(), "b".into()]));
        assert_eq!(names(&plan, XdsType::Listener), BTreeSet::from(["l1".into()]));
        // Each type is dated by the snapshot it is served from.
        let dated = |ty, s: &Arc<Snapshot>| assert_eq!(plan.published(ty), Some(s.published(ty)), "{ty}");
        dated(XdsType::Cluster, &second);
        dated(XdsType::Listener, &first);
        ack(&mut proxy, &plan, XdsType::Cluster);
        assert_eq!(plan.advance(&proxy), vec![Step::Promoted]);
        assert_eq!(names(&plan, XdsType::Listener), BTreeSet::from(["l2".into()]));
        assert_eq!(
            plan.published(XdsType::Listener),
            Some(second.published(XdsType::Listener))
        );
        assert_eq!(
            names(&plan, XdsType::Cluster).len(),
            2,
            "old cluster kept until the listeners are acknowledged"
        );
        ack(&mut proxy, &plan, XdsType::Listener);
        assert_eq!(plan.advance(&proxy), vec![Step::Released { snapshots: 1 }]);
        assert_eq!(names(&plan, XdsType::Cluster), BTreeSet::from(["b".into()]));
    }
}
