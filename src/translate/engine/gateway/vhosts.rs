//! One route configuration's virtual hosts, in configuration order, with what their routes use kept
//! as counts: a virtual host added, replaced or removed costs its own size, not the configuration's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::envoy::items::Used;
use crate::envoy::pb::dfp_common::DnsCacheConfig;
use crate::snapshot::{Domain, VhostOut};

#[derive(Debug, Clone, Default)]
pub struct Vhosts {
    all: imbl::OrdMap<Domain, Arc<VhostOut>>,
    /// The virtual hosts that are not a route's (shadowed hostnames, 421s).
    extras: BTreeSet<Domain>,
    cors: usize,
    guard: usize,
    session: usize,
    /// The DNS caches of the virtual hosts that reach a dynamic-forward-proxy cluster: the first, in
    /// configuration order, is the one the filter fills (`Used::merge`).
    dfp: BTreeMap<Domain, DnsCacheConfig>,
}

impl Vhosts {
    /// Puts (or with `None` removes) the virtual host for `domain`; `extra` if it is not a route's.
    pub fn set(&mut self, domain: Domain, vh: Option<Arc<VhostOut>>, extra: bool) {
        if let Some(old) = self.all.remove(&domain) {
            self.count(&domain, &old.used, false);
            self.extras.remove(&domain);
        }
        if let Some(vh) = vh {
            self.count(&domain, &vh.used, true);
            if extra {
                self.extras.insert(domain.clone());
            }
            self.all.insert(domain, vh);
        }
    }

    fn count(&mut self, domain: &Domain, used: &Used, add: bool) {
        let step = |n: &mut usize, on: bool| match (on, add) {
            (false, _) => {}
            (true, true) => *n += 1,
            (true, false) => *n -= 1,
        };
        step(&mut self.cors, used.cors);
        step(&mut self.guard, used.authority_guard);
        step(&mut self.session, used.session);
        match (&used.dfp, add) {
            (Some(cache), true) => {
                self.dfp.insert(domain.clone(), cache.as_ref().clone());
            }
            (Some(_), false) => {
                self.dfp.remove(domain);
            }
            (None, _) => {}
        }
    }

    /// Is there a route's virtual host for `domain`?
    pub fn is_route(&self, domain: &Domain) -> bool {
        self.all.contains_key(domain) && !self.extras.contains(domain)
    }

    pub fn extras(&self) -> &BTreeSet<Domain> {
        &self.extras
    }

    /// Every virtual host, in configuration order (sharing structure: cloning is O(1)).
    pub fn all(&self) -> &imbl::OrdMap<Domain, Arc<VhostOut>> {
        &self.all
    }

    /// What the virtual hosts' routes use, as merging them in order would give.
    pub fn used(&self) -> Used {
        Used {
            cors: self.cors > 0,
            authority_guard: self.guard > 0,
            session: self.session > 0,
            dfp: self.dfp.values().next().cloned().map(Box::new),
        }
    }
}
