//! The GEP-4488 shape, shared by `XBackend` and the standard-group `Backend`: `ExternalHostname` (a
//! STRICT_DNS cluster on hostname:port) or `EndpointSelector` (an EDS cluster fed by the EndpointSlices
//! of a Service in the same namespace), with inline TLS and protocol.

use super::{Ctx, Evaluated, GatewayCert, PortChoice, Usable, endpoints, port_u16};
use crate::api::consts::{CORE_GROUP, KIND_SERVICE};
use crate::api::xbackend::{BackendProtocol, BackendTlsMode, BackendType, XBackendSpec};
use crate::gateway::conditions::{Problem, reason};
use crate::gateway::{policy, tls};
use crate::ir;
use crate::model::ObjectKey;

/// `owner_kind` is the lowercase kind used in minted secret names (`xbackend`, `backend`).
pub fn evaluate(ctx: Ctx<'_>, owner_kind: &str, key: &ObjectKey, spec: &XBackendSpec, generation: i64) -> Evaluated {
    let mut ev = Evaluated {
        generation,
        ..Default::default()
    };
    let invalid = |m: &str| Problem::accepted(reason::INVALID, m);
    let Some(port) = port_u16(spec.port.port) else {
        ev.problems.push(invalid("spec.port.port: must be in 1..65535"));
        return ev;
    };
    let (protocol, tcp) = protocol_of(
        spec.protocol,
        spec.tls.as_ref().is_some_and(|t| t.mode != BackendTlsMode::None),
    );

    let discovery = match spec.type_ {
        BackendType::ExternalHostname => {
            if spec.endpoint_selector.is_some() {
                ev.problems.push(invalid(
                    "spec.endpointSelector: must be unset when type is ExternalHostname",
                ));
                return ev;
            }
            let Some(ext) = &spec.external_hostname else {
                ev.problems.push(invalid(
                    "spec.externalHostname: must be set when type is ExternalHostname",
                ));
                return ev;
            };
            if let Err(refusal) = policy::check_hostname(&ext.hostname, &ctx.opts.guardrails) {
                ev.problems.push(Problem::accepted(
                    reason::DESTINATION_NOT_ALLOWED,
                    format!("spec.externalHostname.hostname: {refusal}"),
                ));
                return ev;
            }
            ir::Discovery::Dns {
                targets: vec![ir::DnsTarget {
                    hostname: ext.hostname.clone(),
                    port,
                    priority: 0,
                }],
                dns: ctx.opts.dns.clone(),
            }
        }
        BackendType::EndpointSelector => {
            if spec.external_hostname.is_some() {
                ev.problems.push(invalid(
                    "spec.externalHostname: must be unset when type is EndpointSelector",
                ));
                return ev;
            }
            let Some(sel) = &spec.endpoint_selector else {
                ev.problems.push(invalid(
                    "spec.endpointSelector: must be set when type is EndpointSelector",
                ));
                return ev;
            };
            match (&sel.selector_ref, &sel.selector) {
                (Some(_), Some(_)) | (None, None) => {
                    ev.problems.push(invalid(
                        "spec.endpointSelector: set exactly one of selectorRef and selector",
                    ));
                    return ev;
                }
                (None, Some(_)) => {
                    ev.problems.push(Problem::accepted(
                        reason::UNSUPPORTED_VALUE,
                        "spec.endpointSelector.selector: label selectors select Pods, which pier does not watch \
                         (the EndpointSelector KEP is unfinished); use selectorRef to a Service",
                    ));
                    return ev;
                }
                (Some(r), None) => {
                    let group = r.group.as_deref().unwrap_or(CORE_GROUP);
                    let kind = r.kind.as_deref().unwrap_or(KIND_SERVICE);
                    if group != CORE_GROUP || kind != KIND_SERVICE {
                        ev.problems.push(Problem::refs(
                            reason::INVALID_KIND,
                            format!(
                                "spec.endpointSelector.selectorRef: {}/{kind} is not supported; use a core Service",
                                if group.is_empty() { "core" } else { group }
                            ),
                        ));
                        return ev;
                    }
                    if r.namespace.as_deref().is_some_and(|ns| ns != key.namespace) {
                        ev.problems.push(Problem::refs(
                            reason::REF_NOT_PERMITTED,
                            "spec.endpointSelector.selectorRef.namespace: the Service must be in the Backend's namespace",
                        ));
                        return ev;
                    }
                    let svc_key = ObjectKey::new(&key.namespace, &r.name);
                    match endpoints::for_service_port(ctx, &svc_key, port) {
                        Ok(found) => {
                            ev.notes.extend(found.notes);
                            ir::Discovery::Eds {
                                endpoints: found.endpoints,
                            }
                        }
                        Err(p) => {
                            ev.problems.push(p);
                            return ev;
                        }
                    }
                }
            }
        }
    };

    let mut usable = Usable::default();
    let mut choice = PortChoice {
        port,
        discovery,
        protocol,
        tls: None,
        gateway_client_cert: GatewayCert::No,
        tcp,
        secrets: Default::default(),
    };
    if let Some(t) = &spec.tls
        && t.mode != BackendTlsMode::None
    {
        let owner = (owner_kind, key.namespace.as_str(), key.name.as_str());
        let mut upstream = match &t.validation {
            Some(v) => {
                let out = tls::resolve_validation(
                    ctx.model,
                    &ctx.opts.system_ca_path,
                    &key.namespace,
                    v,
                    owner,
                    "spec.tls.validation",
                );
                ev.problems.extend(out.problems);
                usable.secrets.extend(out.secrets);
                match out.tls {
                    Some(u) => u,
                    None => return ev,
                }
            }
            None => match &spec.external_hostname {
                // No explicit validation: verify the external name against the system trust store.
                Some(ext) => {
                    let ca = tls::system_ca(&ctx.opts.system_ca_path);
                    usable.secrets.insert(ca.secret_name.clone(), ca.secret);
                    tls::upstream_tls(
                        Some(ext.hostname.clone()),
                        ir::Trust::Sds(ca.secret_name),
                        vec![ir::SanMatch::Dns(ext.hostname.clone())],
                    )
                }
                None => {
                    ev.problems.push(invalid(
                        "spec.tls.validation: required for EndpointSelector backends (there is no hostname to verify)",
                    ));
                    return ev;
                }
            },
        };
        match (t.mode, &t.client_certificate_ref) {
            (BackendTlsMode::ServerOnly, Some(_)) => {
                ev.problems.push(invalid(
                    "spec.tls.clientCertificateRef: must be set if and only if mode is ClientAndServer",
                ));
                return ev;
            }
            (BackendTlsMode::ClientAndServer, None) => choice.gateway_client_cert = GatewayCert::Required,
            (BackendTlsMode::ClientAndServer, Some(r)) => {
                if r.namespace.as_deref().is_some_and(|ns| ns != key.namespace) {
                    ev.problems.push(Problem::refs(
                        reason::REF_NOT_PERMITTED,
                        "spec.tls.clientCertificateRef.namespace: the Secret must be in the Backend's namespace",
                    ));
                    return ev;
                }
                match tls::resolve_tls_secret(ctx.model, &key.namespace, r, tls::CertRefUse::Client) {
                    Ok((name, secret)) => {
                        usable.secrets.insert(name.clone(), secret);
                        upstream.client_certificate = Some(name);
                    }
                    Err(p) => {
                        ev.problems.push(p);
                        return ev;
                    }
                }
            }
            _ => {}
        }
        choice.tls = Some(upstream);
    }
    usable.choices.push(choice);
    // Partial CA failures (some refs valid) leave the backend usable with ResolvedRefs=False.
    if ev
        .problems
        .iter()
        .any(|p| p.type_ == crate::gateway::conditions::ACCEPTED)
    {
        return ev;
    }
    ev.usable = Some(usable);
    ev
}

/// Protocol → how Envoy speaks to the upstream, and whether it is TCP (unusable from HTTPRoute).
/// `HTTP2` without TLS can only be HTTP/2 with prior knowledge (h2c). `MCP` (streamable HTTP) and
/// `GRPC` ride on HTTP: MCP like `HTTP`, gRPC like `HTTP2`.
fn protocol_of(p: Option<BackendProtocol>, tls: bool) -> (ir::UpstreamProtocol, bool) {
    use ir::UpstreamProtocol as U;
    match p {
        None | Some(BackendProtocol::Http) | Some(BackendProtocol::Mcp) => (U::Auto, false),
        Some(BackendProtocol::Http11) => (U::Http1, false),
        Some(BackendProtocol::Http2) | Some(BackendProtocol::Grpc) => (if tls { U::Http2 } else { U::H2c }, false),
        Some(BackendProtocol::H2c) => (U::H2c, false),
        Some(BackendProtocol::Tcp) => (U::Auto, true),
    }
}
