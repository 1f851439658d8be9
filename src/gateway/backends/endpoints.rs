//! EndpointSlices → endpoints for one Service port.
//!
//! Gateway API routes to a Service's endpoints, not its ClusterIP: conformance uses manual
//! EndpointSlices and headless Services. A slice belongs to a Service through the
//! `kubernetes.io/service-name` label; its port is matched to the Service port by *name* (the slice
//! carries the target port number). Only ready endpoints count (`ready` unset means ready, as the API
//! says); IPv4 and IPv6 slices both feed the cluster; FQDN slices are skipped with a note. Addresses
//! that no endpoint may have (loopback unless allowed, link-local, unspecified, multicast) are dropped
//! with a note: a manual slice is user input like any other.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ServicePort;

use super::Ctx;
use crate::gateway::conditions::{EndpointsProblem, EndpointsReason, Problem};
use crate::gateway::policy;
use crate::ir;
use crate::model::{EndpointSlice, ObjectKey};

#[derive(Debug)]
pub struct Found {
    pub endpoints: Vec<ir::Endpoint>,
    pub notes: Vec<String>,
    pub service_port: ServicePort,
}

/// Endpoints of `svc` for its port numbered `port`.
pub fn for_service_port(ctx: Ctx<'_>, svc: &ObjectKey, port: u16) -> Result<Found, EndpointsProblem> {
    let service_port = service_port(ctx, svc, port)?;
    if let Some(why) = ctx.model.unavailable(crate::model::Kind::EndpointSlice) {
        return Err(Problem::refs(
            EndpointsReason::BackendNotFound,
            format!("Service {svc}: its endpoints are unknown: EndpointSlices cannot be read ({why})"),
        ));
    }
    let port_name = service_port.name.clone().unwrap_or_default();
    let mut found = Found {
        endpoints: Vec::new(),
        notes: Vec::new(),
        service_port,
    };
    let guard = in_cluster_guard(ctx);
    let mut seen = BTreeSet::new();
    for (slice_key, slice) in ctx.model.slices_of(svc) {
        ready_endpoints(slice_key, slice, &port_name, &guard, &mut seen, &mut found.notes);
    }
    found.endpoints = seen.into_iter().collect();
    Ok(found)
}

/// The guardrails for in-cluster endpoints (EndpointSlice and Pod addresses). Loopback is refused for
/// Services too unless the operator allowed it; denied CIDRs are for Backend destinations only (they
/// typically list the Pod range Services legitimately use).
pub(super) fn in_cluster_guard(ctx: Ctx<'_>) -> crate::options::Guardrails {
    crate::options::Guardrails {
        denied_cidrs: Vec::new(),
        ..ctx.opts.guardrails.clone()
    }
}

/// The Service's port numbered `port`; an ExternalName Service has none pier routes to.
fn service_port(ctx: Ctx<'_>, svc: &ObjectKey, port: u16) -> Result<ServicePort, EndpointsProblem> {
    let service = ctx.model.services.get(svc).ok_or_else(|| {
        let message = ctx
            .model
            .not_found(crate::model::Kind::Service, format!("Service {svc}"));
        Problem::refs(EndpointsReason::BackendNotFound, message)
    })?;
    let spec = service.spec.as_ref();
    if spec.and_then(|s| s.type_.as_deref()) == Some("ExternalName") {
        return Err(Problem::refs(
            EndpointsReason::InvalidKind,
            format!(
                "Service {svc} is of type ExternalName, which pier does not route to (it bypasses ReferenceGrant); use an XBackend of type ExternalHostname"
            ),
        ));
    }
    let ports = spec.and_then(|s| s.ports.as_deref()).unwrap_or_default();
    ports
        .iter()
        .find(|p| p.port == i32::from(port))
        .cloned()
        .ok_or_else(|| {
            Problem::refs(
                EndpointsReason::BackendNotFound,
                format!(
                    "Service {svc} has no port {port} (ports: {})",
                    ports.iter().map(|p| p.port.to_string()).collect::<Vec<_>>().join(", ")
                ),
            )
        })
}

/// The ready endpoints of one of the Service's slices on the slice port named `port_name` (into `seen`);
/// what is skipped, and why, into `notes`.
fn ready_endpoints(
    slice_key: &ObjectKey,
    slice: &EndpointSlice,
    port_name: &str,
    guard: &crate::options::Guardrails,
    seen: &mut BTreeSet<ir::Endpoint>,
    notes: &mut Vec<String>,
) {
    if slice.address_type == "FQDN" {
        notes.push(format!(
            "EndpointSlice {slice_key} has addressType FQDN, which is not supported"
        ));
        return;
    }
    let Some(target) = slice
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref().unwrap_or_default() == port_name)
        .and_then(|p| p.port)
        .and_then(super::port_u16)
    else {
        return;
    };
    for ep in &slice.endpoints {
        let cond = ep.conditions.clone().unwrap_or_default();
        if cond.ready == Some(false) || cond.terminating == Some(true) {
            continue;
        }
        for addr in &ep.addresses {
            let Some(ip) = policy::parse_ip(addr) else {
                notes.push(format!("EndpointSlice {slice_key}: {addr:?} is not an IP address"));
                continue;
            };
            if let Err(refusal) = policy::check_ip(ip, guard) {
                notes.push(format!("EndpointSlice {slice_key}: {refusal}"));
                continue;
            }
            seen.insert(ir::Endpoint {
                address: ir::EndpointAddress::Ip(ip, target),
                priority: 0,
                hostname: ep.hostname.clone(),
                zone: ep.zone.clone(),
            });
        }
    }
}
