//! The check kept current: [`Checker`] holds one Gateway's resource facts, the errors each "owner"
//! (a cluster, a load assignment, a virtual host, a domain of a route configuration, a listener) had
//! when last checked, and which names each owner read to get them. A changed resource marks itself and
//! the owners that read its name; only those are checked again. The owners' rules (`rules.rs`) read
//! every other resource through a recording lookup, so no dependency is declared by hand.
//!
//! A batch check feeds every resource of a set once; the serve pipeline feeds what changed between
//! two translations (`translate::engine::check`). Both end in the same rules, so they cannot disagree.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use super::CheckError;
use super::facts::{ClusterFacts, ListenerFacts, RouteFacts, SecretKind, VhostFacts};
use crate::api::dense::{BULK, Densify};
use crate::ir::few::Few;

/// Who errors belong to. `K` orders a route configuration's virtual hosts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Owner<K> {
    Cluster(Name),
    LoadAssignment(Name),
    /// The routes named so of a virtual host (one, unless a builder repeated a name).
    Route(Name, K, Name),
    /// A domain (lower-cased) of a route configuration, carried by one or more virtual hosts.
    Domain(Name, Name),
    Listener(Name),
}

/// A resource name in an owner or a read. Each owner and read is held twice (an owner's reads, a
/// read's owners), and the same name is an owner of one rule and a read of another, so names are
/// interned ([`crate::api::name::Name`]) rather than copied.
pub(super) type Name = crate::api::name::Name;

/// A name an owner's check read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Dep {
    Cluster(Name),
    LoadAssignment(Name),
    Secret(Name),
    RouteConfig(Name),
    /// The set of clusters a route configuration's routes reach.
    Reached(Name),
    /// Which clusters are dynamic forward proxies (or reach one), and their DNS caches.
    Dfp,
}

/// The routes of `old` that `new` lacks and those `new` brings, by `Arc` identity (routes whose facts
/// are equal but not shared count as both: checked again, which is always right).
fn changed_routes(old: Option<&VhostFacts>, new: Option<&VhostFacts>) -> (Vec<Arc<RouteFacts>>, Vec<Arc<RouteFacts>>) {
    fn routes(v: Option<&VhostFacts>) -> &[Arc<RouteFacts>] {
        v.map(|v| v.routes.as_slice()).unwrap_or_default()
    }
    let (old, new) = (routes(old), routes(new));
    let ptrs = |list: &[Arc<RouteFacts>]| list.iter().map(Arc::as_ptr).collect::<HashSet<_>>();
    let (old_ptrs, new_ptrs) = (ptrs(old), ptrs(new));
    let gone = old
        .iter()
        .filter(|r| !new_ptrs.contains(&Arc::as_ptr(r)))
        .cloned()
        .collect();
    let came = new
        .iter()
        .filter(|r| !old_ptrs.contains(&Arc::as_ptr(r)))
        .cloned()
        .collect();
    (gone, came)
}

/// One route configuration.
#[derive(Debug)]
pub(super) struct RouteConfigState<K> {
    pub vhosts: BTreeMap<K, Arc<VhostFacts>>,
    /// Domain (lower-cased) → the virtual hosts carrying it, each with its name and the domain as written
    /// (once per time it carries it). Nearly always one virtual host, so held inline.
    pub domains: BTreeMap<Name, Few<K, (Name, Vec<Name>)>>,
    /// Cluster → how many route actions reach it.
    pub reached: BTreeMap<Name, usize>,
}

impl<K> Default for RouteConfigState<K> {
    fn default() -> Self {
        RouteConfigState {
            vhosts: BTreeMap::new(),
            domains: BTreeMap::new(),
            reached: BTreeMap::new(),
        }
    }
}

/// One Gateway's check, kept current by the changes fed to it.
#[derive(Debug)]
pub struct Checker<K: Ord + Clone> {
    pub(super) clusters: BTreeMap<Name, Arc<ClusterFacts>>,
    pub(super) load_assignments: BTreeSet<Name>,
    pub(super) secrets: BTreeMap<Name, SecretKind>,
    pub(super) listeners: BTreeMap<Name, Arc<ListenerFacts>>,
    pub(super) route_configs: BTreeMap<Name, RouteConfigState<K>>,
    /// EDS service name → the EDS clusters that read it.
    pub(super) eds: BTreeMap<Name, BTreeSet<Name>>,
    /// DFP and aggregate clusters: what the DFP sets below are derived from.
    special: BTreeSet<Name>,
    /// DFP cluster → its DNS cache.
    pub(super) dfp_caches: BTreeMap<Name, String>,
    /// DFP clusters and aggregates with a DFP member: a route to any of them needs the guard.
    pub(super) dfp_reach: BTreeSet<Name>,
    dfp_stale: bool,
    errors: BTreeMap<Owner<K>, Vec<CheckError>>,
    reads: BTreeMap<Owner<K>, Vec<Dep>>,
    /// Nearly always one owner per name (a route reaches its own cluster), so held inline.
    readers: BTreeMap<Dep, Few<Owner<K>, ()>>,
    dirty: BTreeSet<Owner<K>>,
}

impl<K: Ord + Clone> Default for Checker<K> {
    fn default() -> Self {
        Checker {
            clusters: BTreeMap::new(),
            load_assignments: BTreeSet::new(),
            secrets: BTreeMap::new(),
            listeners: BTreeMap::new(),
            route_configs: BTreeMap::new(),
            eds: BTreeMap::new(),
            special: BTreeSet::new(),
            dfp_caches: BTreeMap::new(),
            dfp_reach: BTreeSet::new(),
            dfp_stale: false,
            errors: BTreeMap::new(),
            reads: BTreeMap::new(),
            readers: BTreeMap::new(),
            dirty: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Clone> Densify for Checker<K> {
    fn densify(&mut self) {
        self.clusters.densify();
        self.load_assignments.densify();
        self.secrets.densify();
        self.listeners.densify();
        for rc in self.route_configs.values_mut() {
            rc.vhosts.densify();
            rc.domains.densify();
            rc.domains.values_mut().for_each(Few::densify);
            rc.reached.densify();
        }
        self.eds.densify();
        self.special.densify();
        self.errors.densify();
        self.reads.densify();
        self.readers.densify();
        self.readers.values_mut().for_each(Few::densify);
    }
}

impl<K: Ord + Clone> Checker<K> {
    pub fn set_cluster(&mut self, name: &str, facts: Option<Arc<ClusterFacts>>) {
        let old = match &facts {
            Some(f) => self.clusters.insert(name.into(), f.clone()),
            None => self.clusters.remove(name),
        };
        let service = |f: &Option<Arc<ClusterFacts>>| f.as_ref().and_then(|f| f.eds_service.clone());
        let (was, now) = (service(&old), service(&facts));
        if was != now {
            if let Some(s) = &was
                && let Some(set) = self.eds.get_mut(s)
            {
                set.remove(name);
                if set.is_empty() {
                    self.eds.remove(s);
                }
            }
            if let Some(s) = &now {
                self.eds.entry(s.clone()).or_default().insert(name.into());
            }
            for s in [was, now].into_iter().flatten() {
                self.dirty.insert(Owner::LoadAssignment(s));
            }
        }
        let special = |f: &Option<Arc<ClusterFacts>>| {
            f.as_ref()
                .is_some_and(|f| f.aggregate.is_some() || f.dfp_cache.is_some())
        };
        if special(&old) || special(&facts) {
            self.dfp_stale = true;
            if special(&facts) {
                self.special.insert(name.into());
            } else {
                self.special.remove(name);
            }
        }
        self.dirty.insert(Owner::Cluster(name.into()));
        self.touch(Dep::Cluster(name.into()));
    }

    pub fn set_load_assignment(&mut self, name: &str, present: bool) {
        if present {
            self.load_assignments.insert(name.into());
        } else {
            self.load_assignments.remove(name);
        }
        self.dirty.insert(Owner::LoadAssignment(name.into()));
        self.touch(Dep::LoadAssignment(name.into()));
    }

    pub fn set_secret(&mut self, name: &str, kind: Option<SecretKind>) {
        match kind {
            Some(k) => self.secrets.insert(name.into(), k),
            None => self.secrets.remove(name),
        };
        self.touch(Dep::Secret(name.into()));
    }

    pub fn set_listener(&mut self, name: &str, facts: Option<Arc<ListenerFacts>>) {
        match facts {
            Some(f) => self.listeners.insert(name.into(), f),
            None => self.listeners.remove(name),
        };
        self.dirty.insert(Owner::Listener(name.into()));
    }

    /// A route configuration appears (empty) or goes away with its virtual hosts.
    pub fn set_route_config(&mut self, name: &str, present: bool) {
        if present {
            self.route_configs.entry(name.into()).or_default();
        } else {
            let keys: Vec<K> = self
                .route_configs
                .get(name)
                .map(|rc| rc.vhosts.keys().cloned().collect())
                .unwrap_or_default();
            for k in keys {
                self.set_vhost(name, k, None);
            }
            self.route_configs.remove(name);
        }
        self.touch(Dep::RouteConfig(name.into()));
    }

    /// A virtual host of a route configuration (which must be present) changes. Its routes are checked
    /// one by one: only those whose facts are not the very ones the virtual host had (`Arc` identity: an
    /// engine that rebuilt the virtual host around one changed route kept the others') are checked
    /// again, so a change costs a pass of pointer comparisons, not a check of every route.
    pub fn set_vhost(&mut self, rc_name: &str, key: K, facts: Option<Arc<VhostFacts>>) {
        let rc = self.route_configs.entry(rc_name.into()).or_default();
        let old = match &facts {
            Some(f) => rc.vhosts.insert(key.clone(), f.clone()),
            None => rc.vhosts.remove(&key),
        };
        let mut domains_touched = BTreeSet::new();
        if let Some(old) = &old {
            for d in &old.domains {
                let lower = d.to_ascii_lowercase();
                if let Some(carriers) = rc.domains.get_mut(lower.as_str()) {
                    carriers.remove(&key);
                    if carriers.is_empty() {
                        rc.domains.remove(lower.as_str());
                    }
                }
                domains_touched.insert(lower);
            }
        }
        if let Some(new) = &facts {
            for d in &new.domains {
                let lower = d.to_ascii_lowercase();
                let carriers = rc.domains.entry(Name::from(&lower)).or_default();
                let (_, written) =
                    carriers.get_or_insert_with(key.clone(), || (new.name.clone(), Vec::with_capacity(1)));
                written.push(d.clone());
                domains_touched.insert(lower);
            }
        }
        let (gone, came) = changed_routes(old.as_deref(), facts.as_deref());
        let mut reached_changed = false;
        for route in &gone {
            for c in &route.clusters {
                if let Some(n) = rc.reached.get_mut(c) {
                    *n -= 1;
                    if *n == 0 {
                        rc.reached.remove(c);
                        reached_changed = true;
                    }
                }
            }
        }
        for route in &came {
            for c in &route.clusters {
                let n = rc.reached.entry(c.clone()).or_default();
                *n += 1;
                reached_changed |= *n == 1;
            }
        }
        let rc: Name = rc_name.into();
        for d in domains_touched {
            self.dirty.insert(Owner::Domain(rc.clone(), d.into()));
        }
        for route in gone.iter().chain(&came) {
            self.dirty
                .insert(Owner::Route(rc.clone(), key.clone(), route.name.as_str().into()));
        }
        if reached_changed {
            self.touch(Dep::Reached(rc));
        }
    }

    /// Checks what changed since the last call and returns every current error: owners in order
    /// (clusters, load assignments, virtual hosts, domains, listeners), each owner's errors in the order
    /// its rules find them.
    pub fn errors(&mut self) -> Vec<CheckError> {
        if std::mem::take(&mut self.dfp_stale) {
            self.refresh_dfp();
        }
        let dirty = std::mem::take(&mut self.dirty);
        let bulk = dirty.len() >= BULK;
        for owner in dirty {
            for dep in self.reads.remove(&owner).unwrap_or_default() {
                if let Some(set) = self.readers.get_mut(&dep) {
                    set.remove(&owner);
                    if set.is_empty() {
                        self.readers.remove(&dep);
                    }
                }
            }
            let (errors, reads) = super::rules::check_owner(self, &owner);
            for dep in &reads {
                self.readers.entry(dep.clone()).or_default().insert(owner.clone(), ());
            }
            if !reads.is_empty() {
                self.reads.insert(owner.clone(), reads);
            }
            if errors.is_empty() {
                self.errors.remove(&owner);
            } else {
                self.errors.insert(owner, errors);
            }
        }
        if bulk {
            self.densify();
        }
        self.errors.values().flatten().cloned().collect()
    }

    /// Marks the owners that read `dep` for checking.
    fn touch(&mut self, dep: Dep) {
        if let Some(owners) = self.readers.get(&dep) {
            self.dirty.extend(owners.keys().cloned());
        }
    }

    fn refresh_dfp(&mut self) {
        let caches: BTreeMap<Name, String> = self
            .special
            .iter()
            .filter_map(|n| Some((n.clone(), self.clusters.get(n)?.dfp_cache.clone()?)))
            .collect();
        let mut reach: BTreeSet<Name> = caches.keys().cloned().collect();
        for n in &self.special {
            let members = self.clusters.get(n).and_then(|c| c.aggregate.as_ref());
            if members.is_some_and(|m| m.iter().any(|m| caches.contains_key(m.as_str()))) {
                reach.insert(n.clone());
            }
        }
        if caches != self.dfp_caches || reach != self.dfp_reach {
            self.dfp_caches = caches;
            self.dfp_reach = reach;
            self.touch(Dep::Dfp);
        }
    }
}
