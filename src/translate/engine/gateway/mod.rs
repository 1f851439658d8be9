//! One Gateway's incremental state: its base (listeners, client certificate), the attachment of every
//! route that names it, and what those add up to — listener counts, the entries of each listener by
//! host, the virtual hosts and route configurations, the clusters and secrets in use — with each Envoy
//! resource packed once ([`GatewayOut`]).
//!
//! A route's attachment is replaced as a whole ([`GatewayState::replace`]): its old contributions are
//! taken away and the new ones added, recording what they touched; [`GatewayState::flush`] then rebuilds
//! exactly the touched virtual hosts, route configurations, clusters, load assignments, secrets and
//! listeners, and the Gateway's status. Built from empty (`translate()`), every route is a replacement
//! of nothing; the property test holds any sequence of replacements equal to that.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use gateway_api::apis::standard::gateways::Gateway;

mod configs;
mod proxyless;
mod vhosts;

use vhosts::Vhosts;

use super::counted::Counted;
use super::hosts::ListenerEntries;
use crate::envoy::items::{ClusterLookup, Used};
use crate::gateway::routes::RouteResult;
use crate::gateway::spec::{RouteKind, RouteOrder};
use crate::gateway::status::ObjectStatus;
use crate::gateway::{GatewayBase, RouteConfigGroup, gateways, listener_skeletons, route_config_groups};
use crate::ir;
use crate::model::ObjectKey;
use crate::options::Options;
use crate::snapshot::{GatewayOut, Res, put};

/// A route's attachment to this Gateway.
#[derive(Debug, Clone)]
pub struct Slot {
    pub kind: RouteKind,
    pub key: ObjectKey,
    pub result: RouteResult,
}

/// The clusters in use, by name, with how many targets use each.
#[derive(Debug, Default, Clone)]
struct Clusters(Counted<ir::Name, Arc<ir::Cluster>>);

impl ClusterLookup for Clusters {
    fn cluster(&self, name: &str) -> Option<&ir::Cluster> {
        self.0.get(name).map(|c| &**c)
    }
}

/// One route configuration: its virtual hosts from routes, the others it has (shadowed hostnames,
/// 421s), and what its routes use.
#[derive(Debug, Clone)]
struct RouteConfig {
    group: RouteConfigGroup,
    vhosts: Vhosts,
    used: Used,
}

#[derive(Debug, Clone)]
pub struct GatewayState {
    pub key: ObjectKey,
    pub gw: Arc<Gateway>,
    pub base: GatewayBase,
    skeletons: Vec<ir::Listener>,
    slots: BTreeMap<Arc<RouteOrder>, Slot>,
    /// Where each attached route is in `slots`.
    index: BTreeMap<(RouteKind, ObjectKey), Arc<RouteOrder>>,
    counts: Vec<i32>,
    entries: Vec<ListenerEntries>,
    configs: BTreeMap<String, RouteConfig>,
    clusters: Clusters,
    /// The SDS names each cluster in use references.
    cluster_uses: BTreeMap<String, Vec<String>>,
    /// Secret contents the targets bring, with how many bring each.
    providers: Counted<String, ir::Secret>,
    /// How many clusters and listener chains reference each SDS name.
    uses: Counted<String, ()>,
    pub out: GatewayOut,
    pub status: ObjectStatus,
    touched: Touched,
    /// How many GRPCRoutes attach here: none, and there is nothing to serve proxyless clients.
    grpc_routes: usize,
    proxyless: proxyless::Proxyless,
}

/// What changes since the last flush touched.
#[derive(Debug, Default, Clone)]
struct Touched {
    hosts: BTreeMap<usize, BTreeSet<ir::Name>>,
    clusters: BTreeSet<ir::Name>,
    secrets: BTreeSet<String>,
    counts: bool,
}

impl GatewayState {
    /// A Gateway with no route attached yet.
    pub fn new(key: ObjectKey, gw: Arc<Gateway>, base: GatewayBase, opts: &Options) -> GatewayState {
        let n = base.listeners.len();
        let status = gateways::status(&key, &gw, &base.listeners, base.cert_condition.clone());
        let mut state = GatewayState {
            skeletons: Vec::new(),
            slots: BTreeMap::new(),
            index: BTreeMap::new(),
            counts: vec![0; n],
            entries: vec![ListenerEntries::default(); n],
            configs: BTreeMap::new(),
            clusters: Clusters::default(),
            cluster_uses: BTreeMap::new(),
            providers: Counted::default(),
            uses: Counted::default(),
            out: GatewayOut::default(),
            status,
            touched: Touched::default(),
            grpc_routes: 0,
            proxyless: proxyless::Proxyless::default(),
            key,
            gw,
            base,
        };
        state.set_listeners(opts);
        state
    }

    /// The listeners' Envoy skeletons, their route configurations (empty), and the SDS names their
    /// chains use.
    fn set_listeners(&mut self, opts: &Options) {
        let groups = route_config_groups(&self.key, &self.base.listeners);
        self.skeletons = listener_skeletons(opts, &self.key, &self.base.listeners, &mut |_| Vec::new());
        for group in groups {
            let config = RouteConfig {
                group,
                vhosts: Vhosts::default(),
                used: Used::default(),
            };
            self.configs.insert(config.group.name.clone(), config);
        }
        for name in chain_secrets(&self.skeletons) {
            self.uses.add(&name, ());
            self.touched.secrets.insert(name);
        }
        self.touched.secrets.extend(self.base.secrets.keys().cloned());
        let names: Vec<String> = self.configs.keys().cloned().collect();
        for name in names {
            self.refresh_config(&name);
        }
        self.refresh_listeners();
    }

    /// Replaces the attachment of a route (`None`: it no longer attaches here); returns the old one.
    pub fn replace(
        &mut self,
        kind: RouteKind,
        key: &ObjectKey,
        new: Option<(Arc<RouteOrder>, RouteResult)>,
    ) -> Option<Slot> {
        let id = (kind, key.clone());
        let old = self.index.remove(&id).and_then(|order| self.slots.remove(&order));
        if let Some(old) = &old {
            self.take(&old.result);
            self.grpc_routes -= usize::from(kind == RouteKind::Grpc);
        }
        if let Some((order, result)) = new {
            self.give(&result);
            self.grpc_routes += usize::from(kind == RouteKind::Grpc);
            self.index.insert(id, order.clone());
            let key = key.clone();
            self.slots.insert(order, Slot { kind, key, result });
        }
        old
    }

    /// The attachment of a route, if it attaches here.
    pub fn slot(&self, kind: RouteKind, key: &ObjectKey) -> Option<&Slot> {
        self.slots.get(self.index.get(&(kind, key.clone()))?)
    }

    /// The attached routes, in precedence order.
    pub fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.slots.values()
    }

    /// Do routes of both kinds attach here (so one route's hostnames can decide another's acceptance)?
    pub fn mixed(&self) -> bool {
        let mut kinds = self.index.keys().map(|(k, _)| *k);
        kinds.next() != self.index.keys().next_back().map(|(k, _)| *k)
    }

    /// Takes a base that differs from the current one in its certificates' contents only (a Secret
    /// rotated): the secrets whose contents changed are re-served, nothing else is touched. False (and
    /// nothing changed) when more than that differs: the Gateway must be rebuilt.
    pub fn rotate(&mut self, base: GatewayBase) -> bool {
        let same = base.listeners == self.base.listeners
            && base.client_cert == self.base.client_cert
            && base.cert_condition == self.base.cert_condition;
        if !same {
            return false;
        }
        let names: BTreeSet<&String> = base.secrets.keys().chain(self.base.secrets.keys()).collect();
        for name in names {
            if base.secrets.get(name) != self.base.secrets.get(name) {
                self.touched.secrets.insert(name.clone());
            }
        }
        self.base = base;
        true
    }

    fn take(&mut self, r: &RouteResult) {
        for (li, _) in &r.attached {
            self.counts[*li] -= 1;
            self.touched.counts = true;
        }
        for t in &r.targets {
            self.clusters.0.remove(&t.cluster.name);
            self.touched.clusters.insert(t.cluster.name.clone());
            for s in t.secrets.keys() {
                self.providers.remove(s);
                self.touched.secrets.insert(s.clone());
            }
        }
        for e in &r.entries {
            let touched = self.touched.hosts.entry(e.listener).or_default();
            self.entries[e.listener].remove(&e.tie, touched);
        }
    }

    fn give(&mut self, r: &RouteResult) {
        for (li, _) in &r.attached {
            self.counts[*li] += 1;
            self.touched.counts = true;
        }
        for t in &r.targets {
            self.clusters.0.add(&t.cluster.name, t.cluster.clone());
            self.touched.clusters.insert(t.cluster.name.clone());
            for (name, secret) in &t.secrets {
                self.providers.add(name, secret.clone());
                self.touched.secrets.insert(name.clone());
            }
        }
        for e in &r.entries {
            let touched = self.touched.hosts.entry(e.listener).or_default();
            self.entries[e.listener].add(e.clone(), touched);
        }
    }

    /// Rebuilds what the changes since the last flush touched. True if the Gateway's resources changed.
    pub fn flush(&mut self) -> bool {
        let touched = std::mem::take(&mut self.touched);
        let before = self.out.clone();
        // Packing is most of a cluster's cost and needs nothing but the cluster: on every core.
        let names: Vec<&ir::Name> = touched.clusters.iter().collect();
        let clusters = &self.clusters;
        let packed = crate::par::map(&names, |name| PackedCluster::of(clusters, name));
        for (name, packed) in names.into_iter().zip(packed) {
            self.refresh_cluster(name, packed);
        }
        let mut configs: BTreeSet<String> = BTreeSet::new();
        for (li, hosts) in &touched.hosts {
            for (name, config) in &self.configs {
                if config.group.build.contains(li) && !hosts.is_empty() {
                    configs.insert(name.clone());
                }
            }
        }
        let mut used_changed = false;
        for name in &configs {
            used_changed |= self.refresh_routes(name, &touched.hosts);
        }
        if used_changed {
            self.refresh_listeners();
        }
        let mut secrets = touched.secrets;
        secrets.extend(self.touched.secrets.iter().cloned());
        self.touched.secrets.clear();
        for name in &secrets {
            self.refresh_secret(name);
        }
        if touched.counts {
            self.refresh_status();
        }
        if self.grpc_routes > 0 || !self.proxyless.is_empty() {
            self.refresh_proxyless(&touched.hosts, &touched.clusters);
        }
        self.out != before
    }

    /// Serves the cluster `name` (and its load assignment) as the targets now have it, and the secrets
    /// it uses; `None`: no target has it any more.
    fn refresh_cluster(&mut self, name: &str, packed: Option<PackedCluster>) {
        let old_uses = self.cluster_uses.remove(name).unwrap_or_default();
        for s in &old_uses {
            self.unuse(s);
        }
        let Some(PackedCluster {
            uses,
            cluster,
            endpoints,
        }) = packed
        else {
            self.out.clusters.remove(name);
            self.out.endpoints.remove(name);
            return;
        };
        for s in &uses {
            self.uses.add(s, ());
            self.touched.secrets.insert(s.clone());
        }
        self.cluster_uses.insert(name.to_string(), uses);
        match endpoints {
            Some(endpoints) => {
                put(&mut self.out.endpoints, name, endpoints);
            }
            None => {
                self.out.endpoints.remove(name);
            }
        }
        put(&mut self.out.clusters, name, cluster);
    }

    fn unuse(&mut self, s: &String) {
        self.uses.remove(s);
        self.touched.secrets.insert(s.clone());
    }

    /// The secret `name`, if something uses it and something provides it (targets first, then the
    /// Gateway's own certificates).
    fn refresh_secret(&mut self, name: &str) {
        let name = name.to_string();
        let content = self.providers.get(&name).or_else(|| self.base.secrets.get(&name));
        match content.filter(|_| self.uses.contains(&name)) {
            Some(s) => {
                let res = Res::secret(&name, s);
                put(&mut self.out.secrets, &name, res);
            }
            None => {
                self.out.secrets.remove(&name);
            }
        }
    }

    fn refresh_status(&mut self) {
        let mut listeners = self.base.listeners.clone();
        for (l, n) in listeners.iter_mut().zip(&self.counts) {
            l.attached_routes = *n;
        }
        self.status = gateways::status(&self.key, &self.gw, &listeners, self.base.cert_condition.clone());
    }
}

/// A cluster in use, packed: its resource, its load assignment if it has one, and the SDS names it uses.
struct PackedCluster {
    uses: Vec<String>,
    cluster: Res,
    endpoints: Option<Res>,
}

impl PackedCluster {
    /// `name` as the targets now have it; `None` if no target has it.
    fn of(clusters: &Clusters, name: &str) -> Option<PackedCluster> {
        let c = clusters.0.get(name)?;
        let cluster = Res::cluster(name, c);
        let endpoints = match &*c.discovery {
            ir::Discovery::Eds { endpoints } => Some(Res::endpoints(name, endpoints, &cluster)),
            _ => None,
        };
        Some(PackedCluster {
            uses: cluster_secrets(c),
            cluster,
            endpoints,
        })
    }
}

/// The SDS names a cluster's TLS references, collected to their length: kept with the packed cluster.
fn cluster_secrets(c: &ir::Cluster) -> Vec<String> {
    let Some(t) = &c.tls else { return Vec::new() };
    let trust = match &t.trust {
        ir::Trust::Sds(n) => Some(n.clone()),
        ir::Trust::InsecureSkipVerify => None,
    };
    trust.into_iter().chain(t.client_certificate.clone()).collect()
}

/// The SDS names the listeners' TLS chains reference.
fn chain_secrets(listeners: &[ir::Listener]) -> Vec<String> {
    let mut out = Vec::new();
    for l in listeners {
        if let ir::ListenerKind::Https { chains } = &l.kind {
            for c in chains {
                out.extend(c.certificates.iter().cloned());
                out.extend(c.client_validation.as_ref().map(|v| v.ca.clone()));
            }
        }
    }
    out
}
