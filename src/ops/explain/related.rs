//! Every status condition on the way: the subject's own, then those of the objects its path meets —
//! a route's backends, a backend's routes, a Gateway's routes — and of the BackendTLSPolicies that may
//! shape its upstream TLS, each on the Gateways of the explanation only.
//!
//! A policy's status names the Gateways it applies on, not its targets, and a cluster does not record
//! which policy its TLS came from. So a policy is listed when its messages name an object of the path,
//! or when it applies on a Gateway where the path reaches a Service over TLS (a Service has no TLS of
//! its own); the second kind is said in a note, as it may include a policy for another Service.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::build::{Ctx, RouteKey, route_key, routes};
use super::model::{GatewayPath, ObjectConditions};
use super::status::{conditions_of, gateways_of, identity, messages, named_refs};
use super::subject::{EG_ORIGIN, Kind};

/// (status kind, `ns/name`) of a backend, as status messages name it.
type BackendKey = (String, String);

pub fn conditions(
    ctx: &Ctx<'_>,
    paths: &[GatewayPath],
    gws: &BTreeSet<String>,
    naming: &BTreeMap<String, BTreeSet<RouteKey>>,
    notes: &mut Vec<String>,
) -> Vec<ObjectConditions> {
    let only: Option<BTreeSet<String>> = ctx.only.map(|g| BTreeSet::from([g.to_string()]));
    let mut own: Vec<ObjectConditions> = ctx
        .target
        .statuses
        .iter()
        .flat_map(|o| conditions_of(o, only.as_ref()))
        .collect();
    let related = match ctx.kind() {
        Kind::HttpRoute | Kind::GrpcRoute => {
            let backends = route_backends(ctx, paths, gws);
            let mut objs = backend_statuses(ctx, &backends);
            objs.extend(policies(ctx, paths, gws, &backends, notes));
            objs
        }
        Kind::Gateway => routes(ctx.inputs)
            .filter(|o| gateways_of(o).contains(&ctx.target.subject.key()))
            .collect(),
        _ => {
            let mut objs = backend_routes(ctx, paths, naming);
            let me = BTreeSet::from([(ctx.kind().status_kind().to_string(), ctx.target.subject.key())]);
            objs.extend(policies(ctx, paths, gws, &me, notes));
            objs
        }
    };
    let mut rest: Vec<ObjectConditions> = related
        .into_iter()
        .filter(|o| !ctx.target.statuses.iter().any(|s| std::ptr::eq(*s, *o)))
        .flat_map(|o| conditions_of(o, Some(gws)))
        .collect();
    rest.sort_by(|a, b| {
        (&a.kind, &a.api_version, &a.namespace, &a.name, &a.scope).cmp(&(
            &b.kind,
            &b.api_version,
            &b.namespace,
            &b.name,
            &b.scope,
        ))
    });
    rest.dedup();
    own.extend(rest);
    own
}

/// The backends a route reaches (its clusters' origins) or names in its status (broken references).
fn route_backends(ctx: &Ctx<'_>, paths: &[GatewayPath], gws: &BTreeSet<String>) -> BTreeSet<BackendKey> {
    let mut out: BTreeSet<BackendKey> = paths
        .iter()
        .flat_map(|p| &p.clusters)
        .filter_map(|c| c.origin.as_ref())
        .map(|o| {
            let kind = if o.kind == EG_ORIGIN {
                "Backend"
            } else {
                o.kind.as_str()
            };
            (kind.to_string(), format!("{}/{}", o.namespace, o.name))
        })
        .collect();
    for o in &ctx.target.statuses {
        out.extend(messages(o, Some(gws)).flat_map(named_refs));
    }
    out
}

/// Status objects of `backends` (a Service has none; a `Backend` may be of either group).
fn backend_statuses<'a>(ctx: &Ctx<'a>, backends: &BTreeSet<BackendKey>) -> Vec<&'a Value> {
    ctx.inputs
        .objects
        .iter()
        .filter(|o| {
            let (kind, _, key) = identity(o);
            backends.contains(&(kind.to_string(), key))
        })
        .collect()
}

/// The routes whose entries reach the backend, or whose status names it.
fn backend_routes<'a>(
    ctx: &Ctx<'a>,
    paths: &[GatewayPath],
    naming: &BTreeMap<String, BTreeSet<RouteKey>>,
) -> Vec<&'a Value> {
    let mut keys: BTreeSet<RouteKey> = naming.values().flatten().cloned().collect();
    for r in paths.iter().flat_map(|p| &p.listeners).flat_map(|l| &l.routes) {
        keys.insert((r.kind.clone(), r.namespace.clone(), r.name.clone()));
    }
    routes(ctx.inputs).filter(|o| keys.contains(&route_key(o))).collect()
}

/// BackendTLSPolicies that may shape the path's upstream TLS (see the module doc).
fn policies<'a>(
    ctx: &Ctx<'a>,
    paths: &[GatewayPath],
    gws: &BTreeSet<String>,
    involved: &BTreeSet<BackendKey>,
    notes: &mut Vec<String>,
) -> Vec<&'a Value> {
    let tls_services: BTreeSet<&str> = paths
        .iter()
        .filter(|p| {
            p.clusters
                .iter()
                .any(|c| c.tls.is_some() && c.origin.as_ref().is_some_and(|o| o.kind == "Service"))
        })
        .map(|p| p.gateway.as_str())
        .collect();
    let mut by_gateway = Vec::new();
    let out = ctx
        .inputs
        .objects
        .iter()
        .filter(|o| o["kind"].as_str() == Some("BackendTLSPolicy"))
        .filter(|o| {
            let on: BTreeSet<String> = gateways_of(o).intersection(gws).cloned().collect();
            if on.is_empty() {
                return false;
            }
            if messages(o, Some(gws))
                .flat_map(named_refs)
                .any(|r| involved.contains(&r))
            {
                return true;
            }
            let shared = on.iter().any(|g| tls_services.contains(g.as_str()));
            if shared {
                by_gateway.push(identity(o).2);
            }
            shared
        })
        .collect();
    if !by_gateway.is_empty() {
        notes.push(format!(
            "BackendTLSPolicy {} is listed because it applies on a Gateway where this path reaches a Service over TLS; pier's outputs do not record which policy a cluster's TLS came from",
            by_gateway.join(", ")
        ));
    }
    out
}
