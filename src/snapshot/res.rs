//! What the engine serves: each Envoy resource packed once, with its content version, in persistent maps
//! a snapshot shares ([`GatewayOut`]). A route configuration is assembled from its virtual hosts' own
//! encodings ([`VhostOut`]): a change to one virtual host re-encodes that one and copies the others'
//! bytes, and the configuration's version combines theirs.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};

use crate::envoy::check::{ClusterFacts, ListenerFacts, SecretKind};
use crate::envoy::fingerprint;
use crate::envoy::items::{self, Used};
use crate::envoy::pb::{cluster, endpoint, listener, route, tls};
use crate::ir;

use super::vhost::{VhostMap, vhost_fingerprint};

/// One Envoy resource as served: its content version, and its packed form. Two are equal when their
/// versions are: the bytes of equal messages can differ (protobuf map fields encode in hash order), the
/// version is a walk of the content in a fixed order.
///
/// A route configuration is packed on first use from its virtual hosts' encodings (the map is shared
/// with the engine, so keeping it costs nothing): the engine's update does not copy every virtual
/// host's bytes when one of them changed, and a configuration superseded before anything sent it is
/// never packed at all.
#[derive(Debug)]
pub struct Res {
    pub version: String,
    /// The version as a number, to combine with others (an endpoint's with its cluster's).
    pub fingerprint: u64,
    /// The packed message's length in bytes (known before it is packed).
    len: usize,
    packed: OnceLock<Any>,
    parts: Option<(Vec<u8>, VhostMap)>,
    /// What the integrity check knows of it, read once when first checked.
    facts: OnceLock<Facts>,
}

/// The integrity check's facts of a cluster, listener or secret (route configurations have theirs per
/// virtual host).
#[derive(Debug, Clone)]
pub enum Facts {
    Cluster(Arc<ClusterFacts>),
    Listener(Arc<ListenerFacts>),
    Secret(SecretKind),
}

impl PartialEq for Res {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
    }
}

impl Res {
    fn of<M: Message + Name>(m: &M) -> Res {
        let value = m.encode_to_vec();
        let fp = fingerprint::of_bytes::<M>(&value);
        Res {
            version: fingerprint::version(fp),
            fingerprint: fp,
            len: value.len(),
            packed: OnceLock::from(Any {
                type_url: M::type_url(),
                value,
            }),
            parts: None,
            facts: OnceLock::new(),
        }
    }

    /// The resource, packed.
    pub fn resource(&self) -> &Any {
        self.packed.get_or_init(|| {
            let (header, vhosts) = self.parts.as_ref().expect("a resource is packed or has parts");
            let mut value = Vec::with_capacity(header.len() + vhosts.values().map(|v| v.bytes.len()).sum::<usize>());
            value.extend_from_slice(header);
            for vh in vhosts.values() {
                value.extend_from_slice(&vh.bytes);
            }
            Any {
                type_url: route::RouteConfiguration::type_url(),
                value,
            }
        })
    }

    /// The packed message's length in bytes, without packing it.
    pub fn encoded_len(&self) -> usize {
        self.len
    }

    /// A route configuration's virtual hosts, when the engine built it.
    pub fn vhosts(&self) -> Option<&VhostMap> {
        self.parts.as_ref().map(|(_, vhosts)| vhosts)
    }

    /// A route configuration the engine built, in its parts: the encoding of every field but its
    /// virtual hosts, and each virtual host's own encoding, in order.
    pub fn route_parts(&self) -> Option<(&[u8], impl Iterator<Item = &[u8]>)> {
        let (header, vhosts) = self.parts.as_ref()?;
        Some((header.as_slice(), vhosts.values().map(|v| v.message())))
    }

    /// The check's facts of this cluster.
    pub fn cluster_facts(&self) -> Arc<ClusterFacts> {
        match self.facts(|any| Facts::Cluster(Arc::new(ClusterFacts::of(&unpack(any))))) {
            Facts::Cluster(f) => f.clone(),
            other => unreachable!("a cluster's facts are a cluster's: {other:?}"),
        }
    }

    /// The check's facts of this listener.
    pub fn listener_facts(&self) -> Arc<ListenerFacts> {
        match self.facts(|any| Facts::Listener(Arc::new(ListenerFacts::of(&unpack(any))))) {
            Facts::Listener(f) => f.clone(),
            other => unreachable!("a listener's facts are a listener's: {other:?}"),
        }
    }

    /// The check's facts of this secret.
    pub fn secret_kind(&self) -> SecretKind {
        match self.facts(|any| Facts::Secret(SecretKind::of(&unpack(any)))) {
            Facts::Secret(k) => *k,
            other => unreachable!("a secret's facts are a secret's: {other:?}"),
        }
    }

    fn facts(&self, read: impl FnOnce(&Any) -> Facts) -> &Facts {
        self.facts.get_or_init(|| read(self.resource()))
    }

    pub fn cluster(name: &str, c: &ir::Cluster) -> Res {
        Res::of(&items::cluster(name, c))
    }

    /// A load assignment's version covers its cluster's: Envoy re-warms a changed cluster and waits for a
    /// fresh assignment even when the endpoints are the same.
    pub fn endpoints(name: &str, endpoints: &[ir::Endpoint], cluster: &Res) -> Res {
        Res::of(&items::load_assignment(name, endpoints)).covering(cluster)
    }

    /// Any message pier builds (the proxyless gRPC resources: `envoy::proxyless`).
    pub fn message<M: Message + Name>(m: &M) -> Res {
        Res::of(m)
    }

    /// This resource versioned to change whenever `cluster` does too.
    pub fn covering(mut self, cluster: &Res) -> Res {
        self.fingerprint = fingerprint::combine([self.fingerprint, cluster.fingerprint]);
        self.version = fingerprint::version(self.fingerprint);
        self
    }

    pub fn listener(l: &ir::Listener, used: &BTreeMap<String, Used>) -> Res {
        Res::of(&items::listener(l, used))
    }

    pub fn secret(name: &str, s: &ir::Secret) -> Res {
        Res::of(&items::secret(name, s))
    }

    /// A route configuration from its virtual hosts, in order (packed when first used).
    pub fn route_config(name: &str, vhosts: &VhostMap) -> Res {
        let header = items::route_config(name);
        let bytes = header.encode_to_vec();
        let mut len = bytes.len();
        let fp = route_config_fingerprint(
            &header,
            vhosts.values().map(|v| {
                len += v.bytes.len();
                v.fingerprint
            }),
        );
        Res {
            version: fingerprint::version(fp),
            fingerprint: fp,
            len,
            packed: OnceLock::new(),
            parts: Some((bytes, vhosts.clone())),
            facts: OnceLock::new(),
        }
    }
}

/// A packed resource the engine encoded.
fn unpack<M: Message + Default>(any: &Any) -> M {
    M::decode(any.value.as_slice()).expect("the engine encoded it")
}

/// A Gateway's resources by type and name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayOut {
    pub clusters: imbl::OrdMap<String, Arc<Res>>,
    pub endpoints: imbl::OrdMap<String, Arc<Res>>,
    pub listeners: imbl::OrdMap<String, Arc<Res>>,
    pub routes: imbl::OrdMap<String, Arc<Res>>,
    pub secrets: imbl::OrdMap<String, Arc<Res>>,
    /// What proxyless gRPC clients of this Gateway are served (`envoy::proxyless`), if anything: their
    /// own listeners, routes, clusters and load assignments, never mixed with Envoy's.
    pub grpc: Option<Box<GatewayOut>>,
    /// Proxyless halves only: the clusters a client may be given only if its bootstrap declares a
    /// certificate provider (`envoy::proxyless::tls`), by cluster name.
    pub guards: imbl::OrdMap<String, Arc<Guard>>,
}

/// After a bulk update, by the engine, before it publishes (`api::dense`): Envoy's resources.
impl crate::api::dense::Densify for GatewayOut {
    fn densify(&mut self) {
        let GatewayOut {
            clusters,
            endpoints,
            listeners,
            routes,
            secrets,
            // The proxyless half is a copy of what the engine keeps for it, and rebuilding only the copy
            // would hold both; it is a few resources a gRPC service.
            grpc: _,
            guards: _,
        } = self;
        for map in [clusters, endpoints, listeners, routes, secrets] {
            map.densify();
        }
    }
}

/// A cluster that verifies its backend against certificate provider `instance`, which a gRPC client's
/// own bootstrap must define; a client without it is given `fallback` under the same name instead.
#[derive(Debug, PartialEq)]
pub struct Guard {
    pub instance: String,
    pub fallback: Arc<Res>,
}

impl GatewayOut {
    /// No resource of any type.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.endpoints.is_empty()
            && self.listeners.is_empty()
            && self.routes.is_empty()
            && self.secrets.is_empty()
            && self.grpc.is_none()
    }
}

/// Puts `res` at `name` unless the same version is there already (keeping the old `Arc`, so a snapshot
/// compares it as unchanged); true if it changed.
pub fn put(map: &mut imbl::OrdMap<String, Arc<Res>>, name: &str, res: Res) -> bool {
    if map.get(name).is_some_and(|old| old.version == res.version) {
        return false;
    }
    map.insert(name.to_string(), Arc::new(res));
    true
}

/// The resources of `out`, decoded (`translate()`'s form: `pier translate`, the goldens, tests).
pub fn decode(out: &GatewayOut) -> crate::envoy::Resources {
    fn all<M: Message + Default>(map: &imbl::OrdMap<String, Arc<Res>>) -> Vec<M> {
        map.values().map(|r| unpack(r.resource())).collect()
    }
    crate::envoy::Resources {
        clusters: all::<cluster::Cluster>(&out.clusters),
        endpoints: all::<endpoint::ClusterLoadAssignment>(&out.endpoints),
        listeners: all::<listener::Listener>(&out.listeners),
        routes: all::<route::RouteConfiguration>(&out.routes),
        secrets: all::<tls::Secret>(&out.secrets),
    }
}

/// Makes `next` share `prev`'s `Arc` for every resource whose version did not change, so consumers that
/// compare pointers (snapshots, streams) see only what a rebuilt Gateway really changed.
pub fn share(next: &mut GatewayOut, prev: &GatewayOut) {
    fn one(next: &mut imbl::OrdMap<String, Arc<Res>>, prev: &imbl::OrdMap<String, Arc<Res>>) {
        let same: Vec<(String, Arc<Res>)> = next
            .iter()
            .filter_map(|(name, r)| {
                let old = prev.get(name)?;
                (old.version == r.version && !Arc::ptr_eq(old, r)).then(|| (name.clone(), old.clone()))
            })
            .collect();
        for (name, old) in same {
            next.insert(name, old);
        }
    }
    one(&mut next.clusters, &prev.clusters);
    one(&mut next.endpoints, &prev.endpoints);
    one(&mut next.listeners, &prev.listeners);
    one(&mut next.routes, &prev.routes);
    one(&mut next.secrets, &prev.secrets);
    if let (Some(next), Some(prev)) = (next.grpc.as_deref_mut(), prev.grpc.as_deref()) {
        share(next, prev);
    }
}

/// Packs decoded resources the way the engine does, so the same content gets the same versions
/// whichever produced it (tests, tools and `Snapshot::build` hold decoded resources). A duplicate name
/// keeps the first resource: Envoy would reject a response that sends one twice.
pub fn pack(gateway: &str, res: &crate::envoy::Resources) -> GatewayOut {
    fn each<M: Message + Name>(
        gateway: &str,
        items: &[M],
        name: impl Fn(&M) -> &str,
        mut make: impl FnMut(&M) -> Res,
    ) -> imbl::OrdMap<String, Arc<Res>> {
        let mut map = imbl::OrdMap::new();
        for item in items {
            let key = name(item);
            if map.contains_key(key) {
                tracing::warn!(gateway, type_url = %M::type_url(), name = %key, "duplicate resource name; keeping the first");
                continue;
            }
            map.insert(key.to_string(), Arc::new(make(item)));
        }
        map
    }
    let clusters = each(gateway, &res.clusters, |c| &c.name, Res::of);
    let endpoints = each(
        gateway,
        &res.endpoints,
        |e| &e.cluster_name,
        |e| {
            let mut r = Res::of(e);
            if let Some(c) = clusters.get(&e.cluster_name) {
                r.fingerprint = fingerprint::combine([r.fingerprint, c.fingerprint]);
                r.version = fingerprint::version(r.fingerprint);
            }
            r
        },
    );
    GatewayOut {
        endpoints,
        listeners: each(gateway, &res.listeners, |l| &l.name, Res::of),
        routes: each(gateway, &res.routes, |r| &r.name, route_config_of),
        secrets: each(gateway, &res.secrets, |s| &s.name, Res::of),
        clusters,
        grpc: None,
        guards: imbl::OrdMap::new(),
    }
}

/// A decoded route configuration versioned as [`Res::route_config`] versions the engine's.
fn route_config_of(rc: &route::RouteConfiguration) -> Res {
    let header = route::RouteConfiguration {
        virtual_hosts: Vec::new(),
        ..rc.clone()
    };
    let fp = route_config_fingerprint(&header, rc.virtual_hosts.iter().map(vhost_fingerprint));
    let mut r = Res::of(rc);
    r.fingerprint = fp;
    r.version = fingerprint::version(fp);
    r
}

/// A route configuration's fingerprint: its header's, then each virtual host's in order.
fn route_config_fingerprint(header: &route::RouteConfiguration, vhosts: impl Iterator<Item = u64>) -> u64 {
    fingerprint::combine(std::iter::once(fingerprint::of(header)).chain(vhosts))
}
