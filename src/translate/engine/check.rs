//! The integrity check (`envoy::check`) of one Gateway's engine output, at the cost of what changed:
//! the previous output and the next are persistent maps that share every unchanged resource, so their
//! difference is found without visiting the rest, and only the changed resources (and, inside a
//! changed route configuration, only the changed virtual hosts) are fed to the Gateway's
//! [`Checker`]. Each resource's facts are read once and kept beside it ([`Res`]), so a resource that
//! stays is never decoded again.
//!
//! It keeps, the same way, what each type's whole response would weigh ([`ResponseSizes`]): a proxy
//! that cannot take a response (gRPC clients accept 4 MiB by default) drops the stream and reconnects
//! into the same response, so the runtime refuses such a Gateway before publishing it.

use std::sync::Arc;

use imbl::ordmap::DiffItem;

use crate::envoy::check::{CheckError, Checker, VhostFacts};
use crate::envoy::pb::route;
use crate::snapshot::Domain;
use crate::snapshot::{GatewayOut, Res, VhostMap};

type Map = imbl::OrdMap<String, Arc<Res>>;

/// One Gateway's check, following its outputs.
#[derive(Default)]
pub struct GatewayCheck {
    checked: GatewayOut,
    checker: Checker<VhostKey>,
    sizes: ResponseSizes,
    /// The same for the proxyless gRPC half, which gRPC clients are served (they accept less).
    grpc_sizes: ResponseSizes,
}

/// Bytes a response carrying every resource of a type would take, per type, and how many resources
/// it holds. An upper bound for both ADS modes: each resource counts its packed message, its name, its
/// version and its type URL, as a delta response's `Resource` carries them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseSizes {
    pub clusters: TypeSize,
    pub endpoints: TypeSize,
    pub listeners: TypeSize,
    pub routes: TypeSize,
    pub secrets: TypeSize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeSize {
    pub bytes: usize,
    pub resources: usize,
}

/// Field tags and lengths around one resource in a response.
const FRAMING: usize = 16;
/// The longest type URL pier serves (`type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment`).
const TYPE_URL: usize = 70;

/// What `res`, named `name`, adds to a response.
pub fn weight(name: &str, res: &Res) -> usize {
    res.encoded_len() + name.len() + res.version.len() + TYPE_URL + FRAMING
}

impl ResponseSizes {
    /// Follows the change from `prev` to `next`, visiting only what differs.
    fn track(&mut self, prev: &GatewayOut, next: &GatewayOut) {
        let types = [
            (&mut self.clusters, &prev.clusters, &next.clusters),
            (&mut self.endpoints, &prev.endpoints, &next.endpoints),
            (&mut self.secrets, &prev.secrets, &next.secrets),
            (&mut self.listeners, &prev.listeners, &next.listeners),
            (&mut self.routes, &prev.routes, &next.routes),
        ];
        for (size, prev, next) in types {
            for (name, old, new) in changed(prev, next) {
                size.apply(name, old, new);
            }
        }
    }
}

impl TypeSize {
    fn apply(&mut self, name: &str, old: Option<&Res>, new: Option<&Res>) {
        if let Some(old) = old {
            self.bytes -= weight(name, old);
            self.resources -= 1;
        }
        if let Some(new) = new {
            self.bytes += weight(name, new);
            self.resources += 1;
        }
    }
}

/// A virtual host's place in its route configuration: the engine's domain key, or (for a
/// configuration the engine did not build) its position.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum VhostKey {
    Domain(Domain),
    Position(usize),
}

impl GatewayCheck {
    /// Checks `next`, the Gateway's newest output, against what changed since the last call.
    pub fn check(&mut self, next: &GatewayOut) -> Result<(), Vec<CheckError>> {
        let prev = std::mem::replace(&mut self.checked, next.clone());
        let c = &mut self.checker;
        let sizes = &mut self.sizes;
        for (name, old, res) in changed(&prev.clusters, &next.clusters) {
            sizes.clusters.apply(name, old, res);
            c.set_cluster(name, res.map(|r| r.cluster_facts()));
        }
        for (name, old, res) in changed(&prev.endpoints, &next.endpoints) {
            sizes.endpoints.apply(name, old, res);
            c.set_load_assignment(name, res.is_some());
        }
        for (name, old, res) in changed(&prev.secrets, &next.secrets) {
            sizes.secrets.apply(name, old, res);
            c.set_secret(name, res.map(|r| r.secret_kind()));
        }
        for (name, old, res) in changed(&prev.listeners, &next.listeners) {
            sizes.listeners.apply(name, old, res);
            c.set_listener(name, res.map(|r| r.listener_facts()));
        }
        for item in prev.routes.diff(&next.routes) {
            match item {
                DiffItem::Add(name, new) => {
                    sizes.routes.apply(name, None, Some(new));
                    c.set_route_config(name, true);
                    vhosts(c, name, &Vhosts::default(), &Vhosts::of(new));
                }
                DiffItem::Update {
                    old: (name, old),
                    new: (_, new),
                } => {
                    sizes.routes.apply(name, Some(old), Some(new));
                    vhosts(c, name, &Vhosts::of(old), &Vhosts::of(new));
                }
                DiffItem::Remove(name, old) => {
                    sizes.routes.apply(name, Some(old), None);
                    c.set_route_config(name, false);
                }
            }
        }
        let empty = GatewayOut::default();
        let (prev_grpc, next_grpc) = (prev.grpc.as_deref(), next.grpc.as_deref());
        self.grpc_sizes
            .track(prev_grpc.unwrap_or(&empty), next_grpc.unwrap_or(&empty));
        let errors = self.checker.errors();
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }

    /// What each type's whole response weighs in the gRPC half last checked.
    pub fn grpc_sizes(&self) -> ResponseSizes {
        self.grpc_sizes
    }

    /// What each type's whole response weighs in the output last checked.
    pub fn sizes(&self) -> ResponseSizes {
        self.sizes
    }
}

/// The resources of one type that changed: the old one and the new one (`None` where there is none).
type Change<'a> = (&'a str, Option<&'a Res>, Option<&'a Res>);

fn changed<'a>(prev: &'a Map, next: &'a Map) -> impl Iterator<Item = Change<'a>> {
    prev.diff(next).map(|item| match item {
        DiffItem::Add(name, new) => (name.as_str(), None, Some(new.as_ref())),
        DiffItem::Update {
            old: (name, old),
            new: (_, new),
        } => (name.as_str(), Some(old.as_ref()), Some(new.as_ref())),
        DiffItem::Remove(name, old) => (name.as_str(), Some(old.as_ref()), None),
    })
}

/// A route configuration's virtual hosts as the checker sees them.
#[derive(Default)]
enum Vhosts {
    #[default]
    None,
    Engine(VhostMap),
    Decoded(Vec<route::VirtualHost>),
}

impl Vhosts {
    fn of(res: &Res) -> Vhosts {
        match res.vhosts() {
            Some(map) => Vhosts::Engine(map.clone()),
            None => {
                let rc: route::RouteConfiguration = prost::Message::decode(res.resource().value.as_slice())
                    .expect("a packed route configuration decodes");
                Vhosts::Decoded(rc.virtual_hosts)
            }
        }
    }
}

fn vhosts(c: &mut Checker<VhostKey>, rc: &str, old: &Vhosts, new: &Vhosts) {
    if let (Vhosts::Engine(old), Vhosts::Engine(new)) = (old, new) {
        for item in old.diff(new) {
            match item {
                DiffItem::Add(k, v) | DiffItem::Update { new: (k, v), .. } => {
                    c.set_vhost(rc, VhostKey::Domain(k.clone()), Some(v.facts()));
                }
                DiffItem::Remove(k, _) => c.set_vhost(rc, VhostKey::Domain(k.clone()), None),
            }
        }
        return;
    }
    // Anything else (a first sight, or a configuration the engine did not build): all of it again.
    for key in keys(old) {
        c.set_vhost(rc, key, None);
    }
    match new {
        Vhosts::None => {}
        Vhosts::Engine(map) => {
            for (k, v) in map {
                c.set_vhost(rc, VhostKey::Domain(k.clone()), Some(v.facts()));
            }
        }
        Vhosts::Decoded(list) => {
            for (i, vh) in list.iter().enumerate() {
                c.set_vhost(rc, VhostKey::Position(i), Some(Arc::new(VhostFacts::of(vh))));
            }
        }
    }
}

fn keys(v: &Vhosts) -> Vec<VhostKey> {
    match v {
        Vhosts::None => vec![],
        Vhosts::Engine(map) => map.keys().cloned().map(VhostKey::Domain).collect(),
        Vhosts::Decoded(list) => (0..list.len()).map(VhostKey::Position).collect(),
    }
}
