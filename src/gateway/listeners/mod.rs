//! Gateway listeners: validation, route kinds, certificate references (`certs`), conflicts
//! (`conflicts`), and their status.
//!
//! Supported: `HTTP` and `HTTPS` (TLS termination; certificateRefs to `kubernetes.io/tls` Secrets,
//! across namespaces only with a ReferenceGrant from the Gateway), each taking HTTPRoutes and
//! GRPCRoutes. Listeners sharing a port must share a protocol and differ by hostname; otherwise they
//! are `Conflicted`, refused and not programmed. A listener is *programmed* (Envoy gets configuration
//! for it) when it is accepted, not conflicted and, for HTTPS, has a valid certificate; routes
//! *attach* to every accepted listener, programmed or not, as upstream counts them in
//! `attachedRoutes`.

mod certs;
mod conflicts;
#[cfg(test)]
mod tests;

use super::conditions::{Condition, ListenerCondition, ListenerReason as Reason, ListenerType as Type, Status};
use super::status::{ListenerStatus, RouteGroupKind};
use super::tls::SecretSet;
use crate::api::consts::{GATEWAY_GROUP, KIND_GRPCROUTE, KIND_HTTPROUTE};
use crate::model::{Model, ObjectKey};
use gateway_api::apis::standard::gateways::{
    Gateway, GatewayListeners, GatewayListenersAllowedRoutesKinds as RouteKind,
    GatewayListenersAllowedRoutesNamespacesFrom as From,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Route kinds an HTTP or HTTPS listener takes (group `gateway.networking.k8s.io`), in the order
/// `supportedKinds` lists them when `allowedRoutes.kinds` is empty.
pub const ROUTE_KINDS: [&str; 2] = [KIND_HTTPROUTE, KIND_GRPCROUTE];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Https,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AllowedNamespaces {
    Same,
    All,
    Selector(LabelSelector),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListenerInfo {
    pub name: String,
    pub port: u16,
    pub protocol: Protocol,
    pub hostname: Option<String>,
    pub allowed: AllowedNamespaces,
    /// Route kinds this listener accepts (`HTTPRoute`, `GRPCRoute`); empty when none is valid.
    pub kinds: Vec<String>,
    /// SDS names of the valid certificates (HTTPS).
    pub certificates: Vec<String>,
    /// Client certificate validation of an HTTPS listener (Gateway `spec.tls.frontend`).
    pub client_validation: Option<crate::ir::ClientValidation>,
    /// Accepted, not conflicted, and (for HTTPS) has a certificate: Envoy gets config for it.
    pub programmable: bool,
    /// Routes may attach: the listener is accepted (supported protocol, not conflicted) in an
    /// accepted Gateway. Unlike `programmable`, a missing certificate does not stop attachment:
    /// upstream counts such routes in `attachedRoutes` (GatewayWithAttachedRoutes).
    pub attachable: bool,
    pub conditions: Vec<ListenerCondition>,
    pub attached_routes: i32,
}

/// Processes a Gateway's listeners. Certificates go to `secrets`. A Gateway that pier refuses as a
/// whole (`super::gateways::refusal`) keeps its listener statuses, but none is programmed.
pub fn process(model: &Model, key: &ObjectKey, gw: &Gateway, secrets: &mut SecretSet) -> Vec<ListenerInfo> {
    let g = gw.metadata.generation.unwrap_or(0);
    let mut out: Vec<ListenerInfo> = gw
        .spec
        .listeners
        .iter()
        .map(|l| listener(model, key, l, g, secrets))
        .collect();
    client_validation(model, key, gw, &mut out, secrets, g);
    let refusal = super::gateways::refusal(gw);
    if refusal.is_some() {
        for l in &mut out {
            l.programmable = false;
        }
    }
    conflicts::mark(&mut out, g);
    let gateway_accepted = refusal.is_none_or(|r| r.type_ != super::conditions::GatewayType::Accepted);
    for l in &mut out {
        l.attachable = gateway_accepted && l.conditions[0].status == Status::True;
    }
    out
}

/// `spec.tls.frontend` on the HTTPS listeners (`super::frontend`): a valid trust bundle goes to the
/// listener and `secrets`; invalid references set `ResolvedRefs=False` with their reason, and with no
/// valid one the listener is `Accepted=False/NoValidCACertificate` and not served — serving it without
/// the check would admit clients the Gateway means to refuse. HTTP listeners are unaffected.
fn client_validation(
    model: &Model,
    key: &ObjectKey,
    gw: &Gateway,
    ls: &mut [ListenerInfo],
    secrets: &mut SecretSet,
    g: i64,
) {
    for l in ls.iter_mut().filter(|l| l.protocol == Protocol::Https) {
        let Some(v) = super::frontend::for_port(model, key, gw, i32::from(l.port)) else {
            continue;
        };
        if let Some((why, _)) = v.problems.first() {
            let msg = v
                .problems
                .iter()
                .map(|(_, m)| m.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            // A certificate problem already reported keeps its reason; the messages add up.
            l.conditions[1] = match &l.conditions[1] {
                c if c.status == Status::False => {
                    Condition::fail(Type::ResolvedRefs, c.reason, format!("{}; {msg}", c.message), g)
                }
                _ => Condition::fail(Type::ResolvedRefs, *why, msg, g),
            };
        }
        match v.validation {
            Some((validation, secret)) => {
                secrets.insert(validation.ca.clone(), secret);
                l.client_validation = Some(validation);
            }
            None => {
                l.programmable = false;
                l.conditions[0] = Condition::fail(
                    Type::Accepted,
                    Reason::NoValidCACertificate,
                    "spec.tls.frontend: no valid CA certificate to validate clients with",
                    g,
                );
            }
        }
    }
}

/// `allowedRoutes.kinds` → the kinds the listener supports, and `ResolvedRefs=False/InvalidRouteKinds`
/// if some named kind is not one of them. Unset or empty: every kind pier serves on HTTP and HTTPS
/// (upstream's `supportedKinds` check accepts a superset of the kinds it expects). A kind's group
/// defaults to `gateway.networking.k8s.io`; a duplicate is listed once.
fn route_kinds(list: Option<&[RouteKind]>, g: i64) -> (Vec<String>, Option<ListenerCondition>) {
    let Some(list) = list.filter(|l| !l.is_empty()) else {
        return (ROUTE_KINDS.iter().map(|k| k.to_string()).collect(), None);
    };
    let mut kinds: Vec<String> = Vec::new();
    let mut invalid: Vec<String> = Vec::new();
    for k in list {
        let group = k.group.as_deref().unwrap_or(GATEWAY_GROUP);
        if group == GATEWAY_GROUP && ROUTE_KINDS.contains(&k.kind.as_str()) {
            if !kinds.contains(&k.kind) {
                kinds.push(k.kind.clone());
            }
        } else {
            let g = if group.is_empty() { "core" } else { group };
            invalid.push(format!("{g}/{}", k.kind));
        }
    }
    let condition = (!invalid.is_empty()).then(|| {
        Condition::fail(
            Type::ResolvedRefs,
            Reason::InvalidRouteKinds,
            format!(
                "route kinds {} are not supported on this listener; supported: {}",
                invalid.join(", "),
                ROUTE_KINDS.join(", ")
            ),
            g,
        )
    });
    (kinds, condition)
}

fn listener(model: &Model, gw: &ObjectKey, l: &GatewayListeners, g: i64, secrets: &mut SecretSet) -> ListenerInfo {
    let mut accepted = Condition::ok(Type::Accepted, Reason::Accepted, "Listener accepted", g);
    let mut resolved = Condition::ok(Type::ResolvedRefs, Reason::ResolvedRefs, "All references resolved", g);
    let protocol = match l.protocol.as_str() {
        "HTTP" => Some(Protocol::Http),
        "HTTPS" => Some(Protocol::Https),
        other => {
            accepted = Condition::fail(
                Type::Accepted,
                Reason::UnsupportedProtocol,
                format!("protocol {other:?} is not supported; pier serves HTTP and HTTPS listeners"),
                g,
            );
            None
        }
    };
    let port = u16::try_from(l.port).ok().filter(|p| *p != 0);
    if port.is_none() {
        accepted = Condition::fail(
            Type::Accepted,
            Reason::UnsupportedProtocol,
            format!("port {} is out of range", l.port),
            g,
        );
    }
    let allowed_routes = l.allowed_routes.clone().unwrap_or_default();
    let allowed = allowed_namespaces(allowed_routes.namespaces.as_ref());
    let (mut kinds, resolved_kinds) = route_kinds(allowed_routes.kinds.as_deref(), g);
    if let Some(c) = resolved_kinds {
        resolved = c;
    }
    let mut certificates = Vec::new();
    if protocol == Some(Protocol::Https) {
        let tls = l.tls.clone().unwrap_or_default();
        let refs = tls.certificate_refs.unwrap_or_default();
        let (valid, problem) = certs::resolve(model, gw, &refs, secrets);
        certificates = valid;
        if let Some((why, msg)) = problem {
            resolved = Condition::fail(Type::ResolvedRefs, why, msg, g);
        }
    }
    if protocol.is_none() {
        // No route kind attaches to a listener pier cannot serve.
        kinds.clear();
    }
    let programmable = accepted.status == Status::True
        && protocol.is_some()
        && port.is_some()
        && (protocol != Some(Protocol::Https) || !certificates.is_empty());
    ListenerInfo {
        name: l.name.clone(),
        port: port.unwrap_or(0),
        protocol: protocol.unwrap_or(Protocol::Http),
        hostname: l.hostname.clone(),
        allowed,
        kinds,
        certificates,
        programmable,
        attachable: false,
        client_validation: None,
        conditions: vec![accepted, resolved],
        attached_routes: 0,
    }
}

/// `allowedRoutes.namespaces`: the listener's own namespace unless it says `All` or a selector.
fn allowed_namespaces(
    ns: Option<&gateway_api::apis::standard::gateways::GatewayListenersAllowedRoutesNamespaces>,
) -> AllowedNamespaces {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let Some(ns) = ns else {
        return AllowedNamespaces::Same;
    };
    match ns.from {
        Some(From::All) => AllowedNamespaces::All,
        Some(From::Selector) => {
            let sel = ns.selector.clone().map(|s| LabelSelector {
                match_labels: s.match_labels,
                match_expressions: s.match_expressions.map(|v| {
                    v.into_iter()
                        .map(|e| LabelSelectorRequirement {
                            key: e.key,
                            operator: e.operator,
                            values: e.values,
                        })
                        .collect()
                }),
            });
            AllowedNamespaces::Selector(sel.unwrap_or_default())
        }
        _ => AllowedNamespaces::Same,
    }
}

/// `status.listeners[]` entry.
pub fn status(l: &ListenerInfo) -> ListenerStatus {
    ListenerStatus {
        name: l.name.clone(),
        attached_routes: l.attached_routes,
        supported_kinds: l
            .kinds
            .iter()
            .map(|k| RouteGroupKind {
                group: GATEWAY_GROUP,
                kind: k.clone(),
            })
            .collect(),
        conditions: l.conditions.clone(),
    }
}
