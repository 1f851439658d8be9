//! Assembles an [`Explanation`]: which Gateways the object is involved with, and on each, the route
//! entries that concern it grouped by Gateway listener, route and rule, with the clusters they reach.
//!
//! What "concerns it" means by kind: a route's own entries; a Gateway's every entry; a backend's the
//! entries that reach one of its clusters (directly or as an aggregate's member), plus, when a route's
//! status names the backend as a broken reference, that route's entries with an invalid share, since
//! an invalid backendRef leaves no cluster to trace (pier's outputs do not say which rule held it).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::envoy::{GatewayIndex, Owner, RawEntry};
use super::model::{ClusterView, Explanation, GatewayPath, ListenerPath, Origin, RulePath, State};
use super::subject::{Kind, Target};
use super::{Inputs, clusters, entries, related, status};

/// A route's identity: kind, namespace, name.
pub type RouteKey = (String, String, String);

/// What the explanation is being built from, and for what.
pub struct Ctx<'a> {
    pub inputs: &'a Inputs,
    pub target: &'a Target<'a>,
    /// `--gateway`.
    pub only: Option<&'a str>,
}

impl Ctx<'_> {
    pub fn kind(&self) -> Kind {
        self.target.subject.kind
    }

    /// A cluster built from the subject.
    pub fn is_subject(&self, o: &Origin) -> bool {
        let s = &self.target.subject;
        self.kind().origin_kinds().contains(&o.kind.as_str()) && o.namespace == s.namespace && o.name == s.name
    }

    fn allowed(&self, gateway: &str) -> bool {
        self.only.is_none_or(|g| g == gateway)
    }
}

pub fn build(ctx: &Ctx<'_>) -> Explanation {
    let naming = naming_routes(ctx);
    let mut notes = ctx.inputs.notes.clone();
    let mut gateways = Vec::new();
    let gws = candidate_gateways(ctx, &naming);
    for g in &gws {
        let Some(doc) = ctx.inputs.gateways.get(g) else {
            notes.push(format!(
                "Gateway {g}: pier publishes no configuration for it (see its conditions)"
            ));
            continue;
        };
        for n in ctx.inputs.gateway_notes.get(g).into_iter().flatten() {
            notes.push(format!("Gateway {g}: {n}"));
        }
        let empty = BTreeSet::new();
        gateways.push(gateway_path(ctx, g, doc, naming.get(g).unwrap_or(&empty)));
    }
    let no_cluster = gateways.iter().all(|p| p.clusters.is_empty());
    if ctx.kind().is_backend() && ctx.target.statuses.is_empty() && no_cluster {
        notes.push(format!(
            "pier has no status and no cluster for {} {}: only route conditions name it (see them)",
            ctx.kind(),
            ctx.target.subject.key()
        ));
    }
    if ctx.kind().is_backend() && naming.values().any(|r| !r.is_empty()) {
        notes.push("a route whose status names this object as a broken reference has its entries with an invalid share shown; pier's outputs do not say which of its rules held the reference".to_string());
    }
    let conditions = related::conditions(ctx, &gateways, &gws, &naming, &mut notes);
    let count = |state| {
        conditions
            .iter()
            .flat_map(|o| &o.conditions)
            .filter(|c| c.state == state)
            .count()
    };
    Explanation {
        subject: ctx.target.view.clone(),
        problems: count(State::Problem),
        warnings: count(State::Warning),
        gateways,
        conditions,
        notes,
    }
}

/// Per Gateway, the routes whose status there names the subject in a problem (backends only).
fn naming_routes(ctx: &Ctx<'_>) -> BTreeMap<String, BTreeSet<RouteKey>> {
    let mut out: BTreeMap<String, BTreeSet<RouteKey>> = BTreeMap::new();
    if !ctx.kind().is_backend() {
        return out;
    }
    let want = (ctx.kind().status_kind().to_string(), ctx.target.subject.key());
    for o in routes(ctx.inputs) {
        for (g, m, _) in status::scoped_messages(o).filter(|(_, _, problem)| *problem) {
            if let Some(g) = g.filter(|g| ctx.allowed(g) && status::named_refs(m).contains(&want)) {
                out.entry(g).or_default().insert(route_key(o));
            }
        }
    }
    out
}

/// Every HTTPRoute and GRPCRoute status object.
pub fn routes(inputs: &Inputs) -> impl Iterator<Item = &Value> {
    inputs
        .objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("HTTPRoute" | "GRPCRoute")))
}

pub fn route_key(o: &Value) -> RouteKey {
    let (kind, _, key) = status::identity(o);
    let (ns, name) = key.split_once('/').unwrap_or_default();
    (kind.to_string(), ns.to_string(), name.to_string())
}

/// The Gateways the subject is involved with, within `--gateway`.
fn candidate_gateways(ctx: &Ctx<'_>, naming: &BTreeMap<String, BTreeSet<RouteKey>>) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = ctx
        .target
        .statuses
        .iter()
        .flat_map(|o| status::gateways_of(o))
        .collect();
    match ctx.kind() {
        Kind::Gateway => {
            out.insert(ctx.target.subject.key());
        }
        k if k.is_backend() => {
            out.extend(naming.keys().cloned());
            for (g, doc) in &ctx.inputs.gateways {
                let clusters = doc["clusters"].as_array().into_iter().flatten();
                if clusters.filter_map(clusters::origin).any(|o| ctx.is_subject(&o)) {
                    out.insert(g.clone());
                }
            }
        }
        _ => {}
    }
    out.retain(|g| ctx.allowed(g));
    out
}

fn gateway_path(ctx: &Ctx<'_>, g: &str, doc: &Value, naming: &BTreeSet<RouteKey>) -> GatewayPath {
    let index = GatewayIndex::new(doc);
    let subject_clusters = |c: &str| reaches_subject(ctx, &index, c);
    let selected: Vec<RawEntry<'_>> = index
        .entries()
        .into_iter()
        .filter(|e| {
            let Some(owner) = &e.owner else { return false };
            match ctx.kind() {
                Kind::Gateway => true,
                Kind::HttpRoute | Kind::GrpcRoute => {
                    let s = &ctx.target.subject;
                    owner.kind == s.kind.status_kind() && owner.namespace == s.namespace && owner.name == s.name
                }
                _ => {
                    entries::clusters(e.json).iter().any(|c| subject_clusters(c))
                        || (naming.contains(&owner_key(owner)) && entries::has_invalid_share(e.json))
                }
            }
        })
        .collect();
    let mut reached = BTreeSet::new();
    for e in &selected {
        for c in entries::clusters(e.json) {
            with_members(&index, c, &mut reached);
        }
    }
    if ctx.kind().is_backend() {
        reached.retain(|c| subject_clusters(c));
    }
    let proxyless = match ctx.kind() {
        Kind::Gateway => super::proxyless::targets(doc, None),
        Kind::GrpcRoute => {
            let s = &ctx.target.subject;
            super::proxyless::targets(doc, Some((&s.namespace, &s.name)))
        }
        _ => Vec::new(),
    };
    GatewayPath {
        gateway: g.to_string(),
        proxyless,
        listeners: listeners(ctx, g, &index, &selected),
        clusters: reached
            .iter()
            .map(|c| clusters::view(&index, c))
            .collect::<Vec<ClusterView>>(),
    }
}

fn owner_key(o: &Owner) -> RouteKey {
    (o.kind.clone(), o.namespace.clone(), o.name.clone())
}

/// How deep aggregates are followed: pier's have plain members, but a dump from elsewhere could nest
/// them, or loop.
const MAX_AGGREGATE_DEPTH: usize = 4;

/// `cluster` was built from the subject, or fails over to a member that was.
fn reaches_subject(ctx: &Ctx<'_>, index: &GatewayIndex<'_>, cluster: &str) -> bool {
    fn go(ctx: &Ctx<'_>, index: &GatewayIndex<'_>, cluster: &str, depth: usize) -> bool {
        let Some(c) = index.clusters.get(cluster) else {
            return false;
        };
        clusters::origin(c).is_some_and(|o| ctx.is_subject(&o))
            || (depth < MAX_AGGREGATE_DEPTH && clusters::members(c).iter().any(|m| go(ctx, index, m, depth + 1)))
    }
    go(ctx, index, cluster, 0)
}

/// Adds `cluster` and, for an aggregate, its members.
fn with_members(index: &GatewayIndex<'_>, cluster: String, into: &mut BTreeSet<String>) {
    let members = index.clusters.get(cluster.as_str()).map(|c| clusters::members(c));
    // Already there: its members are too (and a loop ends here).
    if into.insert(cluster) {
        for m in members.into_iter().flatten() {
            with_members(index, m, into);
        }
    }
}

fn listeners(ctx: &Ctx<'_>, g: &str, index: &GatewayIndex<'_>, selected: &[RawEntry<'_>]) -> Vec<ListenerPath> {
    let mut by_listener: BTreeMap<&str, Vec<&RawEntry<'_>>> = BTreeMap::new();
    for e in selected {
        by_listener.entry(e.listener).or_default().push(e);
    }
    let mut out: Vec<ListenerPath> = by_listener
        .into_iter()
        .map(|(name, es)| {
            let mut l = listener_path(name, index.served_by(es[0].route_config), Some(es[0].route_config));
            let domains: BTreeSet<&String> = es.iter().flat_map(|e| &e.domains).collect();
            l.hostnames = domains.into_iter().cloned().collect();
            l.routes = route_paths(index, &es);
            l
        })
        .collect();
    let statuses = listener_statuses(ctx.inputs, g);
    if ctx.kind() == Kind::Gateway {
        // A Gateway's explanation shows every listener, also those no route entry is on.
        for s in statuses {
            let name = s["name"].as_str().unwrap_or_default();
            if !out.iter().any(|l| l.name == name) {
                out.push(listener_path(name, index.https_chain(name), None));
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
    }
    for l in &mut out {
        let s = statuses.iter().find(|s| s["name"].as_str() == Some(l.name.as_str()));
        l.attached_routes = s.and_then(|s| s["attachedRoutes"].as_i64());
        l.programmed = s.and_then(|s| {
            let conditions = s["conditions"].as_array()?;
            let c = conditions.iter().find(|c| c["type"].as_str() == Some("Programmed"))?;
            Some(c["status"].as_str() == Some("True"))
        });
    }
    out
}

/// `status.listeners` of Gateway `g`.
fn listener_statuses<'a>(inputs: &'a Inputs, g: &str) -> &'a [Value] {
    inputs
        .objects
        .iter()
        .find(|o| {
            let (kind, _, key) = status::identity(o);
            kind == "Gateway" && key == g
        })
        .and_then(|s| s["status"]["listeners"].as_array())
        .map_or(&[], Vec::as_slice)
}

fn listener_path(name: &str, served: Option<super::envoy::Served>, route_config: Option<&str>) -> ListenerPath {
    let served = served.unwrap_or_default();
    let known = !served.envoy_listener.is_empty();
    ListenerPath {
        name: name.to_string(),
        protocol: known.then(|| if served.https { "HTTPS" } else { "HTTP" }.to_string()),
        address: known.then_some(served.address),
        envoy_listener: known.then_some(served.envoy_listener),
        route_config: route_config.map(str::to_string),
        hostnames: Vec::new(),
        certificates: served.certificates,
        client_validation: served.client_validation,
        attached_routes: None,
        programmed: None,
        routes: Vec::new(),
    }
}

fn route_paths(index: &GatewayIndex<'_>, es: &[&RawEntry<'_>]) -> Vec<super::model::RoutePath> {
    let mut by_route: BTreeMap<RouteKey, BTreeMap<usize, Vec<&RawEntry<'_>>>> = BTreeMap::new();
    for e in es {
        let o = e.owner.as_ref().expect("selected entries have owners");
        by_route
            .entry(owner_key(o))
            .or_default()
            .entry(o.rule)
            .or_default()
            .push(e);
    }
    let origin = |c: &str| index.clusters.get(c).and_then(|c| clusters::origin(c));
    by_route
        .into_iter()
        .map(|((kind, namespace, name), rules)| super::model::RoutePath {
            kind,
            namespace,
            name,
            rules: rules
                .into_iter()
                .map(|(index, es)| RulePath {
                    index,
                    entries: es.iter().map(|e| entries::entry(e, origin)).collect(),
                })
                .collect(),
        })
        .collect()
}
