//! Route entries of one Gateway listener, indexed by the hostnames they carry, so a changed entry tells
//! which virtual hosts it touches: its exact hostnames, and for a wildcard (or `*`) hostname every host
//! of the listener it serves.
//!
//! Each host also keeps the entries that serve it in the order of its virtual host's routes
//! (`order::route_precedence` for that host), each with its encoding once built ([`RouteOut`]): an
//! entry added to a virtual host of N routes is one insertion and one encoding, and the virtual host is
//! reassembled from the encodings (`VhostOut::assemble`) rather than sorted, rebuilt and encoded anew.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::api::dense::Densify;
use crate::envoy::items::{ClusterLookup, Listening};
use crate::gateway::order;
use crate::gateway::routes::Entry;
use crate::gateway::spec::RouteOrder;
use crate::gateway::vhosts;
use crate::ir::Name;
use crate::ir::few::Few;
use crate::snapshot::{RouteOut, VhostOut};

/// An entry's identity on its listener: the route's place, the rule and the match.
pub type EntryId = (Arc<RouteOrder>, usize, usize);

#[derive(Debug, Default, Clone)]
pub struct ListenerEntries {
    entries: BTreeMap<EntryId, Arc<Entry>>,
    /// Entries by each exact hostname they carry.
    exact: BTreeMap<Name, Few<EntryId, ()>>,
    /// Entries with a wildcard (or `*`) hostname.
    wild: BTreeSet<EntryId>,
    /// How many entries carry each hostname: the listener's hosts.
    hosts: BTreeMap<Name, usize>,
    /// Per host, the entries that serve it in its virtual host's order, with their encodings once built.
    ranked: BTreeMap<Name, Few<Ranked, Option<Arc<RouteOut>>>>,
}

/// An entry in the order of the virtual host of `host` (one host per map, so the order is total: ties
/// fall to the entry's place among all routes).
#[derive(Debug, Clone)]
struct Ranked {
    host: Name,
    entry: Arc<Entry>,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        order::route_precedence(&self.host, &self.entry, &other.entry)
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl Densify for ListenerEntries {
    fn densify(&mut self) {
        self.entries.densify();
        self.exact.densify();
        self.wild.densify();
        self.hosts.densify();
        self.ranked.densify();
        self.ranked.values_mut().for_each(Few::densify);
    }
}

impl ListenerEntries {
    /// Adds an entry; the hosts whose virtual host it changes go to `touched`.
    pub fn add(&mut self, e: Arc<Entry>, touched: &mut BTreeSet<Name>) {
        let id = e.tie.clone();
        for h in &e.hostnames {
            let n = self.hosts.entry(Name::from(h)).or_default();
            *n += 1;
            if *n == 1 {
                self.open_host(h);
            }
            if h.starts_with('*') {
                self.wild.insert(id.clone());
            } else {
                self.exact.entry(Name::from(h)).or_default().insert(id.clone(), ());
            }
        }
        self.touch(&e, touched);
        for host in self.served_by(&e) {
            self.rank(&host, &e, true);
        }
        self.entries.insert(id, e);
    }

    /// A host appears: the wildcard entries already there that serve it join its virtual host (the entry
    /// being added, which may be in `wild` already, joins through `served_by`).
    fn open_host(&mut self, host: &str) {
        let serving: Vec<Arc<Entry>> = self
            .wild
            .iter()
            .filter_map(|id| self.entries.get(id).cloned())
            .filter(|w| vhosts::serving(w, host))
            .collect();
        let key = Name::from(host);
        let ranked = self.ranked.entry(key.clone()).or_default();
        for entry in serving {
            ranked.insert(
                Ranked {
                    host: key.clone(),
                    entry,
                },
                None,
            );
        }
    }

    /// The hosts of the listener `e` serves (it must be counted in `hosts` already).
    fn served_by(&self, e: &Entry) -> Vec<Name> {
        if e.hostnames.iter().any(|h| h.starts_with('*')) {
            self.hosts.keys().filter(|h| vhosts::serving(e, h)).cloned().collect()
        } else {
            e.hostnames.iter().map(Name::from).collect()
        }
    }

    /// Puts `e` in (or takes it out of) the order of `host`'s virtual host.
    fn rank(&mut self, host: &str, e: &Arc<Entry>, add: bool) {
        let Some(ranked) = self.ranked.get_mut(host) else {
            return;
        };
        let key = Ranked {
            host: Name::from(host),
            entry: e.clone(),
        };
        if add {
            ranked.insert(key, None);
        } else {
            ranked.remove(&key);
        }
    }

    /// Removes the entry with `id`, if there is one; the hosts it touched go to `touched`.
    pub fn remove(&mut self, id: &EntryId, touched: &mut BTreeSet<Name>) {
        let Some(e) = self.entries.remove(id) else {
            return;
        };
        self.touch(&e, touched);
        for host in self.served_by(&e) {
            self.rank(&host, &e, false);
        }
        for h in &e.hostnames {
            if let Some(n) = self.hosts.get_mut(h.as_str()) {
                *n -= 1;
                if *n == 0 {
                    self.hosts.remove(h.as_str());
                    self.ranked.remove(h.as_str());
                }
            }
            if h.starts_with('*') {
                self.wild.remove(id);
            } else if let Some(set) = self.exact.get_mut(h.as_str()) {
                set.remove(id);
                if set.is_empty() {
                    self.exact.remove(h.as_str());
                }
            }
        }
    }

    /// The hosts an entry serves among the listener's hosts, and its own hostnames.
    fn touch(&self, e: &Entry, touched: &mut BTreeSet<Name>) {
        touched.extend(e.hostnames.iter().map(Name::from));
        if e.hostnames.iter().any(|h| h.starts_with('*')) {
            touched.extend(self.hosts.keys().filter(|h| vhosts::serving(e, h)).cloned());
        }
    }

    /// Does an entry carry `host`?
    pub fn has_host(&self, host: &str) -> bool {
        self.hosts.contains_key(host)
    }

    /// The entries that serve `host`, in its virtual host's order.
    pub fn in_order(&self, host: &str) -> impl Iterator<Item = &Arc<Entry>> {
        self.ranked
            .get(host)
            .into_iter()
            .flat_map(|r| r.keys().map(|k| &k.entry))
    }

    /// The entries of `host`'s virtual host not encoded yet, in its order.
    pub fn unencoded(&self, host: &str) -> impl Iterator<Item = &Arc<Entry>> {
        self.ranked
            .get(host)
            .into_iter()
            .flat_map(|r| r.iter().filter(|(_, out)| out.is_none()).map(|(k, _)| &k.entry))
    }

    /// Gives the entries [`unencoded`](Self::unencoded) named, in the same order, their encodings.
    pub fn encoded(&mut self, host: &str, outs: impl IntoIterator<Item = Arc<RouteOut>>) {
        let Some(ranked) = self.ranked.get_mut(host) else {
            return;
        };
        let slots = ranked.iter_mut().filter(|(_, out)| out.is_none());
        for ((_, slot), out) in slots.zip(outs) {
            *slot = Some(out);
        }
    }

    /// The virtual host `name` of `host`: its routes in order, those not encoded yet encoded now.
    pub fn vhost(&mut self, host: &str, name: &str, clusters: &dyn ClusterLookup, at: Listening) -> VhostOut {
        let ranked = self.ranked.entry(Name::from(host)).or_default();
        for (r, out) in ranked.iter_mut() {
            if out.is_none() {
                *out = Some(Arc::new(RouteOut::build(&r.entry.route, clusters, at)));
            }
        }
        let routes = ranked.values().map(|o| o.as_deref().expect("encoded above"));
        VhostOut::assemble(name, &[host.to_string()], routes)
    }
}
