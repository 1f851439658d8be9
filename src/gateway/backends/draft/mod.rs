//! The draft `Backend` shape (`spec.destination`), normalised into the same IR as the GEP-4488 shape.
//!
//! - `type: FQDN` → STRICT_DNS on `fqdn.hostname`, one cluster per entry of `ports` (default: 443
//!   when TLS is configured, else 80). A port with `protocol: HTTPS`, or any `fqdn.tls`, means TLS:
//!   SNI `tls.serverName` or the hostname, trust from `caCertificates` (Secret key, default `ca.crt`)
//!   or the system bundle, `insecureSkipVerify` honoured, `clientCertificate` for mTLS (else the
//!   Gateway's backend client certificate).
//! - `type: Service` → EDS from the EndpointSlices of `kubernetesService` (same namespace), one
//!   cluster per listed port or, with no `ports`, per Service port.
//! - `extensions`: `pier.dev/connection-pool` (circuit breakers) and `pier.dev/outlier-detection`
//!   (`extensions`); any other type is refused, because silently ignoring a connection policy is a
//!   surprise.
//! - `fqdn.protocol.type`: `HTTP`, `HTTP11`, `HTTP2`, `H2C`, `GRPC`, `MCP`, `TCP`; vendor protocols
//!   (`vendor.io/x`) are refused.

mod extensions;

use super::common::{Findings, Refused, allowed_hostname, client_certificate, invalid, port, same_namespace, set_iff};
use super::{Ctx, Evaluated, GatewayCert, PortChoice, Usable, endpoints, resolved};
use crate::api::consts::CA_CERT_KEY;
use crate::api::draft::{
    Destination, DestinationType, DraftBackendSpec, DraftPort, DraftProtocol, DraftTls, Fqdn, ServiceBackend,
    TlsCertificateRef,
};
use crate::gateway::conditions::{BackendProblem, BackendReason, Problem};
use crate::gateway::tls::{self, SecretSet};
use crate::ir;
use crate::model::ObjectKey;

/// A destination port: its number and the protocol written on it.
type Port = (u16, Option<String>);

pub fn evaluate(ctx: Ctx<'_>, key: &ObjectKey, spec: &DraftBackendSpec, generation: i64) -> Evaluated {
    let mut found = Findings::default();
    let verdict = usable(ctx, key, spec, &mut found);
    Evaluated::new(generation, Some(super::Deprecation::DraftShape), found, verdict)
}

fn usable(ctx: Ctx<'_>, key: &ObjectKey, spec: &DraftBackendSpec, found: &mut Findings) -> Result<Usable, Refused> {
    let DraftBackendSpec {
        destination,
        extensions,
    } = spec;
    let mut usable = Usable::default();
    extensions::apply(extensions.as_deref().unwrap_or_default(), &mut usable)?;
    let Destination {
        type_,
        ports,
        fqdn,
        kubernetes_service,
    } = destination;
    let ports = ports_of(ports.as_deref().unwrap_or_default())?;
    usable.choices = match type_ {
        DestinationType::Fqdn => {
            let fqdn = set_iff(
                "FQDN",
                ("spec.destination.fqdn", fqdn.as_ref()),
                &[("spec.destination.kubernetesService", kubernetes_service.is_some())],
            )?;
            fqdn_choices(ctx, key, fqdn, ports, &mut usable.secrets, found)?
        }
        DestinationType::Service => {
            let svc = set_iff(
                "Service",
                ("spec.destination.kubernetesService", kubernetes_service.as_ref()),
                &[("spec.destination.fqdn", fqdn.is_some())],
            )?;
            service_choices(ctx, key, svc, ports, found)?
        }
    };
    Ok(usable)
}

fn ports_of(ports: &[DraftPort]) -> Result<Vec<Port>, BackendProblem> {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let DraftPort {
                name: _,
                port: number,
                protocol,
            } = p;
            Ok((
                port(*number, &format!("spec.destination.ports[{i}].port"))?,
                protocol.clone(),
            ))
        })
        .collect()
}

/// `type: FQDN`: one DNS cluster per port, TLS where the port or `fqdn.tls` asks for it.
fn fqdn_choices(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    fqdn: &Fqdn,
    mut ports: Vec<Port>,
    secrets: &mut SecretSet,
    found: &mut Findings,
) -> Result<Vec<PortChoice>, Refused> {
    let Fqdn {
        hostname,
        tls,
        protocol,
    } = fqdn;
    allowed_hostname(ctx, hostname, "spec.destination.fqdn.hostname")?;
    let app = app_protocol(protocol.as_ref())?;
    if ports.is_empty() {
        ports.push((if tls.is_some() { 443 } else { 80 }, None));
    }
    let mut out = Vec::new();
    for (i, (port, written)) in ports.into_iter().enumerate() {
        let written = written.as_deref().map(str::to_ascii_uppercase);
        let https = written.as_deref() == Some("HTTPS");
        let proto = match (app, written.as_deref()) {
            (Some(p), _) => p,
            (None, None | Some("HTTPS")) => Proto::Http,
            (None, Some(other)) => parse_protocol(other).ok_or_else(|| {
                Problem::accepted(
                    BackendReason::UnsupportedValue,
                    format!("spec.destination.ports[{i}].protocol: {other:?} is not supported"),
                )
            })?,
        };
        let use_tls = https || tls.is_some();
        let target = ir::DnsTarget {
            hostname: hostname.clone(),
            port,
            priority: 0,
        };
        let discovery = resolved::discovery(ctx, vec![target], &mut found.resolved);
        let mut choice = PortChoice::plain(port, discovery, proto.upstream(use_tls), proto == Proto::Tcp);
        choice.long_lived = proto == Proto::Mcp;
        if use_tls {
            let (upstream, gateway_cert) = fqdn_tls(ctx, key, hostname, tls.as_ref(), secrets)?;
            choice.tls = Some(std::sync::Arc::new(upstream));
            choice.gateway_client_cert = gateway_cert;
        }
        out.push(choice);
    }
    Ok(out)
}

/// `fqdn.protocol.type`, which applies to every port.
fn app_protocol(p: Option<&DraftProtocol>) -> Result<Option<Proto>, BackendProblem> {
    let Some(DraftProtocol { type_, options: _ }) = p else {
        return Ok(None);
    };
    parse_protocol(&type_.to_ascii_uppercase()).map(Some).ok_or_else(|| {
        Problem::accepted(
            BackendReason::UnsupportedValue,
            format!(
                "spec.destination.fqdn.protocol.type: {type_:?} is not supported (HTTP, HTTP11, HTTP2, H2C, GRPC, MCP, TCP)"
            ),
        )
    })
}

/// `type: Service`: one EDS cluster per listed port, or per Service port when none is listed. The draft
/// gives TLS settings only to FQDN destinations: HTTPS to a Service would have nothing to verify
/// against, and plaintext is not what was asked for.
fn service_choices(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    svc: &ServiceBackend,
    mut ports: Vec<Port>,
    found: &mut Findings,
) -> Result<Vec<PortChoice>, BackendProblem> {
    let ServiceBackend { name, namespace } = svc;
    same_namespace(
        key,
        namespace.as_deref(),
        "spec.destination.kubernetesService",
        "Service",
    )?;
    let svc_key = ObjectKey::new(&key.namespace, name);
    let Some(service) = ctx.model.services.get(&svc_key) else {
        return Err(Problem::refs(
            BackendReason::BackendNotFound,
            ctx.model.not_found(
                crate::model::Kind::Service,
                format!("spec.destination.kubernetesService: Service {svc_key}"),
            ),
        ));
    };
    if ports.is_empty() {
        let listed = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_deref())
            .unwrap_or_default();
        ports = listed
            .iter()
            .filter_map(|p| super::port_u16(p.port))
            .map(|p| (p, None))
            .collect();
    }
    let mut out = Vec::new();
    for (i, (port, written)) in ports.into_iter().enumerate() {
        let proto = match written.as_deref() {
            None => Proto::Http,
            Some(p) => parse_protocol(&p.to_ascii_uppercase()).ok_or_else(|| service_protocol_refused(i, p))?,
        };
        let eps = endpoints::for_service_port(ctx, &svc_key, port).map_err(Problem::widen)?;
        found.notes.extend(eps.notes);
        let discovery = ir::Discovery::Eds {
            endpoints: eps.endpoints,
        };
        let mut choice = PortChoice::plain(port, discovery, proto.upstream(false), proto == Proto::Tcp);
        choice.long_lived = proto == Proto::Mcp;
        out.push(choice);
    }
    Ok(out)
}

fn service_protocol_refused(i: usize, p: &str) -> BackendProblem {
    let why = if p.eq_ignore_ascii_case("HTTPS") {
        "HTTPS to a Service destination is not supported: the draft shape has no TLS settings for it; use an XBackend of type EndpointSelector with spec.tls, or a BackendTLSPolicy on the Service"
    } else {
        "is not supported (HTTP, HTTP11, HTTP2, H2C, GRPC, MCP, TCP)"
    };
    Problem::accepted(
        BackendReason::UnsupportedValue,
        format!("spec.destination.ports[{i}].protocol: {p:?}: {why}"),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proto {
    Http,
    /// Streamable HTTP: HTTP on the wire, with long-lived event-stream answers.
    Mcp,
    Http11,
    Http2,
    H2c,
    Tcp,
}

impl Proto {
    fn upstream(self, tls: bool) -> ir::UpstreamProtocol {
        match self {
            Proto::Http | Proto::Mcp | Proto::Tcp => ir::UpstreamProtocol::Auto,
            Proto::Http11 => ir::UpstreamProtocol::Http1,
            Proto::Http2 if tls => ir::UpstreamProtocol::Http2,
            Proto::Http2 | Proto::H2c => ir::UpstreamProtocol::H2c,
        }
    }
}

fn parse_protocol(upper: &str) -> Option<Proto> {
    Some(match upper {
        "HTTP" => Proto::Http,
        "MCP" => Proto::Mcp,
        "HTTP11" => Proto::Http11,
        "HTTP2" | "GRPC" => Proto::Http2,
        "H2C" => Proto::H2c,
        "TCP" => Proto::Tcp,
        _ => return None,
    })
}

/// TLS of an FQDN destination, and whether the Gateway's client certificate applies (no own one).
fn fqdn_tls(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    hostname: &str,
    t: Option<&DraftTls>,
    secrets: &mut SecretSet,
) -> Result<(ir::UpstreamTls, GatewayCert), Refused> {
    let none = DraftTls {
        server_name: None,
        ca_certificates: None,
        client_certificate: None,
        insecure_skip_verify: None,
    };
    let DraftTls {
        server_name,
        ca_certificates,
        client_certificate: own_certificate,
        insecure_skip_verify,
    } = t.unwrap_or(&none);
    let sni = server_name.clone().unwrap_or_else(|| hostname.to_string());
    let insecure = insecure_skip_verify.unwrap_or(false);
    let cas = ca_certificates.as_deref().unwrap_or_default();
    let trust = fqdn_trust(ctx, key, cas, insecure, secrets)?;
    let sans = if insecure {
        Vec::new()
    } else {
        vec![ir::SanMatch::Dns(sni.clone())]
    };
    let mut upstream = tls::upstream_tls(Some(sni), trust, sans);
    let Some(c) = own_certificate else {
        return Ok((upstream, GatewayCert::Optional));
    };
    let TlsCertificateRef { secret_ref, key: _ } = c;
    let field = "spec.destination.fqdn.tls.clientCertificate.secretRef";
    upstream.client_certificate = Some(client_certificate(ctx, key, secret_ref, field, secrets)?);
    Ok((upstream, GatewayCert::No))
}

/// `insecureSkipVerify`, the listed `caCertificates` (every one must resolve), or the system bundle.
fn fqdn_trust(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    cas: &[TlsCertificateRef],
    insecure: bool,
    secrets: &mut SecretSet,
) -> Result<ir::Trust, Refused> {
    if insecure {
        if !cas.is_empty() {
            return Err(invalid(
                "spec.destination.fqdn.tls: caCertificates and insecureSkipVerify are mutually exclusive",
            )
            .into());
        }
        return Ok(ir::Trust::InsecureSkipVerify);
    }
    if cas.is_empty() {
        let ca = tls::system_ca(&ctx.opts.system_ca_path);
        secrets.insert(ca.secret_name.clone(), ca.secret);
        return Ok(ir::Trust::Sds(ca.secret_name));
    }
    let mut refs = Vec::new();
    for (i, c) in cas.iter().enumerate() {
        let TlsCertificateRef {
            secret_ref,
            key: ca_key,
        } = c;
        let field = format!("spec.destination.fqdn.tls.caCertificates[{i}].secretRef");
        same_namespace(key, secret_ref.namespace.as_deref(), &field, "Secret")?;
        refs.push(tls::CaRef {
            group: secret_ref.group.clone().unwrap_or_default(),
            kind: secret_ref.kind.clone().unwrap_or_else(|| "Secret".into()),
            name: secret_ref.name.clone(),
            key: ca_key.clone().unwrap_or_else(|| CA_CERT_KEY.to_string()),
        });
    }
    let owner = ("backend", key.namespace.as_str(), key.name.as_str());
    let out = tls::resolve_ca_refs(ctx.model, &key.namespace, &refs, owner, tls::CaKinds::Core);
    let mut problems: Vec<BackendProblem> = out.problems.into_iter().map(Problem::widen).collect();
    match out.bundle {
        Some(bundle) if problems.is_empty() => {
            secrets.insert(bundle.secret_name.clone(), bundle.secret);
            Ok(ir::Trust::Sds(bundle.secret_name))
        }
        Some(_) => Err(Refused(problems)),
        None => {
            problems.push(Problem::accepted(
                BackendReason::NoValidCACertificate,
                "spec.destination.fqdn.tls.caCertificates: no valid CA certificate",
            ));
            Err(Refused(problems))
        }
    }
}
