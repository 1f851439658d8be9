//! Route entries of one Gateway listener, indexed by the hostnames they carry, so a changed entry tells
//! which virtual hosts it touches: its exact hostnames, and for a wildcard (or `*`) hostname every host
//! of the listener it serves.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::gateway::order;
use crate::gateway::routes::Entry;
use crate::gateway::spec::RouteOrder;
use crate::gateway::vhosts;

/// An entry's identity on its listener: the route's place, the rule and the match.
pub type EntryId = (Arc<RouteOrder>, usize, usize);

#[derive(Debug, Default, Clone)]
pub struct ListenerEntries {
    entries: BTreeMap<EntryId, Arc<Entry>>,
    /// Entries by each exact hostname they carry.
    exact: BTreeMap<String, BTreeSet<EntryId>>,
    /// Entries with a wildcard (or `*`) hostname.
    wild: BTreeSet<EntryId>,
    /// How many entries carry each hostname: the listener's hosts.
    hosts: BTreeMap<String, usize>,
}

impl ListenerEntries {
    /// Adds an entry; the hosts whose virtual host it changes go to `touched`.
    pub fn add(&mut self, e: Arc<Entry>, touched: &mut BTreeSet<String>) {
        let id = e.tie.clone();
        for h in &e.hostnames {
            *self.hosts.entry(h.clone()).or_default() += 1;
            if h.starts_with('*') {
                self.wild.insert(id.clone());
            } else {
                self.exact.entry(h.clone()).or_default().insert(id.clone());
            }
        }
        self.touch(&e, touched);
        self.entries.insert(id, e);
    }

    /// Removes the entry with `id`, if there is one; the hosts it touched go to `touched`.
    pub fn remove(&mut self, id: &EntryId, touched: &mut BTreeSet<String>) {
        let Some(e) = self.entries.remove(id) else {
            return;
        };
        self.touch(&e, touched);
        for h in &e.hostnames {
            if let Some(n) = self.hosts.get_mut(h) {
                *n -= 1;
                if *n == 0 {
                    self.hosts.remove(h);
                }
            }
            if h.starts_with('*') {
                self.wild.remove(id);
            } else if let Some(set) = self.exact.get_mut(h) {
                set.remove(id);
                if set.is_empty() {
                    self.exact.remove(h);
                }
            }
        }
    }

    /// The hosts an entry serves among the listener's hosts, and its own hostnames.
    fn touch(&self, e: &Entry, touched: &mut BTreeSet<String>) {
        touched.extend(e.hostnames.iter().cloned());
        if e.hostnames.iter().any(|h| h.starts_with('*')) {
            touched.extend(self.hosts.keys().filter(|h| vhosts::serving(e, h)).cloned());
        }
    }

    /// Does an entry carry `host`?
    pub fn has_host(&self, host: &str) -> bool {
        self.hosts.contains_key(host)
    }

    /// The entries that serve `host` (each once).
    pub fn serving(&self, host: &str) -> Vec<&Entry> {
        let mut ids: BTreeSet<&EntryId> = self.exact.get(host).into_iter().flatten().collect();
        ids.extend(self.wild.iter().filter(|id| vhosts::serving(&self.entries[*id], host)));
        ids.into_iter().map(|id| self.entries[id].as_ref()).collect()
    }
}

/// A virtual host's domain, ordered as virtual hosts are in a route configuration
/// (`order::hostname_specificity`: exact names, then longer wildcards, then `*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain(pub String);

impl Ord for Domain {
    fn cmp(&self, other: &Self) -> Ordering {
        order::hostname_specificity(&self.0, &other.0)
    }
}

impl PartialOrd for Domain {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
