//! Model → IR + status: everything Gateway-API-specific. One file per concern:
//! `classes` (GatewayClass), `gateways` and `listeners`, `spec` (pier's own typed form of HTTPRoute and
//! GRPCRoute), `routes` (attachment), `rules` and `filters` (rules → route entries), `backends/` (each
//! Backend kind and Services), `backend_tls` (BackendTLSPolicy), `tls` (certificate references), `refs`
//! (ReferenceGrant), `policy` (destination guardrails), `order` (every precedence rule), `hostnames`,
//! `duration` (GEP-2257), `conditions` (condition types and reasons, typed per kind) and `status` (the
//! typed statuses).
//!
//! Pure: no I/O, no clock, no randomness; the output depends only on the model and options, never on
//! input order. Must not touch Envoy protos (that is `envoy/`) nor import anything from it: resource names
//! come from `ir::names`. `tests/it/layering/` enforces both.

use std::collections::{BTreeMap, BTreeSet};

use gateway_api::apis::standard::gateways::Gateway;

pub mod backend_tls;
pub mod backends;
pub mod classes;
pub mod conditions;
pub mod duration;
pub mod features;
pub mod filters;
pub mod frontend;
pub mod gateways;
pub mod hostnames;
pub mod listeners;
pub mod order;
pub mod policy;
pub mod re2;
pub mod refs;
pub mod routes;
pub mod rules;
pub mod selector;
pub mod session;
pub mod spec;
pub mod status;
pub mod tls;
pub(crate) mod vhosts;

use backends::{Backends, Ctx};
use conditions::{Condition, GatewayCondition, GatewayReason, GatewayType};
use listeners::{ListenerInfo, Protocol};
use routes::Entry;
use spec::{RouteKind, RouteSpec};
use status::{ObjectStatus, RouteParentStatus, StatusBody};

use crate::api::consts::{CORE_GROUP, KIND_SECRET};
use crate::ir;
use crate::ir::names;
use crate::model::{Model, ObjectKey};
use crate::options::Options;

/// Gateway API caps (`RouteStatus.parents`, `PolicyStatus.ancestors`).
pub(crate) const MAX_ROUTE_PARENTS: usize = 32;
pub(crate) const MAX_POLICY_ANCESTORS: usize = 16;

/// Translates the model into per-Gateway IR and the status of every object pier has a say on.
pub fn build(model: &Model, opts: &Options) -> (ir::Ir, Vec<ObjectStatus>) {
    let ctx = Ctx { model, opts };
    let (classes, mut statuses) = classes::process(model, opts);
    let policies = backend_tls::PolicyIndex::build(ctx);
    let evaluations = backends::evaluate_all(ctx);
    let backends = Backends::new(ctx, &policies, &evaluations);
    let mut refs = backends::References::default();
    let routes = routes_in_order(model);
    let mut out = ir::Ir::default();
    let mut route_parents: BTreeMap<(RouteKind, ObjectKey), Vec<RouteParentStatus>> = BTreeMap::new();
    for (gw_key, gw) in &model.gateways {
        if !classes.contains(&gw.spec.gateway_class_name) {
            continue;
        }
        let (gir, status) = gateway(ctx, &backends, &mut refs, gw_key, gw, &routes, &mut route_parents);
        statuses.push(status);
        out.gateways.insert(gw_key.to_string(), gir);
    }
    for ((kind, key), mut parents) in route_parents {
        if parents.is_empty() {
            continue;
        }
        parents.truncate(MAX_ROUTE_PARENTS);
        let body = StatusBody::Route { parents };
        statuses.push(ObjectStatus::new(
            "gateway.networking.k8s.io/v1",
            kind.name(),
            &key,
            body,
        ));
    }
    statuses.extend(backends::verdict::statuses(&backends, &refs, &opts.controller_name));
    statuses.extend(backend_tls::statuses(model, &backends, &refs, &opts.controller_name));
    statuses.sort_by_key(ObjectStatus::sort_key);
    (out, statuses)
}

/// Routes of both kinds in their `spec` form, in Gateway API precedence order (oldest first, then
/// namespace/name): the order also decides which of an HTTPRoute and a GRPCRoute keeps a shared hostname.
fn routes_in_order(model: &Model) -> Vec<RouteSpec> {
    let http = model.http_routes.iter().map(|(k, r)| {
        let extras = model.http_route_extras.get(k).map(|e| e.as_ref());
        spec::http::route(k, r, extras)
    });
    let grpc = model.grpc_routes.iter().map(|(k, r)| spec::grpc::route(k, r));
    let mut all: Vec<RouteSpec> = http.chain(grpc).collect();
    all.sort_by(|a, b| a.order.cmp(&b.order));
    all
}

/// One Gateway's IR and status; each route's status entries for this Gateway go to `route_parents`.
fn gateway(
    ctx: Ctx<'_>,
    backends: &Backends<'_>,
    refs: &mut backends::References,
    gw_key: &ObjectKey,
    gw: &Gateway,
    routes: &[RouteSpec],
    route_parents: &mut BTreeMap<(RouteKind, ObjectKey), Vec<RouteParentStatus>>,
) -> (ir::GatewayIr, ObjectStatus) {
    let model = ctx.model;
    let GatewayBase {
        mut listeners,
        client_cert,
        cert_condition,
        mut secrets,
    } = gateway_base(model, gw_key, gw);
    let scope = routes::Scope {
        model,
        gateway: gw_key,
        client_cert: client_cert.as_deref(),
        controller: &ctx.opts.controller_name,
    };
    let mut claims = routes::Claims::new();
    let mut entries = Vec::new();
    let mut targets = Vec::new();
    for spec in routes {
        let result = routes::attach(&scope, backends, spec, &listeners, &claims);
        for (i, hosts) in &result.attached {
            listeners[*i].attached_routes += 1;
            claims.claim(*i, spec.kind, hosts);
        }
        refs.add(gw_key, &result.reached);
        route_parents
            .entry((spec.kind, spec.key.clone()))
            .or_default()
            .extend(result.parents);
        entries.extend(result.entries);
        targets.extend(result.targets);
    }
    let mut gir = ir::GatewayIr {
        namespace: gw_key.namespace.clone(),
        name: gw_key.name.clone(),
        ..Default::default()
    };
    for t in targets {
        secrets.extend(t.secrets);
        gir.clusters.insert(t.cluster.name.clone(), t.cluster);
    }
    gir.listeners = envoy_listeners(ctx.opts, gw_key, &listeners, &entries);
    // Only secrets something references are served (a listener certificate of an unprogrammed
    // listener, or an unused client certificate, stays out).
    let used = used_secrets(&gir);
    gir.secrets = secrets.into_iter().filter(|(k, _)| used.contains(k)).collect();
    let status = gateways::status(gw_key, gw, &listeners, cert_condition);
    (gir, status)
}

/// What a Gateway gives before any route attaches: its listeners (no routes counted yet), its backend
/// client certificate and `ResolvedRefs` condition, and the secrets both need.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayBase {
    pub listeners: Vec<ListenerInfo>,
    pub client_cert: Option<String>,
    pub cert_condition: GatewayCondition,
    pub secrets: tls::SecretSet,
}

pub fn gateway_base(model: &Model, key: &ObjectKey, gw: &Gateway) -> GatewayBase {
    let mut secrets = tls::SecretSet::new();
    let listeners = listeners::process(model, key, gw, &mut secrets);
    let (client_cert, cert_condition) = gateway_client_cert(model, key, gw, &mut secrets);
    GatewayBase {
        listeners,
        client_cert,
        cert_condition,
        secrets,
    }
}

/// One route configuration of a Gateway: a plain-HTTP port's, or one HTTPS listener's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteConfigGroup {
    pub name: String,
    pub port: u16,
    pub https: bool,
    /// The programmable listeners on the port.
    pub members: Vec<usize>,
    /// The listeners whose routes it holds (all of `members` on HTTP, one on HTTPS).
    pub build: Vec<usize>,
}

/// The route configurations of a Gateway's programmable listeners, by port.
pub fn route_config_groups(gw: &ObjectKey, listeners: &[ListenerInfo]) -> Vec<RouteConfigGroup> {
    let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        if l.programmable {
            by_port.entry(l.port).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for (port, members) in by_port {
        if listeners[members[0]].protocol == Protocol::Https {
            for &i in &members {
                out.push(RouteConfigGroup {
                    name: names::https_route_config(&gw.namespace, &gw.name, port, &listeners[i].name),
                    port,
                    https: true,
                    members: members.clone(),
                    build: vec![i],
                });
            }
        } else {
            out.push(RouteConfigGroup {
                name: names::http_route_config(&gw.namespace, &gw.name, port),
                port,
                https: false,
                build: members.clone(),
                members,
            });
        }
    }
    out
}

/// The Gateway's Envoy listeners, one per port, their route configurations named but without virtual
/// hosts (`vhosts` fills them: a configuration's name to its virtual hosts).
pub fn listener_skeletons(
    opts: &Options,
    gw: &ObjectKey,
    listeners: &[ListenerInfo],
    vhosts: &mut dyn FnMut(&RouteConfigGroup) -> Vec<ir::VirtualHost>,
) -> Vec<ir::Listener> {
    let mut out: Vec<ir::Listener> = Vec::new();
    for group in route_config_groups(gw, listeners) {
        let route_config = ir::RouteConfig {
            name: group.name.clone(),
            virtual_hosts: vhosts(&group),
        };
        let chain = |i: usize| {
            let l = &listeners[i];
            ir::TlsChain {
                listener_name: l.name.clone(),
                server_names: l.hostname.iter().cloned().collect(),
                certificates: l.certificates.clone(),
                client_validation: l.client_validation.clone(),
                route_config: route_config.clone(),
            }
        };
        match out.last_mut() {
            Some(ir::Listener {
                port,
                kind: ir::ListenerKind::Https { chains },
                ..
            }) if *port == group.port && group.https => chains.push(chain(group.build[0])),
            _ => out.push(ir::Listener {
                name: names::listener(&gw.namespace, &gw.name, group.port),
                address: opts.listener_address.clone(),
                port: group.port,
                kind: if group.https {
                    ir::ListenerKind::Https {
                        chains: vec![chain(group.build[0])],
                    }
                } else {
                    ir::ListenerKind::Http { route_config }
                },
            }),
        }
    }
    out
}

/// The Gateway's `spec.tls.backend.clientCertificateRef`: the SDS name to present upstream (if valid)
/// and the Gateway's ResolvedRefs condition.
fn gateway_client_cert(
    model: &Model,
    key: &ObjectKey,
    gw: &Gateway,
    secrets: &mut tls::SecretSet,
) -> (Option<String>, GatewayCondition) {
    let g = gw.metadata.generation.unwrap_or(0);
    let ok = Condition::ok(
        GatewayType::ResolvedRefs,
        GatewayReason::ResolvedRefs,
        "All references resolved",
        g,
    );
    let Some(r) = gw
        .spec
        .tls
        .as_ref()
        .and_then(|t| t.backend.as_ref())
        .and_then(|b| b.client_certificate_ref.as_ref())
    else {
        return (None, ok);
    };
    let ns = r.namespace.clone().unwrap_or_else(|| key.namespace.clone());
    let group = r.group.as_deref().unwrap_or("");
    let kind = r.kind.as_deref().unwrap_or(KIND_SECRET);
    if group == CORE_GROUP && kind == KIND_SECRET && !refs::gateway_may_use(model, key, KIND_SECRET, &ns, &r.name) {
        return (
            None,
            Condition::fail(
                GatewayType::ResolvedRefs,
                GatewayReason::RefNotPermitted,
                format!(
                    "spec.tls.backend.clientCertificateRef: Secret {ns}/{} is in another namespace and no ReferenceGrant allows it{}",
                    r.name,
                    model.grants_note()
                ),
                g,
            ),
        );
    }
    let mut sref = r.clone();
    sref.namespace = Some(ns.clone());
    match tls::resolve_tls_secret(model, &ns, &sref) {
        Ok((name, secret)) => {
            secrets.insert(name.clone(), secret);
            (Some(name), ok)
        }
        Err(msg) => (
            None,
            Condition::fail(
                GatewayType::ResolvedRefs,
                GatewayReason::InvalidClientCertificateRef,
                format!("spec.tls.backend.clientCertificateRef: {msg}"),
                g,
            ),
        ),
    }
}

/// Groups programmable listeners by port into Envoy listeners with their virtual hosts.
fn envoy_listeners(opts: &Options, gw: &ObjectKey, listeners: &[ListenerInfo], entries: &[Entry]) -> Vec<ir::Listener> {
    listener_skeletons(opts, gw, listeners, &mut |group| {
        vhosts::virtual_hosts(listeners, &group.members, &group.build, entries)
    })
}

fn used_secrets(g: &ir::GatewayIr) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for c in g.clusters.values() {
        if let Some(t) = &c.tls {
            if let ir::Trust::Sds(n) = &t.trust {
                used.insert(n.clone());
            }
            used.extend(t.client_certificate.clone());
        }
    }
    for l in &g.listeners {
        if let ir::ListenerKind::Https { chains } = &l.kind {
            for c in chains {
                used.extend(c.certificates.iter().cloned());
                used.extend(c.client_validation.as_ref().map(|v| v.ca.clone()));
            }
        }
    }
    used
}
