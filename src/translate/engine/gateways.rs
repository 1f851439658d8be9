//! The Gateways' side of an update: Gateways built, dropped and rebuilt, and routes attached anew.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::deps::{Changes, Unit};
use super::gateway::GatewayState;
use super::status::Subject;
use super::{Dirty, Engine, RouteId, Update};
use crate::api::dense::Densify;
use crate::gateway::backends::{Backends, Ctx};
use crate::gateway::routes::{self, Claims};
use crate::gateway::spec::RouteOrder;
use crate::gateway::{classes, gateway_base};
use crate::model::ObjectKey;
use crate::model::objects::track;

/// Routes attached on every core at a time, when they are independent.
const PARALLEL_BATCH: usize = 1024;

impl Densify for Engine {
    /// After a bulk update (a first translation, a relist), before the check allocates what it keeps,
    /// so the nodes freed here are reused ([`crate::api::dense`]). A one-shot engine ([`Engine::once`])
    /// skips it: it is dropped after its one update.
    fn densify(&mut self) {
        self.classes.densify();
        self.policies.densify();
        self.policy_targets.densify();
        self.policy_targets.values_mut().for_each(Densify::densify);
        self.evaluations.densify();
        self.deps.densify();
        self.routes.densify();
        self.naming.densify();
        self.naming.values_mut().for_each(Densify::densify);
        self.gateways.densify();
        self.gateways.values_mut().for_each(Densify::densify);
        self.refs.densify();
        self.statuses.densify();
    }
}

impl Engine {
    /// Brings every Gateway up to date: new ones built, gone ones dropped, changed ones rebuilt, and
    /// on the rest the routes that changed or whose inputs did attached anew.
    pub(super) fn refresh_gateways(
        &mut self,
        changes: &Changes,
        mut respecced: BTreeMap<ObjectKey, BTreeSet<RouteId>>,
        dirty: &mut Dirty,
        update: &mut Update,
    ) {
        if dirty.classes {
            let (names, statuses) = classes::process(&self.model, &self.opts);
            self.classes = names;
            for subject in self.statuses.classes() {
                self.statuses.set(subject, None);
            }
            for s in statuses {
                let key = ObjectKey::cluster(s.metadata.name.clone());
                self.statuses.set(Subject::Class(key), Some(s));
            }
        }
        let mut hit: BTreeMap<ObjectKey, BTreeSet<RouteId>> = BTreeMap::new();
        let mut base_hit: BTreeSet<ObjectKey> = BTreeSet::new();
        for unit in self.deps.hit(changes) {
            match unit {
                Unit::Route(gw, kind, key) => {
                    hit.entry(gw).or_default().insert((kind, key));
                }
                Unit::Base(gw) => {
                    base_hit.insert(gw);
                }
                _ => {}
            }
        }
        let scope: BTreeMap<ObjectKey, Arc<_>> = self
            .model
            .gateways
            .iter()
            .filter(|(_, gw)| self.classes.contains(&gw.spec.gateway_class_name))
            .map(|(k, gw)| (k.clone(), gw.clone()))
            .collect();
        let gone: Vec<ObjectKey> = self
            .gateways
            .keys()
            .filter(|k| !scope.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            self.drop_gateway(&key, dirty);
            update.gateways.insert(key);
        }
        for (key, gw) in scope {
            let mut ids = respecced.remove(&key).unwrap_or_default();
            ids.extend(hit.remove(&key).unwrap_or_default());
            let changed = match self.gateways.get_mut(&key) {
                // The same Gateway, or one re-read with the same content (a watch's resync, a file
                // saved with another object in it changed): nothing to rebuild.
                Some(state) if Arc::ptr_eq(&state.gw, &gw) || *state.gw == *gw => {
                    state.gw = gw;
                    self.refresh_gateway(&key, base_hit.contains(&key), ids, dirty)
                }
                _ => self.build_gateway(&key, gw, dirty),
            };
            if changed {
                update.gateways.insert(key);
            }
        }
    }

    /// A Gateway whose object did not change: its base re-read if its inputs changed (a rotated
    /// certificate is re-served in place; anything more rebuilds the Gateway), then `ids` attached
    /// anew. True if its resources changed.
    fn refresh_gateway(&mut self, key: &ObjectKey, base_hit: bool, ids: BTreeSet<RouteId>, dirty: &mut Dirty) -> bool {
        let state = self.gateways.get_mut(key).expect("a known Gateway");
        if base_hit {
            let gw = state.gw.clone();
            let (base, reads) = track(|| gateway_base(&self.model, key, &gw));
            self.deps.set(Unit::Base(key.clone()), reads);
            if base != state.base && !state.rotate(base) {
                return self.build_gateway(key, gw, dirty);
            }
        }
        let state = self.gateways.get(key).expect("a known Gateway");
        let mixed = state.mixed() || self.naming.get(key).is_some_and(mixed);
        let ids = if mixed && !ids.is_empty() {
            ids.into_iter()
                .chain(self.naming.get(key).into_iter().flatten().cloned())
                .collect()
        } else {
            ids
        };
        self.attach(key, ids, mixed, dirty);
        dirty.gateways.insert(key.clone());
        self.gateways.get_mut(key).expect("a known Gateway").flush()
    }

    /// Builds a Gateway's state anew (its object changed, or it is new); true if its resources differ
    /// from what it had.
    fn build_gateway(
        &mut self,
        key: &ObjectKey,
        gw: Arc<gateway_api::apis::standard::gateways::Gateway>,
        dirty: &mut Dirty,
    ) -> bool {
        let (base, reads) = track(|| gateway_base(&self.model, key, &gw));
        self.deps.set(Unit::Base(key.clone()), reads);
        let old = self.take_gateway(key, dirty);
        self.gateways
            .insert(key.clone(), GatewayState::new(key.clone(), gw, base, &self.opts));
        let ids = self.naming.get(key).cloned().unwrap_or_default();
        let claims = mixed(&ids);
        self.attach(key, ids, claims, dirty);
        dirty.gateways.insert(key.clone());
        let state = self.gateways.get_mut(key).expect("just built");
        state.flush();
        match old {
            Some(old) => {
                crate::snapshot::share(&mut state.out, &old.out);
                state.out != old.out
            }
            None => true,
        }
    }

    fn drop_gateway(&mut self, key: &ObjectKey, dirty: &mut Dirty) {
        self.take_gateway(key, dirty);
        self.deps.forget(&Unit::Base(key.clone()));
        dirty.gateways.insert(key.clone());
    }

    /// Removes a Gateway's state, letting go of everything its routes reached.
    fn take_gateway(&mut self, key: &ObjectKey, dirty: &mut Dirty) -> Option<GatewayState> {
        let old = self.gateways.remove(key)?;
        for slot in old.slots() {
            self.refs.remove(key, &slot.result.reached, &mut dirty.backends);
            self.deps.forget(&Unit::Route(key.clone(), slot.kind, slot.key.clone()));
            dirty.routes.insert((slot.kind, slot.key.clone()));
        }
        Some(old)
    }

    /// Attaches the routes `ids` to Gateway `key` anew (detaching those that no longer name it), in
    /// precedence order. `claims`: whether earlier routes' hostnames can refuse later ones (both route
    /// kinds attach here), in which case `ids` must be every route that names the Gateway.
    fn attach(&mut self, key: &ObjectKey, ids: BTreeSet<RouteId>, claims: bool, dirty: &mut Dirty) {
        let naming = self.naming.get(key);
        let (live, gone): (Vec<RouteId>, Vec<RouteId>) = ids.into_iter().partition(|id| {
            naming.is_some_and(|n| n.contains(id)) && self.routes.contains_key(id) && super::in_model(&self.model, id)
        });
        let state = self.gateways.get_mut(key).expect("a known Gateway");
        for (kind, rkey) in gone {
            if let Some(old) = state.replace(kind, &rkey, None) {
                self.refs.remove(key, &old.result.reached, &mut dirty.backends);
            }
            self.deps.forget(&Unit::Route(key.clone(), kind, rkey.clone()));
            dirty.routes.insert((kind, rkey));
        }
        let mut live: Vec<(&Arc<RouteOrder>, RouteId)> =
            live.into_iter().map(|id| (&self.routes[&id].order, id)).collect();
        live.sort();
        let ctx = Ctx {
            model: &self.model,
            opts: &self.opts,
        };
        let backends = Backends::new(ctx, &self.policies, &self.evaluations);
        let mut claimed = Claims::new();
        // Routes the Gateway accepts alike have equal status entries (at 10,000 routes, one list for
        // all): a list equal to the one before is shared, in the slot and so in the status.
        let mut last_parents = None;
        // Where no route's hostnames can refuse another's, the attachments are independent: a batch
        // of them runs on every core, and its results are applied in precedence order, as one thread
        // would. Batches bound what waits to be applied (a Gateway's rebuild at 50,000 routes).
        let batch = if claims { 1 } else { PARALLEL_BATCH };
        for ids in live.chunks(batch) {
            let scope = routes::Scope {
                model: &self.model,
                gateway: key,
                client_cert: state.base.client_cert.as_deref(),
                controller: &self.opts.controller_name,
            };
            let listeners = &state.base.listeners;
            let attached = crate::par::map(ids, |(_, id)| {
                let spec = super::read_spec(&self.model, id).expect("live routes are in the model");
                let (result, reads) = track(|| routes::attach(&scope, &backends, &spec, listeners, &claimed));
                (spec.order.clone(), result, reads)
            });
            for ((_, (kind, rkey)), (order, mut result, reads)) in ids.iter().zip(attached) {
                super::status::share(&mut last_parents, &mut result.parents);
                self.deps.set(Unit::Route(key.clone(), *kind, rkey.clone()), reads);
                if claims {
                    for (i, hosts) in &result.attached {
                        claimed.claim(*i, *kind, hosts);
                    }
                }
                self.refs.add(key, &result.reached, &mut dirty.backends);
                if let Some(old) = state.replace(*kind, rkey, Some((order, result))) {
                    self.refs.remove(key, &old.result.reached, &mut dirty.backends);
                }
                dirty.routes.insert((*kind, rkey.clone()));
            }
        }
    }
}

/// Do routes of both kinds name the Gateway?
fn mixed(ids: &BTreeSet<RouteId>) -> bool {
    ids.first().map(|(k, _)| *k) != ids.last().map(|(k, _)| *k)
}
