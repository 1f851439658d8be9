//! The policy side of resolving a backendRef to something other than a Service: an Envoy Gateway
//! Backend gets the TLS of the policy that targets it (as a Service port does), and an XBackend or GEP
//! Backend that a policy names fails closed, since the policy cannot be applied to it.

use super::PolicyIndex;
use crate::gateway::backends::{GatewayCert, Target};
use crate::gateway::conditions::{Problem, RouteProblem, RouteReason};
use crate::ir;
use crate::ir::names::BackendKind;
use crate::model::ObjectKey;

/// What the policies say about a resolved non-Service target.
pub enum Applied {
    /// Serve the target (with the policy's TLS, if one applies).
    Serve,
    /// A policy governs the target but is not valid: its share answers 5xx; the policy's status says why.
    FailClosed,
}

/// Applies the BackendTLSPolicy governing `key` of `kind` to its resolved target `t`. An `Err` is the
/// route's problem: the target is an XBackend or GEP Backend without TLS of its own that a policy (which
/// may not target it) asks TLS for, so the share answers 500 rather than go out in plaintext.
pub fn to_backend(
    policies: &PolicyIndex,
    kind: BackendKind,
    key: &ObjectKey,
    t: &mut Target,
) -> Result<Applied, RouteProblem> {
    t.notes.extend(policies.missing_section_notes(kind, key));
    let Some((policy, verdict)) = policies.lookup_kind(kind, key, "") else {
        return Ok(Applied::Serve);
    };
    if kind != BackendKind::EgBackend {
        // The GEP gives XBackends and GEP Backends TLS of their own and forbids policies on them: the
        // policy is refused in its own status. A Backend with `spec.tls` keeps it; one without is the
        // case where the policy's author clearly wanted TLS, so its share fails closed.
        if t.cluster.tls.is_some() {
            return Ok(Applied::Serve);
        }
        return Err(Problem::refs(
            RouteReason::InvalidBackend,
            format!(
                "{} {key} has no spec.tls, and BackendTLSPolicy {policy} targets it asking for TLS, which the Backend GEP does not allow; this share answers 500 rather than go out in plaintext (move the TLS settings to the Backend's spec.tls and remove the policy's targetRef)",
                crate::gateway::backends::kind_name(kind)
            ),
        ));
    }
    let Some(tls) = &verdict.tls else {
        return Ok(Applied::FailClosed);
    };
    let cluster = std::sync::Arc::make_mut(&mut t.cluster);
    let own = cluster.tls.take().map(std::sync::Arc::unwrap_or_clone);
    let mut merged = ir::UpstreamTls::clone(tls);
    // The policy decides whom to trust and which name to check (as it does on a Service port); the
    // Backend's own `spec.tls` keeps what the policy has no field for: its client certificate, TLS
    // versions, ciphers, curves, signature algorithms and ALPN (Envoy Gateway merges them alike).
    if let Some(own) = own {
        merged.client_certificate = own.client_certificate;
        merged.min_version = own.min_version;
        merged.max_version = own.max_version;
        merged.ciphers = own.ciphers;
        merged.ecdh_curves = own.ecdh_curves;
        merged.signature_algorithms = own.signature_algorithms;
        merged.alpn = own.alpn;
    }
    if merged.client_certificate.is_none() {
        t.gateway_client_cert = GatewayCert::Optional;
    }
    if cluster.protocol == ir::UpstreamProtocol::H2c {
        // h2c is cleartext by definition; with TLS it becomes h2 over ALPN.
        cluster.protocol = ir::UpstreamProtocol::Http2;
    }
    cluster.tls = Some(std::sync::Arc::new(merged));
    t.secrets.extend(verdict.secrets.clone());
    Ok(Applied::Serve)
}
