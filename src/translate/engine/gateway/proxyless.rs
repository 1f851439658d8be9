//! What a Gateway serves proxyless gRPC clients, kept beside Envoy's and rebuilt the same way: only the
//! targets (`HOST:PORT`) whose hosts a change touched, then the clusters those targets reach.
//!
//! A target exists for each exact hostname of a GRPCRoute entry on a programmable listener port: its
//! routes are the GRPCRoute entries of that host's virtual host, in the same order Envoy gets them
//! (wildcard-hostname entries included where they serve the host). A wildcard hostname alone makes no
//! target: gRPC asks for listeners by exact name, and pier cannot know which names a client will use.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{GatewayState, Slot};
use crate::envoy::proxyless::{self, clusters as grpc, tls};
use crate::gateway::conditions::{Condition, RouteCondition, RouteReason, RouteType};
use crate::gateway::vhosts;
use crate::ir;
use crate::snapshot::{GatewayOut, Guard, Res, put};

/// The proxyless half of a Gateway.
#[derive(Debug, Clone, Default)]
pub struct Proxyless {
    /// Each target served, with the clusters its routes reach.
    targets: BTreeMap<(String, u16), Vec<String>>,
    out: GatewayOut,
}

impl Proxyless {
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

impl GatewayState {
    /// The `pier.dev/ProxylessGRPC` condition of a GRPCRoute attached here: the targets its exact
    /// hostnames are served at, and what of its rules and backends gRPC clients are refused. `None`
    /// when it serves no target (no exact hostname, or not a GRPCRoute): nothing to say.
    pub fn proxyless_condition(&self, slot: &Slot, generation: i64) -> Option<RouteCondition> {
        let r = &slot.result;
        let mut targets = BTreeSet::new();
        let mut problems = BTreeSet::new();
        for e in r.entries.iter().filter(|e| e.route.grpc) {
            let port = self.base.listeners[e.listener].port;
            for h in e.hostnames.iter().filter(|h| !h.starts_with('*')) {
                if self.proxyless.targets.contains_key(&(h.clone(), port)) {
                    targets.insert(format!("xds:///{}", proxyless::target(h, port)));
                }
            }
            if let Some(why) = proxyless::unsupported(&e.route) {
                problems.insert(format!("rule {}: {why}", e.tie.1));
            }
        }
        if targets.is_empty() {
            return None;
        }
        let mut refused: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut verified: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for t in &r.targets {
            let o = &t.cluster.origin;
            let what = || format!("{} {}/{} port {}", o.kind, o.namespace, o.name, o.port);
            if let Some(why) = grpc::refusal(&t.cluster) {
                refused.entry(why).or_default().insert(what());
            } else if let Some(i) = instance(&t.cluster) {
                verified.entry(i).or_default().insert(what());
            }
        }
        for (why, what) in refused {
            let what = what.into_iter().collect::<Vec<_>>().join(", ");
            problems.insert(format!(
                "{what}: not offered to gRPC clients, so calls there fail with UNAVAILABLE ({why})"
            ));
        }
        let at = targets.into_iter().collect::<Vec<_>>().join(", ");
        let mut tls = String::new();
        for (instance, what) in verified {
            let what = what.into_iter().collect::<Vec<_>>().join(", ");
            tls.push_str(&format!(
                "; TLS to {what} is verified against certificate provider {instance:?}, which a client's \
                 bootstrap must declare (pier bootstrap --grpc --trust-dir), else its calls there fail with \
                 UNAVAILABLE"
            ));
        }
        Some(if problems.is_empty() {
            Condition::ok(
                RouteType::ProxylessGrpc,
                RouteReason::Accepted,
                format!("served to proxyless gRPC clients at {at}{tls}"),
                generation,
            )
        } else {
            let list = problems.into_iter().collect::<Vec<_>>().join("; ");
            Condition::fail(
                RouteType::ProxylessGrpc,
                RouteReason::UnsupportedValue,
                format!("served to proxyless gRPC clients at {at}, except: {list}{tls}"),
                generation,
            )
        })
    }

    /// Rebuilds the targets of the touched hosts, then the clusters. `hosts`: per listener, the hosts a
    /// change touched; `clusters`: the clusters whose content changed.
    pub(super) fn refresh_proxyless(
        &mut self,
        hosts: &BTreeMap<usize, BTreeSet<ir::Name>>,
        clusters: &BTreeSet<ir::Name>,
    ) {
        let mut targets = BTreeSet::new();
        for (li, names) in hosts {
            let port = self.base.listeners[*li].port;
            targets.extend(names.iter().filter(|h| !h.starts_with('*')).map(|h| (h.clone(), port)));
        }
        for (host, port) in targets {
            self.refresh_target(&host, port);
        }
        self.refresh_grpc_clusters(clusters);
        let out = &self.proxyless.out;
        self.out.grpc = (!out.is_empty()).then(|| Box::new(out.clone()));
    }

    /// The GRPCRoute entries serving `host` on `port`, in order: those of the listener that owns the
    /// host there, as for Envoy's virtual host.
    fn grpc_entries(&self, host: &str, port: u16) -> Vec<ir::Route> {
        let listeners = &self.base.listeners;
        for config in self.configs.values().filter(|c| c.group.port == port) {
            for &li in &config.group.build {
                if self.entries[li].has_host(host) && vhosts::owns(listeners, &config.group.members, li, host) {
                    return self.entries[li]
                        .in_order(host)
                        .filter(|e| e.route.grpc)
                        .map(|e| e.route.clone())
                        .collect();
                }
            }
        }
        Vec::new()
    }

    fn refresh_target(&mut self, host: &str, port: u16) {
        let name = proxyless::target(host, port);
        let routes = self.grpc_entries(host, port);
        let p = &mut self.proxyless;
        if routes.is_empty() {
            p.targets.remove(&(host.to_string(), port));
            p.out.listeners.remove(&name);
            p.out.routes.remove(&name);
            return;
        }
        let clusters = &self.clusters.0;
        let one = |name: &str| clusters.get(name).is_some_and(|c| grpc::refusal(c).is_none());
        // An aggregate is offered when its members are (gRPC would wait on a member never sent).
        let offered = |name: &str| match clusters.get(name).map(|c| &*c.discovery) {
            Some(ir::Discovery::Aggregate { clusters: members }) => one(name) && members.iter().all(|m| one(m)),
            _ => one(name),
        };
        let built = proxyless::routes(&routes, &offered);
        put(&mut p.out.listeners, &name, Res::message(&proxyless::listener(&name)));
        let config = proxyless::route_config(&name, host, built.routes);
        put(&mut p.out.routes, &name, Res::message(&config));
        p.targets.insert((host.to_string(), port), built.clusters);
    }

    /// Serves every cluster the targets reach (and the members of aggregate ones) that a gRPC client
    /// can be given, rebuilding the ones that are new or whose content changed.
    fn refresh_grpc_clusters(&mut self, changed: &BTreeSet<ir::Name>) {
        let mut wanted = BTreeSet::new();
        let mut queue: Vec<String> = self.proxyless.targets.values().flatten().cloned().collect();
        while let Some(name) = queue.pop() {
            if let Some(ir::Discovery::Aggregate { clusters }) =
                self.clusters.0.get(name.as_str()).map(|c| &*c.discovery)
            {
                queue.extend(clusters.iter().filter(|m| !wanted.contains(*m)).cloned());
            }
            wanted.insert(name);
        }
        // A client that cannot verify a TLS backend is given its cluster pointing at UNAVAILABLE's
        // (empty) load assignment, so that must be served too.
        let guarded = |n: &String| self.clusters.0.get(n.as_str()).is_some_and(|c| instance(c).is_some());
        if wanted.iter().any(guarded) {
            wanted.insert(proxyless::UNAVAILABLE.to_string());
        }
        let p = &mut self.proxyless;
        let known: BTreeSet<String> = p.out.clusters.keys().cloned().collect();
        for name in known.union(&wanted) {
            let current = self
                .clusters
                .0
                .get(name.as_str())
                .map(|c| &**c)
                .filter(|_| wanted.contains(name));
            if known.contains(name) && current.is_some() && !changed.contains(name.as_str()) {
                continue;
            }
            if name == proxyless::UNAVAILABLE && wanted.contains(name) {
                let (cluster, cla) = grpc::unavailable();
                let res = Res::message(&cluster);
                put(&mut p.out.endpoints, name, Res::message(&cla).covering(&res));
                put(&mut p.out.clusters, name, res);
                continue;
            }
            p.put_cluster(name, current);
        }
    }
}

/// The certificate provider a client must declare to be given `c` as it is, if `c` is served with TLS.
fn instance(c: &ir::Cluster) -> Option<&str> {
    let t = c.tls.as_ref()?;
    grpc::refusal(c).is_none().then(|| tls::instance(t)).flatten()
}

impl Proxyless {
    /// Serves cluster `name` as `c` (its load assignment and its guard with it), or withdraws it when
    /// there is no `c` or a gRPC client cannot be given it.
    fn put_cluster(&mut self, name: &str, c: Option<&ir::Cluster>) {
        let out = &mut self.out;
        // Routes send a refused cluster's share elsewhere (`proxyless::routes`), so a refusal here is a
        // guard, not a path: a cluster gRPC cannot be given is never sent.
        let Some((c, cluster)) = c.and_then(|c| grpc::cluster(name, c).ok().map(|g| (c, g))) else {
            out.clusters.remove(name);
            out.endpoints.remove(name);
            out.guards.remove(name);
            return;
        };
        let res = Res::message(&cluster);
        match &*c.discovery {
            ir::Discovery::Eds { endpoints } => {
                let cla = Res::message(&grpc::load_assignment(name, endpoints)).covering(&res);
                put(&mut out.endpoints, name, cla);
            }
            _ => {
                out.endpoints.remove(name);
            }
        }
        put(&mut out.clusters, name, res);
        match instance(c) {
            Some(i) => {
                let guard = Guard {
                    instance: i.to_string(),
                    fallback: Arc::new(Res::message(&grpc::fallback(name))),
                };
                if out.guards.get(name).is_none_or(|g| **g != guard) {
                    out.guards.insert(name.to_string(), Arc::new(guard));
                }
            }
            None => {
                out.guards.remove(name);
            }
        }
    }
}
