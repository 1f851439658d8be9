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

use std::collections::BTreeMap;

use gateway_api::apis::standard::gateways::Gateway;

pub(crate) mod backend_tls;
pub(crate) mod backends;
pub(crate) mod classes;
pub mod conditions;
pub(crate) mod duration;
pub(crate) mod features;
pub(crate) mod filters;
pub(crate) mod frontend;
pub(crate) mod gateways;
pub(crate) mod hostnames;
pub(crate) mod listeners;
pub(crate) mod order;
pub mod policy;
pub mod re2;
pub(crate) mod refs;
pub(crate) mod routes;
pub(crate) mod rules;
pub(crate) mod selector;
pub(crate) mod session;
pub(crate) mod spec;
pub mod status;
pub(crate) mod tls;
pub(crate) mod vhosts;

use conditions::{Condition, GatewayCondition, GatewayReason, GatewayType};
use listeners::{ListenerInfo, Protocol};

use crate::api::consts::{CORE_GROUP, KIND_SECRET};
use crate::ir;
use crate::ir::names;
use crate::model::{Model, ObjectKey};
use crate::options::Options;

/// Gateway API caps (`RouteStatus.parents`, `PolicyStatus.ancestors`).
pub(crate) const MAX_ROUTE_PARENTS: usize = 32;
pub(crate) const MAX_POLICY_ANCESTORS: usize = 16;

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
    let ns = r.namespace.clone().unwrap_or_else(|| key.namespace.to_string());
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
