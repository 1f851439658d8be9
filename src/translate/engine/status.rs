//! The statuses the engine keeps current, and who references which Backend (counted, so one route can
//! let go of what it reached without the others being redone).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::counted::Counted;
use crate::gateway::backends::{Reached, References};
use crate::gateway::conditions::BackendProblem;
use crate::gateway::spec::RouteKind;
use crate::gateway::status::{BackendParentStatus, ObjectStatus, PolicyAncestorStatus, StatusBody, StatusMeta};
use crate::ir::names::BackendKind;
use crate::model::ObjectKey;
use crate::snapshot::{StatusKey, StatusSet};

/// What a status is about, as the engine knows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    Class(ObjectKey),
    Gateway(ObjectKey),
    Route(RouteKind, ObjectKey),
    Backend(BackendKind, ObjectKey),
    Policy(ObjectKey),
}

impl Subject {
    /// Where the subject's status sits in the output ([`ObjectStatus::sort_key`]), derived rather
    /// than kept beside every status; `None` for a subject pier writes no status for (a Service).
    fn status_key(&self) -> Option<StatusKey> {
        use crate::api::consts::{GATEWAY_V1, KIND_BACKEND_TLS_POLICY, KIND_GATEWAY, KIND_GATEWAY_CLASS};
        let (api, kind, key) = match self {
            Subject::Class(key) => (GATEWAY_V1, KIND_GATEWAY_CLASS, key),
            Subject::Gateway(key) => (GATEWAY_V1, KIND_GATEWAY, key),
            Subject::Route(kind, key) => (GATEWAY_V1, kind.name(), key),
            Subject::Backend(kind, key) => {
                let (api, kind) = crate::gateway::backends::verdict::status_identity(*kind)?;
                (api, kind, key)
            }
            Subject::Policy(key) => (GATEWAY_V1, KIND_BACKEND_TLS_POLICY, key),
        };
        let meta = StatusMeta {
            namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
            name: key.name.clone(),
        };
        Some((kind, api, meta))
    }
}

/// Every status, in output order. A subject's place is derived from it ([`Subject::status_key`]):
/// keeping a subject-to-place index beside the map held each object's identity twice more.
///
/// Backends (and BackendTLSPolicies) that the same Gateways use with the same outcome have equal
/// ancestor lists (at 10,000 routes, one list for every XBackend), so a list equal to the last one of
/// its kind is shared with it rather than held again. They are evaluated in key order, so equal lists
/// mostly come together.
#[derive(Debug, Default, Clone)]
pub struct Statuses {
    map: StatusSet,
    last_backend: Option<Arc<[BackendParentStatus]>>,
    last_policy: Option<Arc<[PolicyAncestorStatus]>>,
}

/// `list`, or the last list of its kind when equal; else `list` becomes the last.
pub(super) fn share<T: PartialEq>(last: &mut Option<Arc<[T]>>, list: &mut Arc<[T]>) {
    match last {
        Some(l) if **l == **list => *list = Arc::clone(l),
        _ => *last = Some(Arc::clone(list)),
    }
}

impl crate::api::dense::Densify for Statuses {
    fn densify(&mut self) {
        self.map.densify();
    }
}

impl Statuses {
    /// Sets (or with `None` removes) the status of `subject`; true if that changed anything.
    pub fn set(&mut self, subject: Subject, status: Option<ObjectStatus>) -> bool {
        let Some(key) = subject.status_key() else {
            return false;
        };
        match status {
            Some(s) => {
                debug_assert_eq!(s.sort_key(), key, "a status is written where its subject says");
                if self.map.get(&key).is_some_and(|old| **old == s) {
                    return false;
                }
                let mut s = s;
                s.compact();
                match &mut s.status {
                    StatusBody::Backend { ancestors } => share(&mut self.last_backend, ancestors),
                    StatusBody::Policy { ancestors } => share(&mut self.last_policy, ancestors),
                    _ => {}
                }
                self.map.insert(key, Arc::new(s));
                true
            }
            None => self.map.remove(&key).is_some(),
        }
    }

    /// The subjects that are GatewayClasses (their statuses are recomputed together).
    pub fn classes(&self) -> Vec<Subject> {
        self.map
            .keys()
            .filter(|(kind, _, _)| *kind == crate::api::consts::KIND_GATEWAY_CLASS)
            .map(|(_, _, meta)| Subject::Class(ObjectKey::cluster(meta.name.clone())))
            .collect()
    }

    /// Every status, in output order (shared with the engine: cloning is O(1)).
    pub fn map(&self) -> &StatusSet {
        &self.map
    }

    pub fn list(&self) -> Vec<ObjectStatus> {
        self.map.values().map(|s| s.as_ref().clone()).collect()
    }
}

/// Which Gateways reference each Backend (and each Service), with per-Gateway Backend problems, as
/// counts over the routes that reached them; [`RefCounts::view`] is the `References` the status
/// functions read, and it holds the reference counts itself (a second map keyed by Backend and Gateway
/// held each pair's identity again).
#[derive(Debug, Default)]
pub struct RefCounts {
    problems: Counted<(BackendKind, ObjectKey, ObjectKey), BackendProblem>,
    pub view: References,
}

impl crate::api::dense::Densify for RefCounts {
    fn densify(&mut self) {
        self.problems.densify();
        self.view.referenced_by.densify();
        self.view.parent_problems.densify();
    }
}

impl RefCounts {
    /// A route attached to `gw` reached `reached`; what it touched goes to `touched`.
    pub fn add(&mut self, gw: &ObjectKey, reached: &Reached, touched: &mut BTreeSet<(BackendKind, ObjectKey)>) {
        for r in &reached.refs {
            // Nearly always one Gateway: room for one, not the four a first push would make.
            let gws = self
                .view
                .referenced_by
                .entry(r.clone())
                .or_insert_with(|| litemap::LiteMap::with_capacity(1));
            match gws.get_mut(gw) {
                Some(n) => *n += 1,
                None => {
                    gws.insert(gw.clone(), 1);
                }
            }
            touched.insert(r.clone());
        }
        for ((kind, key), p) in &reached.parent_problems {
            let id = (*kind, key.clone(), gw.clone());
            self.problems.add(&id, p.clone());
            self.view.parent_problems.insert(id, p.clone());
            touched.insert((*kind, key.clone()));
        }
    }

    /// A route attached to `gw` no longer reaches `reached`.
    pub fn remove(&mut self, gw: &ObjectKey, reached: &Reached, touched: &mut BTreeSet<(BackendKind, ObjectKey)>) {
        for r in &reached.refs {
            if let Some(gws) = self.view.referenced_by.get_mut(r)
                && let Some(n) = gws.get_mut(gw)
            {
                *n -= 1;
                if *n == 0 {
                    gws.remove(gw);
                    if gws.is_empty() {
                        self.view.referenced_by.remove(r);
                    }
                }
            }
            touched.insert(r.clone());
        }
        for ((kind, key), _) in &reached.parent_problems {
            let id = (*kind, key.clone(), gw.clone());
            if self.problems.remove(&id) {
                self.view.parent_problems.remove(&id);
            }
            touched.insert((*kind, key.clone()));
        }
    }
}
