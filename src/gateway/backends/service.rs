//! A core Service backendRef: an EDS cluster from its EndpointSlices, with the protocol its port's
//! `appProtocol` names and the TLS of the BackendTLSPolicy that applies to that port.

use super::{Ctx, GatewayCert, PortChoice, Target, Usable, endpoints, port_u16};
use crate::gateway::backend_tls::PolicyIndex;
use crate::gateway::conditions::{Problem, RouteProblem, RouteReason};
use crate::ir;
use crate::ir::names::{self, BackendKind};
use crate::model::ObjectKey;

/// Kubernetes' standard application protocols (KEP-3726).
pub const APP_PROTOCOL_H2C: &str = "kubernetes.io/h2c";
pub const APP_PROTOCOL_WS: &str = "kubernetes.io/ws";

/// `Ok(None)`: the Service port is governed by a BackendTLSPolicy that is not valid. The share of
/// traffic gets a 5xx (never plaintext); the policy's own status says why, and the route's references
/// stay resolved (the reference itself is fine).
pub fn resolve(
    ctx: Ctx<'_>,
    policies: &PolicyIndex,
    key: &ObjectKey,
    port: Option<i32>,
) -> Result<Option<Target>, RouteProblem> {
    let Some(port) = port else {
        return Err(Problem::refs(
            RouteReason::BackendNotFound,
            format!("Service {key}: a Service backendRef must set port"),
        ));
    };
    let port = port_u16(port).ok_or_else(|| {
        Problem::refs(
            RouteReason::BackendNotFound,
            format!("Service {key}: port {port} is out of range"),
        )
    })?;
    policies_readable(ctx, &format!("Service {key}"))?;
    let found = endpoints::for_service_port(ctx, key, port).map_err(Problem::widen)?;
    let notes = found.notes.clone();
    let port_name = found.service_port.name.clone().unwrap_or_default();
    let mut protocol = match found.service_port.app_protocol.as_deref() {
        Some(APP_PROTOCOL_H2C) => ir::UpstreamProtocol::H2c,
        Some(APP_PROTOCOL_WS) => ir::UpstreamProtocol::Http1,
        _ => ir::UpstreamProtocol::Auto,
    };
    let discovery = ir::Discovery::Eds {
        endpoints: found.endpoints,
    };
    let mut choice = PortChoice::plain(port, discovery, protocol, false);
    if let Some((_, verdict)) = policies.lookup(key, &port_name) {
        let Some(tls) = &verdict.tls else { return Ok(None) };
        if protocol == ir::UpstreamProtocol::H2c {
            // h2c is cleartext by definition; with TLS it becomes h2 over ALPN.
            protocol = ir::UpstreamProtocol::Http2;
            choice.protocol = protocol;
        }
        choice.tls = Some(tls.clone());
        choice.secrets = verdict.secrets.clone();
        choice.gateway_client_cert = GatewayCert::Optional;
    }
    let usable = Usable::default();
    let name = names::cluster(BackendKind::Service, &key.namespace, &key.name, port);
    let mut target = super::target(
        BackendKind::Service,
        key,
        name,
        &usable,
        &choice,
        ctx.opts.connect_timeout_ms,
    );
    target.notes = notes;
    target
        .notes
        .extend(policies.missing_section_notes(BackendKind::Service, key));
    Ok(Some(target))
}

/// A backend a BackendTLSPolicy may target (a Service, an Envoy Gateway Backend) is refused while the
/// policies cannot be read: one of them may ask for TLS, and serving the backend without knowing would
/// send its traffic in plaintext. Its share answers 500 and the route says why.
pub(crate) fn policies_readable(ctx: Ctx<'_>, what: &str) -> Result<(), RouteProblem> {
    match ctx.model.unavailable(crate::model::Kind::BackendTlsPolicy) {
        Some(why) => Err(Problem::refs(
            RouteReason::InvalidBackend,
            format!(
                "{what}: BackendTLSPolicies cannot be read ({why}), so whether its traffic must use TLS is unknown; this share answers 500 rather than risk plaintext"
            ),
        )),
        None => Ok(()),
    }
}
