//! Gateway listeners: validation, certificate references, conflicts, and their status.
//!
//! Supported: `HTTP` and `HTTPS` (TLS termination; certificateRefs to `kubernetes.io/tls` Secrets,
//! across namespaces only with a ReferenceGrant from the Gateway). Listeners sharing a port must
//! share a protocol and differ by hostname; otherwise they are `Conflicted` and not programmed.

use std::collections::BTreeMap;

use gateway_api::apis::standard::gateways::{
    Gateway, GatewayListeners, GatewayListenersAllowedRoutesNamespacesFrom as From,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};

use super::conditions::{self, Condition, reason};
use super::refs::{self, RefEnd};
use super::tls::{self, CertRefUse, SecretSet};
use crate::api::consts::{CORE_GROUP, GATEWAY_GROUP, KIND_GATEWAY, KIND_HTTPROUTE, KIND_SECRET};
use crate::model::{Model, ObjectKey};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Https,
}

#[derive(Debug, Clone)]
pub enum AllowedNamespaces {
    Same,
    All,
    Selector(LabelSelector),
}

#[derive(Debug, Clone)]
pub struct ListenerInfo {
    pub name: String,
    pub port: u16,
    pub protocol: Protocol,
    pub hostname: Option<String>,
    pub allowed: AllowedNamespaces,
    /// Route kinds this listener accepts (only HTTPRoute for now).
    pub kinds: Vec<String>,
    /// SDS names of the valid certificates (HTTPS).
    pub certificates: Vec<String>,
    /// Accepted, not conflicted, and (for HTTPS) has a certificate: Envoy gets config for it.
    pub programmable: bool,
    pub conditions: Vec<Condition>,
    pub attached_routes: i32,
}

/// Processes a Gateway's listeners. Certificates go to `secrets`.
pub fn process(model: &Model, key: &ObjectKey, gw: &Gateway, secrets: &mut SecretSet) -> Vec<ListenerInfo> {
    let g = gw.metadata.generation.unwrap_or(0);
    let mut out: Vec<ListenerInfo> = gw
        .spec
        .listeners
        .iter()
        .map(|l| listener(model, key, l, g, secrets))
        .collect();
    mark_conflicts(&mut out, g);
    out
}

fn listener(model: &Model, gw: &ObjectKey, l: &GatewayListeners, g: i64, secrets: &mut SecretSet) -> ListenerInfo {
    let mut accepted = Condition::ok(conditions::ACCEPTED, reason::ACCEPTED, "Listener accepted", g);
    let mut resolved = Condition::ok(
        conditions::RESOLVED_REFS,
        reason::RESOLVED_REFS,
        "All references resolved",
        g,
    );
    let protocol = match l.protocol.as_str() {
        "HTTP" => Some(Protocol::Http),
        "HTTPS" => Some(Protocol::Https),
        other => {
            accepted = Condition::fail(
                conditions::ACCEPTED,
                reason::UNSUPPORTED_PROTOCOL,
                format!("protocol {other:?} is not supported; pier serves HTTP and HTTPS listeners"),
                g,
            );
            None
        }
    };
    let port = u16::try_from(l.port).ok().filter(|p| *p != 0);
    if port.is_none() {
        accepted = Condition::fail(
            conditions::ACCEPTED,
            reason::UNSUPPORTED_PROTOCOL,
            format!("port {} is out of range", l.port),
            g,
        );
    }
    let allowed_routes = l.allowed_routes.clone().unwrap_or_default();
    let allowed = match allowed_routes.namespaces.as_ref() {
        None => AllowedNamespaces::Same,
        Some(ns) => match ns.from {
            Some(From::All) => AllowedNamespaces::All,
            Some(From::Selector) => {
                let sel = ns.selector.clone().map(|s| LabelSelector {
                    match_labels: s.match_labels,
                    match_expressions: s.match_expressions.map(|v| {
                        v.into_iter()
                            .map(
                                |e| k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                                    key: e.key,
                                    operator: e.operator,
                                    values: e.values,
                                },
                            )
                            .collect()
                    }),
                });
                AllowedNamespaces::Selector(sel.unwrap_or_default())
            }
            _ => AllowedNamespaces::Same,
        },
    };
    let mut kinds = Vec::new();
    let mut invalid_kinds = Vec::new();
    match allowed_routes.kinds.as_deref() {
        None | Some([]) => kinds.push(KIND_HTTPROUTE.to_string()),
        Some(list) => {
            for k in list {
                let group = k.group.as_deref().unwrap_or(GATEWAY_GROUP);
                if group == GATEWAY_GROUP && k.kind == KIND_HTTPROUTE {
                    kinds.push(k.kind.clone());
                } else {
                    invalid_kinds.push(format!("{group}/{}", k.kind));
                }
            }
        }
    }
    if !invalid_kinds.is_empty() {
        resolved = Condition::fail(
            conditions::RESOLVED_REFS,
            reason::INVALID_ROUTE_KINDS,
            format!(
                "route kinds {} are not supported on this listener",
                invalid_kinds.join(", ")
            ),
            g,
        );
    }
    let mut certificates = Vec::new();
    if protocol == Some(Protocol::Https) {
        let tls = l.tls.clone().unwrap_or_default();
        let refs = tls.certificate_refs.unwrap_or_default();
        let mut problems = Vec::new();
        if refs.is_empty() {
            problems.push((
                reason::INVALID_CERTIFICATE_REF,
                "an HTTPS listener needs tls.certificateRefs".to_string(),
            ));
        }
        for (i, r) in refs.iter().enumerate() {
            let ns = r.namespace.clone().unwrap_or_else(|| gw.namespace.clone());
            let sref = crate::api::SecretObjectReference {
                group: r.group.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                namespace: Some(ns.clone()),
            };
            let from = RefEnd {
                group: GATEWAY_GROUP,
                kind: KIND_GATEWAY,
                namespace: &gw.namespace,
                name: &gw.name,
            };
            let to = RefEnd {
                group: CORE_GROUP,
                kind: KIND_SECRET,
                namespace: &ns,
                name: &r.name,
            };
            if !refs::permitted(model, from, to) {
                problems.push((
                    reason::REF_NOT_PERMITTED,
                    format!("tls.certificateRefs[{i}]: Secret {ns}/{} is in another namespace and no ReferenceGrant allows it", r.name),
                ));
                continue;
            }
            match tls::resolve_tls_secret(model, &ns, &sref, CertRefUse::Listener) {
                Ok((name, secret)) => {
                    secrets.insert(name.clone(), secret);
                    certificates.push(name);
                }
                Err(p) => problems.push((p.reason, format!("tls.certificateRefs[{i}]: {}", p.message))),
            }
        }
        if let Some((why, _)) = problems.first() {
            let msg = problems.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>().join("; ");
            resolved = Condition::fail(conditions::RESOLVED_REFS, why, msg, g);
        }
    }
    if protocol.is_none() {
        // No route kind attaches to a listener pier cannot serve.
        kinds.clear();
    }
    let programmable = accepted.status == conditions::Status::True
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
        conditions: vec![accepted, resolved],
        attached_routes: 0,
    }
}

/// Listeners on one port must agree on protocol and differ by hostname.
fn mark_conflicts(ls: &mut [ListenerInfo], g: i64) {
    let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in ls.iter().enumerate() {
        if l.conditions[0].status == conditions::Status::True {
            by_port.entry(l.port).or_default().push(i);
        }
    }
    let mut conflicts: BTreeMap<usize, &'static str> = BTreeMap::new();
    for idx in by_port.values() {
        let protocols: Vec<Protocol> = idx.iter().map(|&i| ls[i].protocol).collect();
        if protocols.iter().any(|p| *p != protocols[0]) {
            for &i in idx {
                conflicts.insert(i, reason::PROTOCOL_CONFLICT);
            }
            continue;
        }
        for (a, &i) in idx.iter().enumerate() {
            for &j in &idx[a + 1..] {
                if ls[i].hostname == ls[j].hostname {
                    conflicts.entry(i).or_insert(reason::HOSTNAME_CONFLICT);
                    conflicts.entry(j).or_insert(reason::HOSTNAME_CONFLICT);
                }
            }
        }
    }
    for (i, l) in ls.iter_mut().enumerate() {
        let c = match conflicts.get(&i) {
            Some(why) => {
                l.programmable = false;
                Condition::new(
                    conditions::CONFLICTED,
                    conditions::Status::True,
                    why,
                    if *why == reason::PROTOCOL_CONFLICT {
                        "another listener on this port uses a different protocol"
                    } else {
                        "another listener on this port has the same hostname"
                    },
                    g,
                )
            }
            None => Condition::new(
                conditions::CONFLICTED,
                conditions::Status::False,
                reason::NO_CONFLICTS,
                "No conflicts",
                g,
            ),
        };
        l.conditions.push(c);
        let programmed = if l.programmable {
            Condition::ok(conditions::PROGRAMMED, reason::PROGRAMMED, "Listener programmed", g)
        } else {
            Condition::fail(
                conditions::PROGRAMMED,
                reason::INVALID,
                "Listener is not programmed; see its other conditions",
                g,
            )
        };
        l.conditions.push(programmed);
    }
}

/// `status.listeners[]` entry.
pub fn status(l: &ListenerInfo) -> Value {
    json!({
        "name": l.name,
        "attachedRoutes": l.attached_routes,
        "supportedKinds": l.kinds.iter().map(|k| json!({"group": GATEWAY_GROUP, "kind": k})).collect::<Vec<_>>(),
        "conditions": super::status::conditions(&l.conditions),
    })
}
