//! A Gateway's route configurations and listeners: the virtual hosts a change touched rebuilt, the
//! configuration reassembled from its virtual hosts' encodings, and the listeners re-packed when what
//! their routes use changed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::super::hosts::Domain;
use super::super::out::{Res, VhostOut, put};
use super::GatewayState;
use crate::envoy::items::{Listening, Used};
use crate::gateway::vhosts;

impl GatewayState {
    /// Rebuilds the route virtual hosts of configuration `name` for the touched hosts, then its extras
    /// and its resource. True if what its routes use changed.
    pub(super) fn refresh_routes(&mut self, name: &str, touched: &BTreeMap<usize, BTreeSet<String>>) -> bool {
        let Some(config) = self.configs.get(name) else {
            return false;
        };
        let group = config.group.clone();
        let at = Listening {
            port: group.port,
            https: group.https,
        };
        let listeners = &self.base.listeners;
        let mut changes: Vec<(Domain, Option<Arc<VhostOut>>)> = Vec::new();
        for &li in &group.build {
            for host in touched.get(&li).into_iter().flatten() {
                let entries = &self.entries[li];
                let vh = (entries.has_host(host) && vhosts::owns(listeners, &group.members, li, host)).then(|| {
                    let ir = vhosts::route_vhost(&listeners[li], host, entries.serving(host));
                    Arc::new(VhostOut::build(&ir, &self.clusters, at))
                });
                // Only the owner of a host builds its virtual host; another listener's touch does not
                // remove it.
                if vh.is_some() || vhosts::owns(listeners, &group.members, li, host) {
                    changes.push((Domain(host.clone()), vh));
                }
            }
        }
        let config = self.configs.get_mut(name).expect("checked above");
        for (domain, vh) in changes {
            match vh {
                Some(vh) => config.routes.insert(domain, vh),
                None => config.routes.remove(&domain),
            };
        }
        self.refresh_config(name)
    }

    /// Recomputes the extra virtual hosts, the resource and the `Used` of configuration `name`. True
    /// if `Used` changed.
    pub(super) fn refresh_config(&mut self, name: &str) -> bool {
        let listeners = &self.base.listeners;
        let config = self.configs.get_mut(name).expect("a known route configuration");
        let at = Listening {
            port: config.group.port,
            https: config.group.https,
        };
        let routes = &config.routes;
        let extras = vhosts::extra_vhosts(listeners, &config.group.members, &config.group.build, &|d| {
            routes.contains_key(&Domain(d.to_string()))
        });
        let mut next: BTreeMap<Domain, Arc<VhostOut>> = BTreeMap::new();
        for vh in extras {
            let domain = Domain(vh.domains[0].clone());
            if next.contains_key(&domain) {
                continue;
            }
            // Extras depend on the listeners alone, which a state never changes: reuse what was built.
            let built = config
                .extras
                .get(&domain)
                .cloned()
                .unwrap_or_else(|| Arc::new(VhostOut::build(&vh, &self.clusters, at)));
            next.insert(domain, built);
        }
        config.extras = next;
        let all: BTreeMap<&Domain, &Arc<VhostOut>> = config.extras.iter().chain(config.routes.iter()).collect();
        let mut used = Used::default();
        for vh in all.values() {
            used.merge(vh.used.clone());
        }
        let res = Res::route_config(name, all.values().map(|v| v.as_ref()));
        put(&mut self.out.routes, name, res);
        let changed = config.used != used;
        config.used = used;
        changed
    }

    /// Every listener resource, with the filters its route configurations' routes need.
    pub(super) fn refresh_listeners(&mut self) {
        let used: BTreeMap<String, Used> = self.configs.iter().map(|(n, c)| (n.clone(), c.used.clone())).collect();
        let mut names = BTreeSet::new();
        for l in &self.skeletons {
            put(&mut self.out.listeners, &l.name, Res::listener(l, &used));
            names.insert(l.name.clone());
        }
        let stale: Vec<String> = self
            .out
            .listeners
            .keys()
            .filter(|k| !names.contains(*k))
            .cloned()
            .collect();
        for k in stale {
            self.out.listeners.remove(&k);
        }
    }
}
