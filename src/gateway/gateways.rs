//! The Gateway's own conditions (`status.conditions`): `Accepted`, `Programmed` and `ResolvedRefs`.
//!
//! - `spec.infrastructure.parametersRef`: pier has no parameters kind, so any reference is invalid:
//!   `Accepted=False/InvalidParameters`, as for a GatewayClass.
//! - `spec.addresses`: pier never assigns or binds addresses — the proxies' Service or host network,
//!   which the operator runs, decides them. An address type outside the three Gateway API defines
//!   gets `Accepted=False/UnsupportedAddress`; an address without a value `Programmed=False/
//!   AddressNotAssigned` (the field's own rule for implementations that cannot assign one); an address
//!   with a value `Programmed=False/AddressNotUsable`. Either way nothing is served for the Gateway:
//!   serving it on some other address would make `Programmed` a lie.
//! - Listeners: `Accepted=True` while at least one listener is accepted, with reason
//!   `ListenersNotValid` as soon as one is not programmable (conflicted, unsupported, without a
//!   usable certificate); `Programmed=True` while at least one listener is programmed.

use super::conditions::{Condition, GatewayCondition, GatewayReason as Reason, GatewayType as Type, Status};
use super::listeners::{self, ListenerInfo};
use super::status::{ObjectStatus, StatusBody};
use crate::api::consts::KIND_GATEWAY;
use crate::model::ObjectKey;
use gateway_api::apis::standard::gateways::Gateway;

/// Address types Gateway API defines (`GatewayAddress.Type`); the default is `IPAddress`.
const ADDRESS_TYPES: [&str; 3] = ["IPAddress", "Hostname", "NamedAddress"];

/// Why pier refuses to serve a Gateway as a whole: the condition type it fails, the reason and a
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub type_: Type,
    pub reason: Reason,
    pub message: String,
}

/// The first reason the Gateway as a whole cannot be served, if any (`Accepted` problems first).
pub fn refusal(gw: &Gateway) -> Option<Refusal> {
    let refuse = |type_, reason, message: String| Refusal { type_, reason, message };
    if let Some(p) = gw.spec.infrastructure.as_ref().and_then(|i| i.parameters_ref.as_ref()) {
        return Some(refuse(
            Type::Accepted,
            Reason::InvalidParameters,
            format!(
                "spec.infrastructure.parametersRef ({}/{} {:?}): pier takes no Gateway parameters",
                p.group, p.kind, p.name
            ),
        ));
    }
    let addresses = gw.spec.addresses.as_deref().unwrap_or_default();
    for (i, a) in addresses.iter().enumerate() {
        let ty = a.r#type.as_deref().unwrap_or(ADDRESS_TYPES[0]);
        if !ADDRESS_TYPES.contains(&ty) {
            return Some(refuse(
                Type::Accepted,
                Reason::UnsupportedAddress,
                format!("spec.addresses[{i}]: address type {ty:?} is not supported"),
            ));
        }
    }
    let (i, a) = addresses.iter().enumerate().next()?;
    Some(match a.value.as_deref().filter(|v| !v.is_empty()) {
        None => refuse(
            Type::Programmed,
            Reason::AddressNotAssigned,
            format!(
                "spec.addresses[{i}]: pier does not assign Gateway addresses; the proxies' addresses are set where they are deployed"
            ),
        ),
        Some(v) => refuse(
            Type::Programmed,
            Reason::AddressNotUsable,
            format!(
                "spec.addresses[{i}]: pier cannot bind the Gateway to {v:?}; the proxies' addresses are set where they are deployed"
            ),
        ),
    })
}

/// The Gateway's status: its conditions (`refs` is the `ResolvedRefs` condition of
/// `spec.tls.backend`) and one entry per listener.
pub fn status(key: &ObjectKey, gw: &Gateway, listeners: &[ListenerInfo], refs: GatewayCondition) -> ObjectStatus {
    let g = gw.metadata.generation.unwrap_or(0);
    let refusal = refusal(gw);
    let programmed = listeners.iter().filter(|l| l.programmable).count();
    let accepted_listeners = listeners
        .iter()
        .filter(|l| l.conditions.first().is_some_and(|c| c.status == Status::True))
        .count();
    let invalid: Vec<&str> = listeners
        .iter()
        .filter(|l| !l.programmable)
        .map(|l| l.name.as_str())
        .collect();
    let accepted = match &refusal {
        Some(r) if r.type_ == Type::Accepted => Condition::fail(Type::Accepted, r.reason, r.message.clone(), g),
        _ if invalid.is_empty() || refusal.is_some() => {
            Condition::ok(Type::Accepted, Reason::Accepted, "Gateway accepted", g)
        }
        _ => {
            let valid: Vec<&str> = listeners
                .iter()
                .filter(|l| l.programmable)
                .map(|l| l.name.as_str())
                .collect();
            let msg = if valid.is_empty() {
                format!("listeners not valid: {}; see their conditions", invalid.join(", "))
            } else {
                format!(
                    "listeners not valid: {}; see their conditions. Programmed: {}",
                    invalid.join(", "),
                    valid.join(", ")
                )
            };
            let status = if accepted_listeners > 0 || listeners.is_empty() {
                Status::True
            } else {
                Status::False
            };
            Condition::new(Type::Accepted, status, Reason::ListenersNotValid, msg, g)
        }
    };
    let prog = match &refusal {
        Some(r) if r.type_ == Type::Programmed => Condition::fail(Type::Programmed, r.reason, r.message.clone(), g),
        Some(_) => Condition::fail(Type::Programmed, Reason::Invalid, "the Gateway is not accepted", g),
        None if programmed > 0 || listeners.is_empty() => Condition::ok(
            Type::Programmed,
            Reason::Programmed,
            "Configuration is served to the Gateway's proxies",
            g,
        ),
        None => Condition::fail(Type::Programmed, Reason::Invalid, "no listener can be programmed", g),
    };
    ObjectStatus::new(
        crate::api::consts::GATEWAY_V1,
        KIND_GATEWAY,
        key,
        StatusBody::Gateway {
            conditions: vec![accepted, prog, refs],
            listeners: listeners.iter().map(listeners::status).collect(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal_of(spec_extra: &str) -> Option<(Type, Reason)> {
        let gw: Gateway = serde_saphyr::from_str(&format!(
            "
metadata: {{name: gw, namespace: ns}}
spec:
  gatewayClassName: pier
  listeners: [{{name: http, port: 80, protocol: HTTP}}]
{spec_extra}"
        ))
        .unwrap();
        refusal(&gw).map(|r| (r.type_, r.reason))
    }

    #[test]
    fn refusal_table() {
        let accepted = Type::Accepted;
        let programmed = Type::Programmed;
        let table = [
            ("", None),
            ("  addresses: []", None),
            (
                "  infrastructure: {parametersRef: {group: invalid.io, kind: InvalidParameters, name: x}}",
                Some((accepted, Reason::InvalidParameters)),
            ),
            // Infrastructure labels alone are no parameters.
            ("  infrastructure: {labels: {a: b}}", None),
            (
                "  addresses: [{type: test/fake-invalid-type, value: x}, {type: IPAddress, value: 192.0.2.1}]",
                Some((accepted, Reason::UnsupportedAddress)),
            ),
            // GatewayStaticAddresses, later steps: IP addresses pier cannot bind.
            (
                "  addresses: [{type: IPAddress, value: 198.51.100.7}, {type: IPAddress, value: 192.0.2.7}]",
                Some((programmed, Reason::AddressNotUsable)),
            ),
            (
                "  addresses: [{value: 192.0.2.7}]",
                Some((programmed, Reason::AddressNotUsable)),
            ),
            (
                "  addresses: [{type: Hostname, value: gw.example.com}]",
                Some((programmed, Reason::AddressNotUsable)),
            ),
            // GatewayOptionalAddressValue: nothing pier could assign.
            (
                "  addresses: [{type: IPAddress}]",
                Some((programmed, Reason::AddressNotAssigned)),
            ),
        ];
        for (extra, want) in table {
            assert_eq!(refusal_of(extra), want, "{extra}");
        }
    }
}
