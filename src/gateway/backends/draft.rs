//! The draft `Backend` shape (`spec.destination`), normalised into the same IR as the GEP-4488 shape.
//!
//! - `type: FQDN` → STRICT_DNS on `fqdn.hostname`, one cluster per entry of `ports` (default: 443
//!   when TLS is configured, else 80). A port with `protocol: HTTPS`, or any `fqdn.tls`, means TLS:
//!   SNI `tls.serverName` or the hostname, trust from `caCertificates` (Secret key, default `ca.crt`)
//!   or the system bundle, `insecureSkipVerify` honoured, `clientCertificate` for mTLS (else the
//!   Gateway's backend client certificate).
//! - `type: Service` → EDS from the EndpointSlices of `kubernetesService` (same namespace), one
//!   cluster per listed port or, with no `ports`, per Service port.
//! - `extensions`: `pier.dev/connection-pool` (circuit breakers) and `pier.dev/outlier-detection`;
//!   any other type is refused, because silently ignoring a connection policy is a surprise.
//! - `fqdn.protocol.type`: `HTTP`, `HTTP11`, `HTTP2`, `H2C`, `GRPC`, `MCP`, `TCP`; vendor protocols
//!   (`vendor.io/x`) are refused.

use super::{Ctx, Evaluated, GatewayCert, PortChoice, Usable, endpoints, port_u16};
use crate::api::consts::CA_CERT_KEY;
use crate::api::draft::{
    ConnectionPoolConfig, DestinationType, DraftBackendSpec, EXT_CONNECTION_POOL, EXT_OUTLIER_DETECTION,
    OutlierDetectionConfig,
};
use crate::gateway::conditions::{ACCEPTED, Problem, reason};
use crate::gateway::duration::duration_ms;
use crate::gateway::{policy, tls};
use crate::ir;
use crate::model::ObjectKey;

pub fn evaluate(ctx: Ctx<'_>, key: &ObjectKey, spec: &DraftBackendSpec, generation: i64) -> Evaluated {
    let mut ev = Evaluated {
        generation,
        deprecated: true,
        ..Default::default()
    };
    let mut usable = Usable::default();
    if let Err(p) = extensions(spec, &mut usable) {
        ev.problems.push(p);
        return ev;
    }
    let d = &spec.destination;
    let invalid = |m: String| Problem::accepted(reason::INVALID, m);
    let mut ports: Vec<(u16, Option<String>)> = Vec::new();
    for (i, p) in d.ports.iter().flatten().enumerate() {
        match port_u16(p.port) {
            Some(n) => ports.push((n, p.protocol.clone())),
            None => {
                ev.problems.push(invalid(format!(
                    "spec.destination.ports[{i}].port: must be in 1..65535"
                )));
                return ev;
            }
        }
    }
    match d.type_ {
        DestinationType::Fqdn => {
            if d.kubernetes_service.is_some() {
                ev.problems.push(invalid(
                    "spec.destination.kubernetesService: must be unset when type is FQDN".into(),
                ));
                return ev;
            }
            let Some(fqdn) = &d.fqdn else {
                ev.problems
                    .push(invalid("spec.destination.fqdn: must be set when type is FQDN".into()));
                return ev;
            };
            if let Err(r) = policy::check_hostname(&fqdn.hostname, &ctx.opts.guardrails) {
                ev.problems.push(Problem::accepted(
                    reason::DESTINATION_NOT_ALLOWED,
                    format!("spec.destination.fqdn.hostname: {r}"),
                ));
                return ev;
            }
            let app = match fqdn.protocol.as_ref().map(|p| p.type_.as_str()) {
                None => None,
                Some(t) => match parse_protocol(&t.to_ascii_uppercase()) {
                    Some(p) => Some(p),
                    None => {
                        ev.problems.push(Problem::accepted(
                            reason::UNSUPPORTED_VALUE,
                            format!("spec.destination.fqdn.protocol.type: {t:?} is not supported (HTTP, HTTP11, HTTP2, H2C, GRPC, MCP, TCP)"),
                        ));
                        return ev;
                    }
                },
            };
            if ports.is_empty() {
                ports.push((if fqdn.tls.is_some() { 443 } else { 80 }, None));
            }
            for (i, (port, port_proto)) in ports.iter().enumerate() {
                let port_proto = port_proto.as_deref().map(str::to_ascii_uppercase);
                let https = port_proto.as_deref() == Some("HTTPS");
                let proto = match (&app, port_proto.as_deref()) {
                    (Some(p), _) => *p,
                    (None, None | Some("HTTPS")) => Proto::Http,
                    (None, Some(other)) => match parse_protocol(other) {
                        Some(p) => p,
                        None => {
                            ev.problems.push(Problem::accepted(
                                reason::UNSUPPORTED_VALUE,
                                format!("spec.destination.ports[{i}].protocol: {other:?} is not supported"),
                            ));
                            return ev;
                        }
                    },
                };
                let use_tls = https || fqdn.tls.is_some();
                let mut choice = PortChoice {
                    port: *port,
                    discovery: ir::Discovery::Dns {
                        targets: vec![ir::DnsTarget {
                            hostname: fqdn.hostname.clone(),
                            port: *port,
                            priority: 0,
                        }],
                        dns: ctx.opts.dns.clone(),
                    },
                    protocol: proto.upstream(use_tls),
                    tls: None,
                    gateway_client_cert: GatewayCert::No,
                    tcp: proto == Proto::Tcp,
                    secrets: Default::default(),
                };
                if use_tls {
                    match fqdn_tls(ctx, key, &fqdn.hostname, fqdn.tls.as_ref(), &mut usable) {
                        Ok((t, gw_cert)) => {
                            choice.tls = Some(t);
                            choice.gateway_client_cert = if gw_cert {
                                GatewayCert::Optional
                            } else {
                                GatewayCert::No
                            };
                        }
                        Err(p) => {
                            ev.problems.extend(p);
                            return ev;
                        }
                    }
                }
                usable.choices.push(choice);
            }
        }
        DestinationType::Service => {
            if d.fqdn.is_some() {
                ev.problems.push(invalid(
                    "spec.destination.fqdn: must be unset when type is Service".into(),
                ));
                return ev;
            }
            let Some(svc) = &d.kubernetes_service else {
                ev.problems.push(invalid(
                    "spec.destination.kubernetesService: must be set when type is Service".into(),
                ));
                return ev;
            };
            if svc.namespace.as_deref().is_some_and(|ns| ns != key.namespace) {
                ev.problems.push(Problem::refs(
                    reason::REF_NOT_PERMITTED,
                    "spec.destination.kubernetesService.namespace: the Service must be in the Backend's namespace",
                ));
                return ev;
            }
            let svc_key = ObjectKey::new(&key.namespace, &svc.name);
            if ports.is_empty() {
                let svc_ports = ctx
                    .model
                    .services
                    .get(&svc_key)
                    .and_then(|s| s.spec.as_ref())
                    .and_then(|s| s.ports.clone());
                ports = svc_ports
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|p| port_u16(p.port))
                    .map(|p| (p, None))
                    .collect();
            }
            if !ctx.model.services.contains_key(&svc_key) {
                ev.problems.push(Problem::refs(
                    reason::BACKEND_NOT_FOUND,
                    format!("spec.destination.kubernetesService: Service {svc_key} not found"),
                ));
                return ev;
            }
            for (i, (port, port_proto)) in ports.iter().enumerate() {
                // The draft gives TLS settings only to FQDN destinations: HTTPS to a Service would
                // have nothing to verify against, and plaintext is not what was asked for.
                let proto = match port_proto.as_deref() {
                    None => Proto::Http,
                    Some(p) => match parse_protocol(&p.to_ascii_uppercase()) {
                        Some(proto) => proto,
                        None => {
                            let why = if p.eq_ignore_ascii_case("HTTPS") {
                                "HTTPS to a Service destination is not supported: the draft shape has no TLS settings for it; use an XBackend of type EndpointSelector with spec.tls, or a BackendTLSPolicy on the Service"
                            } else {
                                "is not supported (HTTP, HTTP11, HTTP2, H2C, GRPC, MCP, TCP)"
                            };
                            ev.problems.push(Problem::accepted(
                                reason::UNSUPPORTED_VALUE,
                                format!("spec.destination.ports[{i}].protocol: {p:?}: {why}"),
                            ));
                            return ev;
                        }
                    },
                };
                let found = match endpoints::for_service_port(ctx, &svc_key, *port) {
                    Ok(f) => f,
                    Err(p) => {
                        ev.problems.push(p);
                        return ev;
                    }
                };
                ev.notes.extend(found.notes);
                usable.choices.push(PortChoice {
                    port: *port,
                    discovery: ir::Discovery::Eds {
                        endpoints: found.endpoints,
                    },
                    protocol: proto.upstream(false),
                    tls: None,
                    gateway_client_cert: GatewayCert::No,
                    tcp: proto == Proto::Tcp,
                    secrets: Default::default(),
                });
            }
        }
    }
    if ev.problems.iter().all(|p| p.type_ != ACCEPTED) {
        ev.usable = Some(usable);
    }
    ev
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proto {
    Http,
    Http11,
    Http2,
    H2c,
    Tcp,
}

impl Proto {
    fn upstream(self, tls: bool) -> ir::UpstreamProtocol {
        match self {
            Proto::Http | Proto::Tcp => ir::UpstreamProtocol::Auto,
            Proto::Http11 => ir::UpstreamProtocol::Http1,
            Proto::Http2 if tls => ir::UpstreamProtocol::Http2,
            Proto::Http2 | Proto::H2c => ir::UpstreamProtocol::H2c,
        }
    }
}

fn parse_protocol(upper: &str) -> Option<Proto> {
    Some(match upper {
        "HTTP" | "MCP" => Proto::Http,
        "HTTP11" => Proto::Http11,
        "HTTP2" | "GRPC" => Proto::Http2,
        "H2C" => Proto::H2c,
        "TCP" => Proto::Tcp,
        _ => return None,
    })
}

/// TLS of an FQDN destination; `bool` = take the client certificate from the Gateway.
fn fqdn_tls(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    hostname: &str,
    t: Option<&crate::api::draft::DraftTls>,
    usable: &mut Usable,
) -> Result<(ir::UpstreamTls, bool), Vec<Problem>> {
    let default = crate::api::draft::DraftTls {
        server_name: None,
        ca_certificates: None,
        client_certificate: None,
        insecure_skip_verify: None,
    };
    let t = t.unwrap_or(&default);
    let sni = t.server_name.clone().unwrap_or_else(|| hostname.to_string());
    let cas = t.ca_certificates.as_deref().unwrap_or_default();
    let insecure = t.insecure_skip_verify.unwrap_or(false);
    let trust = if insecure {
        if !cas.is_empty() {
            return Err(vec![Problem::accepted(
                reason::INVALID,
                "spec.destination.fqdn.tls: caCertificates and insecureSkipVerify are mutually exclusive",
            )]);
        }
        ir::Trust::InsecureSkipVerify
    } else if cas.is_empty() {
        let ca = tls::system_ca(&ctx.opts.system_ca_path);
        usable.secrets.insert(ca.secret_name.clone(), ca.secret);
        ir::Trust::Sds(ca.secret_name)
    } else {
        let mut refs = Vec::new();
        for (i, c) in cas.iter().enumerate() {
            if c.secret_ref.namespace.as_deref().is_some_and(|ns| ns != key.namespace) {
                return Err(vec![Problem::refs(
                    reason::REF_NOT_PERMITTED,
                    format!(
                        "spec.destination.fqdn.tls.caCertificates[{i}].secretRef.namespace: must be the Backend's namespace"
                    ),
                )]);
            }
            refs.push(tls::CaRef {
                group: c.secret_ref.group.clone().unwrap_or_default(),
                kind: c.secret_ref.kind.clone().unwrap_or_else(|| "Secret".into()),
                name: c.secret_ref.name.clone(),
                key: c.key.clone().unwrap_or_else(|| CA_CERT_KEY.to_string()),
            });
        }
        let out = tls::resolve_ca_refs(ctx.model, &key.namespace, &refs, ("backend", &key.namespace, &key.name));
        let Some(bundle) = out.bundle else {
            let mut ps = out.problems;
            ps.push(Problem::accepted(
                reason::NO_VALID_CA_CERTIFICATE,
                "spec.destination.fqdn.tls.caCertificates: no valid CA certificate",
            ));
            return Err(ps);
        };
        if !out.problems.is_empty() {
            return Err(out.problems);
        }
        usable.secrets.insert(bundle.secret_name.clone(), bundle.secret);
        ir::Trust::Sds(bundle.secret_name)
    };
    let sans = if insecure {
        Vec::new()
    } else {
        vec![ir::SanMatch::Dns(sni.clone())]
    };
    let mut upstream = tls::upstream_tls(Some(sni), trust, sans);
    let mut gateway_cert = true;
    if let Some(c) = &t.client_certificate {
        if c.secret_ref.namespace.as_deref().is_some_and(|ns| ns != key.namespace) {
            return Err(vec![Problem::refs(
                reason::REF_NOT_PERMITTED,
                "spec.destination.fqdn.tls.clientCertificate.secretRef.namespace: must be the Backend's namespace",
            )]);
        }
        let (name, secret) = tls::resolve_tls_secret(ctx.model, &key.namespace, &c.secret_ref, tls::CertRefUse::Client)
            .map_err(|p| vec![p])?;
        usable.secrets.insert(name.clone(), secret);
        upstream.client_certificate = Some(name);
        gateway_cert = false;
    }
    Ok((upstream, gateway_cert))
}

/// Parses `spec.extensions` into circuit breakers and outlier detection.
fn extensions(spec: &DraftBackendSpec, usable: &mut Usable) -> Result<(), Problem> {
    for (i, ext) in spec.extensions.iter().flatten().enumerate() {
        let field = format!("spec.extensions[{i}].config");
        let config = ext
            .config
            .clone()
            .unwrap_or(serde_json::Value::Object(Default::default()));
        let invalid = |e: String| Problem::accepted(reason::INVALID, e);
        match ext.type_.as_str() {
            EXT_CONNECTION_POOL => {
                let c: ConnectionPoolConfig = parse_config(&field, config).map_err(invalid)?;
                usable.circuit_breaker = Some(ir::CircuitBreaker {
                    max_connections: c.max_connections,
                    max_pending_requests: c.max_pending_requests,
                    max_requests: c.max_requests,
                    max_retries: c.max_retries,
                });
            }
            EXT_OUTLIER_DETECTION => {
                let c: OutlierDetectionConfig = parse_config(&field, config).map_err(invalid)?;
                let dur = |name: &str, v: &Option<String>| -> Result<Option<u64>, Problem> {
                    v.as_deref()
                        .map(|s| duration_ms(s).map_err(|e| invalid(format!("{field}.{name}: {e}"))))
                        .transpose()
                };
                usable.outlier_detection = Some(ir::OutlierDetection {
                    consecutive_5xx: c.consecutive_5xx,
                    interval_ms: dur("interval", &c.interval)?,
                    base_ejection_time_ms: dur("baseEjectionTime", &c.base_ejection_time)?,
                    max_ejection_percent: c.max_ejection_percent,
                });
            }
            other => {
                return Err(Problem::accepted(
                    reason::UNSUPPORTED_VALUE,
                    format!(
                        "spec.extensions[{i}].type: {other:?} is not supported; pier implements {EXT_CONNECTION_POOL} and {EXT_OUTLIER_DETECTION}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn parse_config<T: serde::de::DeserializeOwned>(field: &str, v: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("{field}: {}", e.inner())
        } else {
            format!("{field}.{path}: {}", e.inner())
        }
    })
}
