//! A Gateway's route configurations and listeners: the virtual hosts a change touched rebuilt, the
//! configuration reassembled from its virtual hosts' encodings, and the listeners re-packed when what
//! their routes use changed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::GatewayState;
use super::ListenerEntries;
use crate::api::dense::Densify;
use crate::envoy::items::{Listening, Used};
use crate::gateway::RouteConfigGroup;
use crate::gateway::listeners::ListenerInfo;
use crate::gateway::routes::Entry;
use crate::gateway::vhosts;
use crate::ir as vhosts_ir;
use crate::ir::Name;
use crate::ir::names;
use crate::snapshot::Domain;
use crate::snapshot::{Res, RouteOut, VhostOut, put};

impl Densify for GatewayState {
    fn densify(&mut self) {
        self.slots.densify();
        self.index.densify();
        self.entries.iter_mut().for_each(Densify::densify);
        self.configs.densify();
        self.clusters.0.densify();
        self.cluster_uses.densify();
        self.providers.densify();
        self.uses.densify();
        self.out.densify();
    }
}

impl GatewayState {
    /// Rebuilds the route virtual hosts of configuration `name` for the touched hosts, then its extras
    /// and its resource. True if what its routes use changed.
    pub(super) fn refresh_routes(&mut self, name: &str, touched: &BTreeMap<usize, BTreeSet<Name>>) -> bool {
        let Some(config) = self.configs.get(name) else {
            return false;
        };
        let group = config.group.clone();
        let at = Listening {
            port: group.port,
            https: group.https,
        };
        self.encode_routes(&group, touched, at);
        let listeners = &self.base.listeners;
        let mut changes: Vec<(Domain, Option<Arc<VhostOut>>)> = Vec::new();
        for &li in &group.build {
            for host in touched.get(&li).into_iter().flatten() {
                let vh = builds(&self.entries[li], listeners, &group, li, host).then(|| {
                    let entries = &mut self.entries[li];
                    let name = names::virtual_host(&listeners[li].name, host);
                    Arc::new(entries.vhost(host, &name, &self.clusters, at))
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
            if vh.is_some() || config.vhosts.is_route(&domain) {
                config.vhosts.set(domain, vh, false);
            }
        }
        self.refresh_config(name)
    }

    /// Encodes the routes not encoded yet of the virtual hosts `refresh_routes` builds, on every core (a
    /// first translation encodes every route; an update, the few it added).
    fn encode_routes(&mut self, group: &RouteConfigGroup, touched: &BTreeMap<usize, BTreeSet<Name>>, at: Listening) {
        let listeners = &self.base.listeners;
        let entries = &self.entries;
        let hosts: Vec<(usize, &Name)> = group
            .build
            .iter()
            .flat_map(|&li| touched.get(&li).into_iter().flatten().map(move |h| (li, h)))
            .filter(|&(li, h)| builds(&entries[li], listeners, group, li, h))
            .collect();
        let pending: Vec<Vec<&Arc<Entry>>> = hosts
            .iter()
            .map(|&(li, host)| entries[li].unencoded(host).collect())
            .collect();
        let clusters = &self.clusters;
        let work: Vec<&Arc<Entry>> = pending.iter().flatten().copied().collect();
        let mut outs = crate::par::map(&work, |e| Arc::new(RouteOut::build(&e.route, clusters, at))).into_iter();
        let counts: Vec<usize> = pending.iter().map(Vec::len).collect();
        for ((li, host), n) in hosts.into_iter().zip(counts) {
            self.entries[li].encoded(host, outs.by_ref().take(n));
        }
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
        let vhosts = &config.vhosts;
        let extras = vhosts::extra_vhosts(listeners, &config.group.members, &config.group.build, &|d| {
            vhosts.is_route(&Domain(Name::from(d)))
        });
        let mut next: BTreeMap<Domain, vhosts_ir::VirtualHost> = BTreeMap::new();
        for vh in extras {
            next.entry(Domain(Name::from(&vh.domains[0]))).or_insert(vh);
        }
        let stale: Vec<Domain> = config
            .vhosts
            .extras()
            .iter()
            .filter(|d| !next.contains_key(*d))
            .cloned()
            .collect();
        for domain in stale {
            config.vhosts.set(domain, None, true);
        }
        for (domain, vh) in next {
            // Extras depend on the listeners alone, which a state never changes: keep what was built.
            if config.vhosts.extras().contains(&domain) {
                continue;
            }
            let built = Arc::new(VhostOut::build(&vh, &self.clusters, at));
            config.vhosts.set(domain, Some(built), true);
        }
        put(&mut self.out.routes, name, Res::route_config(name, config.vhosts.all()));
        let used = config.vhosts.used();
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

/// Does listener `li` of `group` build the virtual host of `host` (an entry carries it, and the listener
/// owns it)?
fn builds(
    entries: &ListenerEntries,
    listeners: &[ListenerInfo],
    group: &RouteConfigGroup,
    li: usize,
    host: &str,
) -> bool {
    entries.has_host(host) && vhosts::owns(listeners, &group.members, li, host)
}
