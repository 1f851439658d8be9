//! The statuses side of an update: each status an update touched, recomputed on its own.

use super::status::Subject;
use super::{Dirty, Engine};
use crate::gateway::MAX_ROUTE_PARENTS;
use crate::gateway::backend_tls;
use crate::gateway::backends;
use crate::gateway::spec::RouteKind;
use crate::gateway::status::{ObjectStatus, StatusBody};
use crate::model::ObjectKey;

impl Engine {
    /// Recomputes the statuses `dirty` names; true if any changed.
    pub(super) fn refresh_statuses(&mut self, mut dirty: Dirty) -> bool {
        let controller = self.opts.controller_name.clone();
        let mut changed = dirty.classes;
        for key in &dirty.gateways {
            let s = self.gateways.get(key).map(|s| s.status.clone());
            changed |= self.statuses.set(Subject::Gateway(key.clone()), s);
        }
        for (kind, key) in &dirty.routes {
            let s = self.route_status(*kind, key);
            changed |= self.statuses.set(Subject::Route(*kind, key.clone()), s);
        }
        for target in &dirty.backends {
            dirty
                .policies
                .extend(self.policy_targets.get(target).into_iter().flatten().cloned());
        }
        for (kind, key) in &dirty.backends {
            let s = self
                .evaluations
                .get(&(*kind, key.clone()))
                .and_then(|ev| backends::verdict::status_of(*kind, key, ev, &self.refs.view, &controller));
            changed |= self.statuses.set(Subject::Backend(*kind, key.clone()), s);
        }
        for key in &dirty.policies {
            let s = self
                .policies
                .verdicts
                .get(key)
                .and_then(|v| backend_tls::status_of(key, v, &self.refs.view, &controller));
            changed |= self.statuses.set(Subject::Policy(key.clone()), s);
        }
        changed
    }

    /// A route's `status.parents`: its entries for every pier Gateway it names, in Gateway order.
    fn route_status(&self, kind: RouteKind, key: &ObjectKey) -> Option<ObjectStatus> {
        let known = self.routes.get(&(kind, key.clone()))?;
        let mut parents: Vec<_> = known
            .gateways
            .iter()
            .filter_map(|gw| self.gateways.get(gw))
            .filter_map(|state| Some((state, state.slot(kind, key)?)))
            .flat_map(|(state, slot)| {
                let proxyless = state.proxyless_condition(slot, known.generation);
                slot.result.parents.iter().cloned().map(move |mut p| {
                    if p.conditions.first().is_some_and(|c| c.is_true()) {
                        p.conditions.extend(proxyless.clone());
                    }
                    p
                })
            })
            .collect();
        if parents.is_empty() {
            return None;
        }
        parents.truncate(MAX_ROUTE_PARENTS);
        Some(ObjectStatus::new(
            crate::api::consts::GATEWAY_V1,
            kind.name(),
            key,
            StatusBody::Route { parents },
        ))
    }
}
