//! Envoy Gateway's `Backend`, with Envoy Gateway's semantics so its manifests behave the same here:
//! `fqdn` endpoints → STRICT_DNS; `ip` and `unix` endpoints → EDS (they may mix; FQDN may not mix
//! with either); `fallback: true` → every endpoint at priority 1; `appProtocols` h2c → HTTP/2, ws/wss
//! → HTTP/1.1; `DynamicResolver` → a dynamic forward proxy, only when the operator enabled it. TLS
//! needs a CA (refs or `System`) unless `insecureSkipVerify`, as in Envoy Gateway. Unlike Envoy
//! Gateway, the guardrails of `gateway::policy` apply to every endpoint, and a refused endpoint
//! refuses the whole Backend (a partial Backend would silently shift its traffic).

use super::{Ctx, Evaluated, GatewayCert, PortChoice, Usable, port_u16};
use crate::api::consts::SECRET_TYPE_TLS;
use crate::api::eg::{APP_PROTOCOL_H2C, APP_PROTOCOL_WS, APP_PROTOCOL_WSS, EgBackendSpec, EgBackendTls, EgBackendType};
use crate::gateway::conditions::{ACCEPTED, Problem, reason};
use crate::gateway::{policy, tls};
use crate::ir;
use crate::model::ObjectKey;

const UNIX_PATH_MAX: usize = 108;

pub fn evaluate(ctx: Ctx<'_>, key: &ObjectKey, spec: &EgBackendSpec, generation: i64) -> Evaluated {
    let mut ev = Evaluated {
        generation,
        ..Default::default()
    };
    let invalid = |m: String| Problem::accepted(reason::INVALID, m);
    let priority = u32::from(spec.fallback.unwrap_or(false));
    let mut usable = Usable {
        any_port: true,
        fallback: spec.fallback.unwrap_or(false),
        ..Default::default()
    };

    let mut protocol = ir::UpstreamProtocol::Auto;
    for (i, p) in spec.app_protocols.iter().flatten().enumerate() {
        protocol = match p.as_str() {
            APP_PROTOCOL_H2C => ir::UpstreamProtocol::H2c,
            APP_PROTOCOL_WS | APP_PROTOCOL_WSS => ir::UpstreamProtocol::Http1,
            other => {
                ev.problems
                    .push(invalid(format!("spec.appProtocols[{i}]: unknown protocol {other:?}")));
                return ev;
            }
        };
    }

    let (discovery, port) = match spec.type_.unwrap_or(EgBackendType::Endpoints) {
        EgBackendType::DynamicResolver => {
            if spec.endpoints.as_ref().is_some_and(|e| !e.is_empty()) {
                ev.problems.push(invalid(
                    "spec.endpoints: DynamicResolver type cannot have endpoints specified".into(),
                ));
                return ev;
            }
            if !ctx.opts.guardrails.enable_dynamic_resolver {
                ev.problems.push(Problem::accepted(
                    reason::UNSUPPORTED_VALUE,
                    "spec.type: DynamicResolver turns the proxy into an open forward proxy and is disabled; an operator can enable it with --enable-dynamic-resolver",
                ));
                return ev;
            }
            // No endpoint to check here: the guardrails go to Envoy, which checks each request's authority.
            let g = &ctx.opts.guardrails;
            let discovery = ir::Discovery::DynamicForwardProxy {
                dns: ctx.opts.dns.clone(),
                deny_authorities: policy::authority_deny_regexes(g),
                allow_authorities: policy::authority_allow_regexes(g),
            };
            (discovery, 0)
        }
        EgBackendType::Endpoints => {
            let eps = spec.endpoints.as_deref().unwrap_or_default();
            if eps.is_empty() {
                ev.problems
                    .push(invalid("spec.endpoints: at least one endpoint is required".into()));
                return ev;
            }
            let fqdn_count = eps.iter().filter(|e| e.fqdn.is_some()).count();
            if fqdn_count != 0 && fqdn_count != eps.len() {
                ev.problems.push(invalid(
                    "spec.endpoints: fqdn addresses cannot be mixed with other address types".into(),
                ));
                return ev;
            }
            let mut targets = Vec::new();
            let mut endpoints = Vec::new();
            for (i, e) in eps.iter().enumerate() {
                let f = format!("spec.endpoints[{i}]");
                let refuse =
                    |r: policy::Refusal| Problem::accepted(reason::DESTINATION_NOT_ALLOWED, format!("{f}: {r}"));
                let bad_port = |p: i32| invalid(format!("{f}: port {p} must be in 1..65535"));
                match (&e.fqdn, &e.ip, &e.unix) {
                    (Some(fq), None, None) => {
                        let Some(port) = port_u16(fq.port) else {
                            ev.problems.push(bad_port(fq.port));
                            return ev;
                        };
                        if let Err(r) = policy::check_hostname(&fq.hostname, &ctx.opts.guardrails) {
                            ev.problems.push(refuse(r));
                            return ev;
                        }
                        targets.push(ir::DnsTarget {
                            hostname: fq.hostname.clone(),
                            port,
                            priority,
                        });
                    }
                    (None, Some(ip), None) => {
                        let Some(port) = port_u16(ip.port) else {
                            ev.problems.push(bad_port(ip.port));
                            return ev;
                        };
                        let Some(addr) = policy::parse_ip(&ip.address) else {
                            ev.problems.push(invalid(format!(
                                "{f}.ip.address: {:?} is not an IP address",
                                ip.address
                            )));
                            return ev;
                        };
                        if let Err(r) = policy::check_ip(addr, &ctx.opts.guardrails) {
                            ev.problems.push(refuse(r));
                            return ev;
                        }
                        endpoints.push(ir::Endpoint {
                            address: ir::EndpointAddress::Ip(addr, port),
                            priority,
                            hostname: e.hostname.clone(),
                            zone: e.zone.clone(),
                        });
                    }
                    (None, None, Some(unix)) => {
                        if unix.path.len() > UNIX_PATH_MAX {
                            ev.problems.push(invalid(format!(
                                "{f}.unix.path: must not exceed {UNIX_PATH_MAX} characters"
                            )));
                            return ev;
                        }
                        if let Err(r) = policy::check_unix(&unix.path, &ctx.opts.guardrails) {
                            ev.problems.push(refuse(r));
                            return ev;
                        }
                        endpoints.push(ir::Endpoint {
                            address: ir::EndpointAddress::Unix(unix.path.clone()),
                            priority,
                            hostname: e.hostname.clone(),
                            zone: e.zone.clone(),
                        });
                    }
                    _ => {
                        ev.problems.push(invalid(format!(
                            "{f}: exactly one of fqdn, ip or unix must be specified"
                        )));
                        return ev;
                    }
                }
            }
            let auto_sni = spec
                .tls
                .as_ref()
                .and_then(|t| t.auto_sni_from_endpoint_hostname)
                .unwrap_or(false);
            if auto_sni && endpoints.iter().any(|e| e.hostname.is_none()) {
                ev.problems.push(invalid(
                    "spec.endpoints: when tls.autoSNIFromEndpointHostname is enabled, IP and Unix endpoints must define a hostname".into(),
                ));
                return ev;
            }
            if targets.is_empty() {
                let port = endpoints
                    .iter()
                    .find_map(|e| match e.address {
                        ir::EndpointAddress::Ip(_, p) => Some(p),
                        ir::EndpointAddress::Unix(_) => None,
                    })
                    .unwrap_or(0);
                endpoints.sort();
                (ir::Discovery::Eds { endpoints }, port)
            } else {
                let port = targets[0].port;
                targets.sort();
                (
                    ir::Discovery::Dns {
                        targets,
                        dns: ctx.opts.dns.clone(),
                    },
                    port,
                )
            }
        }
    };

    let mut choice = PortChoice {
        port,
        discovery,
        protocol,
        tls: None,
        gateway_client_cert: GatewayCert::No,
        tcp: false,
        secrets: Default::default(),
    };
    if let Some(t) = &spec.tls {
        match backend_tls(ctx, key, t, &mut usable) {
            Ok((upstream, gw)) => {
                if choice.protocol == ir::UpstreamProtocol::H2c {
                    choice.protocol = ir::UpstreamProtocol::Http2;
                }
                choice.tls = Some(upstream);
                choice.gateway_client_cert = if gw { GatewayCert::Optional } else { GatewayCert::No };
            }
            Err(p) => {
                ev.problems.push(p);
                return ev;
            }
        }
    }
    usable.choices.push(choice);
    if ev.problems.iter().all(|p| p.type_ != ACCEPTED) {
        ev.usable = Some(usable);
    }
    ev
}

fn backend_tls(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    t: &EgBackendTls,
    usable: &mut Usable,
) -> Result<(ir::UpstreamTls, bool), Problem> {
    let invalid = |m: &str| Problem::accepted(reason::INVALID, format!("spec.tls: {m}"));
    let refs = t.ca_certificate_refs.as_deref().unwrap_or_default();
    let insecure = t.insecure_skip_verify.unwrap_or(false);
    let auto_sni = t.auto_sni_from_endpoint_hostname.unwrap_or(false);
    if !refs.is_empty() && t.well_known_ca_certificates.is_some() {
        return Err(invalid(
            "must not contain both caCertificateRefs and wellKnownCACertificates",
        ));
    }
    if insecure && (!refs.is_empty() || t.well_known_ca_certificates.is_some()) {
        return Err(invalid(
            "must not contain either caCertificateRefs or wellKnownCACertificates when insecureSkipVerify is enabled",
        ));
    }
    if t.sni.is_some() && auto_sni {
        return Err(invalid("sni and autoSNIFromEndpointHostname are mutually exclusive"));
    }
    let trust = if insecure {
        ir::Trust::InsecureSkipVerify
    } else if let Some(wk) = &t.well_known_ca_certificates {
        if wk != "System" {
            return Err(invalid(&format!(
                "wellKnownCACertificates {wk:?} is not supported; pier supports \"System\""
            )));
        }
        let ca = tls::system_ca(&ctx.opts.system_ca_path);
        usable.secrets.insert(ca.secret_name.clone(), ca.secret);
        ir::Trust::Sds(ca.secret_name)
    } else if refs.is_empty() {
        return Err(invalid(
            "must specify either caCertificateRefs or wellKnownCACertificates when insecureSkipVerify is unset or false",
        ));
    } else {
        let refs: Vec<tls::CaRef> = refs.iter().map(tls::CaRef::from).collect();
        let out = tls::resolve_ca_refs(
            ctx.model,
            &key.namespace,
            &refs,
            ("eg-backend", &key.namespace, &key.name),
        );
        if let Some(p) = out.problems.into_iter().next() {
            return Err(if out.bundle.is_none() {
                Problem {
                    type_: ACCEPTED,
                    reason: reason::NO_VALID_CA_CERTIFICATE,
                    message: p.message,
                }
            } else {
                p
            });
        }
        let bundle = out.bundle.expect("no problems means a bundle");
        usable.secrets.insert(bundle.secret_name.clone(), bundle.secret);
        ir::Trust::Sds(bundle.secret_name)
    };
    let sans = match (&t.sni, insecure) {
        (Some(sni), false) => vec![ir::SanMatch::Dns(sni.clone())],
        _ => Vec::new(),
    };
    let mut upstream = tls::upstream_tls(t.sni.clone(), trust, sans);
    upstream.auto_host_sni = auto_sni;
    // Without a fixed SNI, Envoy Gateway takes SNI and the certificate check from the request's Host;
    // otherwise any certificate the CA signed, for any name, would be accepted.
    upstream.sni_from_host = t.sni.is_none() && !auto_sni;
    upstream.min_version = t
        .min_version
        .as_deref()
        .map(parse_version)
        .transpose()
        .map_err(|v| invalid(&format!("minVersion {v:?} is not one of Auto, 1.0, 1.1, 1.2, 1.3")))?;
    upstream.max_version = t
        .max_version
        .as_deref()
        .map(parse_version)
        .transpose()
        .map_err(|v| invalid(&format!("maxVersion {v:?} is not one of Auto, 1.0, 1.1, 1.2, 1.3")))?;
    if let (Some(min), Some(max)) = (upstream.min_version, upstream.max_version)
        && min != ir::TlsVersion::Auto
        && max != ir::TlsVersion::Auto
        && min > max
    {
        return Err(invalid("minVersion must be smaller or equal to maxVersion"));
    }
    upstream.ciphers = t.ciphers.clone().unwrap_or_default();
    upstream.ecdh_curves = t.ecdh_curves.clone().unwrap_or_default();
    upstream.signature_algorithms = t.signature_algorithms.clone().unwrap_or_default();
    upstream.alpn = t.alpn_protocols.clone().unwrap_or_default();
    let mut gateway_cert = true;
    if let Some(r) = &t.client_certificate_ref {
        if r.namespace.as_deref().is_some_and(|ns| ns != key.namespace) {
            return Err(Problem::refs(
                reason::REF_NOT_PERMITTED,
                "spec.tls.clientCertificateRef: the Secret must be in the Backend's namespace",
            ));
        }
        let (name, secret) = tls::resolve_tls_secret(ctx.model, &key.namespace, r, tls::CertRefUse::Client)?;
        debug_assert!(matches!(secret, ir::Secret::TlsCertificate { .. }), "{SECRET_TYPE_TLS}");
        usable.secrets.insert(name.clone(), secret);
        upstream.client_certificate = Some(name);
        gateway_cert = false;
    }
    Ok((upstream, gateway_cert))
}

fn parse_version(v: &str) -> Result<ir::TlsVersion, String> {
    Ok(match v {
        "Auto" => ir::TlsVersion::Auto,
        "1.0" => ir::TlsVersion::V1_0,
        "1.1" => ir::TlsVersion::V1_1,
        "1.2" => ir::TlsVersion::V1_2,
        "1.3" => ir::TlsVersion::V1_3,
        other => return Err(other.to_string()),
    })
}
