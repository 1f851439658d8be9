//! The GEP-4488 shape, shared by `XBackend` and the standard-group `Backend`: `ExternalHostname` (a
//! STRICT_DNS cluster on hostname:port, or EDS of pier's judged answers: `resolved`) or `EndpointSelector`
//! (an EDS cluster fed by the ready Pods `matchLabels` selects, or by the EndpointSlices of the Service
//! `selectorRef` names, in the Backend's namespace), with inline TLS and protocol.

use super::common::{Findings, Refused, client_certificate, invalid, port, same_namespace, set_iff};
use super::{Ctx, Deprecation, Evaluated, GatewayCert, PortChoice, Usable, endpoints, pods, resolved};
use crate::api::consts::{CORE_GROUP, KIND_SERVICE};
use crate::api::xbackend::{
    BackendPort, BackendProtocol, BackendTls, BackendTlsMode, BackendType, EndpointSelector, ExternalHostname,
    SelectorRef, XBackendSpec,
};
use crate::gateway::conditions::{BackendProblem, BackendReason, Problem};
use crate::gateway::tls::{self, SecretSet};
use crate::ir;
use crate::model::ObjectKey;

/// `owner_kind` is the lowercase kind used in minted secret names (`xbackend`, `backend`).
pub fn evaluate(ctx: Ctx<'_>, owner_kind: &str, key: &ObjectKey, spec: &XBackendSpec, generation: i64) -> Evaluated {
    let mut found = Findings::default();
    let verdict = usable(ctx, owner_kind, key, spec, &mut found);
    // Said even when the Backend is refused for something else: the shape is the user's to fix either way.
    let deprecated = (spec.port.port.is_some() && spec.port.number.is_none()).then_some(Deprecation::PortPortShape);
    Evaluated::new(generation, deprecated, found, verdict)
}

/// `spec.port`: `{number}` (v1.7) or `{port, name}` (v1.6.0); exactly one of `number` and `port`, and
/// `name` only beside `port` (v1.7 removed it). Returns the port and whether it is the v1.7 shape.
fn port_of(p: &BackendPort) -> Result<(u16, bool), BackendProblem> {
    let BackendPort {
        number,
        port: old,
        name,
    } = p;
    match (number, old) {
        (Some(_), Some(_)) => Err(invalid(
            "spec.port: set number (Gateway API v1.7) or port (v1.6.0), not both",
        )),
        (None, None) => Err(invalid("spec.port.number: must be set")),
        (Some(_), None) if name.is_some() => Err(invalid(
            "spec.port.name: not part of the v1.7 shape; remove it (only the v1.6.0 shape, spec.port.port, had a name)",
        )),
        (Some(n), None) => Ok((port(*n, "spec.port.number")?, true)),
        (None, Some(n)) => Ok((port(*n, "spec.port.port")?, false)),
    }
}

fn usable(
    ctx: Ctx<'_>,
    owner_kind: &str,
    key: &ObjectKey,
    spec: &XBackendSpec,
    found: &mut Findings,
) -> Result<Usable, Refused> {
    let XBackendSpec {
        type_,
        port,
        external_hostname,
        endpoint_selector,
        protocol,
        tls,
        session_persistence,
    } = spec;
    let (port, v17) = port_of(port)?;
    let session = session_of(
        owner_kind,
        key,
        *type_,
        session_persistence.as_deref(),
        endpoint_selector
            .as_ref()
            .and_then(|s| s.session_persistence.as_deref()),
    )?;
    validation_rules(*protocol, tls.as_deref(), v17)?;
    let tls = tls.as_ref().filter(|t| t.mode != BackendTlsMode::None);
    let mcp = *protocol == Some(BackendProtocol::Mcp);
    let (protocol, tcp) = protocol_of(*protocol, tls.is_some());
    let discovery = match type_ {
        BackendType::ExternalHostname => {
            let ext = set_iff(
                "ExternalHostname",
                ("spec.externalHostname", external_hostname.as_ref()),
                &[("spec.endpointSelector", endpoint_selector.is_some())],
            )?;
            external(ctx, ext, port, found)?
        }
        BackendType::EndpointSelector => {
            let sel = set_iff(
                "EndpointSelector",
                ("spec.endpointSelector", endpoint_selector.as_ref()),
                &[("spec.externalHostname", external_hostname.is_some())],
            )?;
            selected(ctx, key, sel, port, found)?
        }
    };
    let mut usable = Usable {
        ref_port_prohibited: v17,
        ..Usable::default()
    };
    let mut choice = PortChoice::plain(port, discovery, protocol, tcp);
    choice.long_lived = mcp;
    choice.session = session;
    if let Some(t) = tls {
        let owner = (owner_kind, key.namespace.as_str(), key.name.as_str());
        let hostname = external_hostname.as_ref().map(|e| e.hostname.as_str());
        let (upstream, gateway_cert) = backend_tls(ctx, owner, key, t, hostname, &mut usable.secrets, found)?;
        choice.tls = Some(std::sync::Arc::new(upstream));
        choice.gateway_client_cert = gateway_cert;
    }
    usable.choices.push(choice);
    Ok(usable)
}

/// The Backend's `sessionPersistence`, at the top of its spec or under `endpointSelector` (upstream's
/// final place is not settled: `crate::api::xbackend`), for type `EndpointSelector` only, as upstream
/// allows it.
fn session_of(
    owner_kind: &str,
    key: &ObjectKey,
    type_: BackendType,
    top: Option<&crate::api::session::SessionPersistence>,
    nested: Option<&crate::api::session::SessionPersistence>,
) -> Result<Option<ir::Session>, BackendProblem> {
    let (sp, field) = match (top, nested) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(invalid(
                "spec.sessionPersistence: set it at the top of the spec or under endpointSelector, not both",
            ));
        }
        (Some(sp), None) => (sp, "spec.sessionPersistence"),
        (None, Some(sp)) => (sp, "spec.endpointSelector.sessionPersistence"),
    };
    if type_ != BackendType::EndpointSelector {
        return Err(Problem::accepted(
            BackendReason::UnsupportedValue,
            format!("{field}: session persistence is defined for type EndpointSelector only"),
        ));
    }
    let owner = format!("{owner_kind}/{}/{}", key.namespace, key.name);
    crate::gateway::session::judge(sp, field, &ir::names::session_cookie(&owner))
        .map(Some)
        .map_err(|why| Problem::accepted(BackendReason::UnsupportedValue, why))
}

/// `ExternalHostname`: once the guardrails allow the name, Envoy resolves it (STRICT_DNS) or, with
/// `--resolve-hostnames pier`, pier's judged answers are served as EDS (`resolved`).
fn external(
    ctx: Ctx<'_>,
    ext: &ExternalHostname,
    port: u16,
    found: &mut Findings,
) -> Result<ir::Discovery, BackendProblem> {
    let ExternalHostname { hostname } = ext;
    crate::gateway::policy::check_external_hostname(hostname, &ctx.opts.guardrails)
        .map_err(|r| super::common::destination_not_allowed("spec.externalHostname.hostname", r))?;
    let target = ir::DnsTarget {
        hostname: hostname.clone(),
        port,
        priority: 0,
    };
    Ok(resolved::discovery(ctx, vec![target], &mut found.resolved))
}

/// `EndpointSelector`: the ready Pods `matchLabels` selects (v1.7), or the EndpointSlices of the
/// Service pier's `selectorRef` names. The GEP text's nested `selector` is read as `matchLabels`;
/// `matchExpressions` are not part of the v1.7 selector and are refused.
fn selected(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    sel: &EndpointSelector,
    port: u16,
    found: &mut Findings,
) -> Result<ir::Discovery, BackendProblem> {
    let EndpointSelector {
        match_labels,
        selector_ref,
        selector,
        session_persistence: _,
    } = sel;
    let labels = match (match_labels, selector_ref, selector) {
        (Some(m), None, None) => labels_of(m, "spec.endpointSelector.matchLabels")?,
        (None, None, Some(s)) => {
            if s.match_expressions.as_ref().is_some_and(|e| !e.is_empty()) {
                return Err(Problem::accepted(
                    BackendReason::UnsupportedValue,
                    "spec.endpointSelector.selector.matchExpressions: the Gateway API v1.7 selector has matchLabels only; write spec.endpointSelector.matchLabels",
                ));
            }
            let field = "spec.endpointSelector.selector.matchLabels";
            let m = s
                .match_labels
                .as_ref()
                .ok_or_else(|| invalid(format!("{field}: must be set")))?;
            labels_of(m, field)?
        }
        (None, Some(r), None) => {
            let svc = selected_service(key, r)?;
            let eps = endpoints::for_service_port(ctx, &svc, port).map_err(Problem::widen)?;
            found.notes.extend(eps.notes);
            return Ok(ir::Discovery::Eds {
                endpoints: eps.endpoints,
            });
        }
        _ => {
            return Err(invalid(
                "spec.endpointSelector: set exactly one of matchLabels and selectorRef",
            ));
        }
    };
    if let Some(why) = ctx.model.unavailable(crate::model::Kind::Pod) {
        // Unknown endpoints are not "no endpoints": say why rather than serve 503s that look healthy.
        return Err(Problem::refs(
            BackendReason::BackendNotFound,
            format!("spec.endpointSelector: the Pods it selects are unknown: Pods cannot be read ({why})"),
        ));
    }
    let endpoints = pods::selected(ctx, key, labels, port, &mut found.notes);
    Ok(ir::Discovery::Eds { endpoints })
}

/// `matchLabels` at `field`: 1 to 64 pairs (upstream's bounds; files bypass the API server's).
fn labels_of<'a>(
    m: &'a std::collections::BTreeMap<String, String>,
    field: &str,
) -> Result<&'a std::collections::BTreeMap<String, String>, BackendProblem> {
    if m.is_empty() || m.len() > pods::MAX_LABELS {
        return Err(invalid(format!(
            "{field}: must have 1 to {} entries (has {})",
            pods::MAX_LABELS,
            m.len()
        )));
    }
    Ok(m)
}

/// The Service a `selectorRef` names: core, in the Backend's namespace.
fn selected_service(key: &ObjectKey, r: &SelectorRef) -> Result<ObjectKey, BackendProblem> {
    let SelectorRef {
        group,
        kind,
        name,
        namespace,
    } = r;
    let group = group.as_deref().unwrap_or(CORE_GROUP);
    let kind = kind.as_deref().unwrap_or(KIND_SERVICE);
    if group != CORE_GROUP || kind != KIND_SERVICE {
        return Err(Problem::refs(
            BackendReason::InvalidKind,
            format!(
                "spec.endpointSelector.selectorRef: {}/{kind} is not supported; use a core Service",
                if group.is_empty() { "core" } else { group }
            ),
        ));
    }
    same_namespace(
        key,
        namespace.as_deref(),
        "spec.endpointSelector.selectorRef",
        "Service",
    )?;
    Ok(ObjectKey::new(&key.namespace, name))
}

/// `spec.tls` (mode not `None`): server validation, then the client certificate the mode asks for.
fn backend_tls(
    ctx: Ctx<'_>,
    owner: (&str, &str, &str),
    key: &ObjectKey,
    t: &BackendTls,
    hostname: Option<&str>,
    secrets: &mut SecretSet,
    found: &mut Findings,
) -> Result<(ir::UpstreamTls, GatewayCert), BackendProblem> {
    let BackendTls {
        mode,
        client_certificate_ref,
        validation,
    } = t;
    let mut upstream = match validation {
        Some(v) => validated(ctx, owner, v, secrets, found)?,
        None => system_trust(ctx, hostname, secrets)?,
    };
    let gateway_cert = match (mode, client_certificate_ref) {
        (BackendTlsMode::ServerOnly, Some(_)) => {
            return Err(invalid(
                "spec.tls.clientCertificateRef: must be set if and only if mode is ClientAndServer",
            ));
        }
        (BackendTlsMode::ClientAndServer, None) => GatewayCert::Required,
        (BackendTlsMode::ClientAndServer, Some(r)) => {
            let name = client_certificate(ctx, key, r, "spec.tls.clientCertificateRef", secrets)?;
            upstream.client_certificate = Some(name);
            GatewayCert::No
        }
        // Mode `None` never gets here: it means no TLS at all.
        (BackendTlsMode::ServerOnly | BackendTlsMode::None, _) => GatewayCert::No,
    };
    Ok((upstream, gateway_cert))
}

/// An explicit `validation` block. A CA reference that does not resolve while another does leaves the
/// Backend usable with `ResolvedRefs=False`.
fn validated(
    ctx: Ctx<'_>,
    owner: (&str, &str, &str),
    v: &crate::api::validation::BackendTlsValidation,
    secrets: &mut SecretSet,
    found: &mut Findings,
) -> Result<ir::UpstreamTls, BackendProblem> {
    let site = tls::Site {
        namespace: owner.1,
        owner,
        field: "spec.tls.validation",
    };
    let mut problems = Vec::new();
    let result = tls::resolve_validation(
        ctx.model,
        &ctx.opts.system_ca_path,
        site,
        &v.standard,
        &v.extras,
        &mut problems,
    );
    found.problems.extend(problems.into_iter().map(Problem::widen));
    let v = result.map_err(Problem::widen)?;
    secrets.extend(v.secrets);
    Ok(v.tls)
}

/// No `validation`: the external hostname is verified against the system trust store. An
/// EndpointSelector Backend has no hostname to verify, so it must say what to trust.
fn system_trust(
    ctx: Ctx<'_>,
    hostname: Option<&str>,
    secrets: &mut SecretSet,
) -> Result<ir::UpstreamTls, BackendProblem> {
    let Some(host) = hostname else {
        return Err(invalid(
            "spec.tls.validation: required for EndpointSelector backends (there is no hostname to verify)",
        ));
    };
    let ca = tls::system_ca(&ctx.opts.system_ca_path);
    secrets.insert(ca.secret_name.clone(), ca.secret);
    Ok(tls::upstream_tls(
        Some(host.to_string()),
        ir::Trust::Sds(ca.secret_name),
        vec![ir::SanMatch::Dns(host.to_string())],
    ))
}

/// The v1.7 CRD's CEL rules, which files (and an API server with an older CRD) do not enforce:
/// `H2C` is cleartext, `HTTP2` and `WSS` need TLS, and `clientCertificateRef` is set if and only if
/// the mode is `ClientAndServer`. A v1.6.0-shape Backend (`spec.port.port`) may still leave the
/// reference out under `ClientAndServer` and present the Gateway's certificate, as it could then.
fn validation_rules(protocol: Option<BackendProtocol>, tls: Option<&BackendTls>, v17: bool) -> Result<(), Refused> {
    let mode = tls.map(|t| t.mode);
    let encrypted = mode.is_some_and(|m| m != BackendTlsMode::None);
    let rule = match (protocol, encrypted) {
        (Some(BackendProtocol::H2c), true) => {
            Some("spec.protocol H2C is cleartext HTTP/2: spec.tls must be unset (or mode None)")
        }
        (Some(BackendProtocol::Http2), false) => {
            Some("spec.protocol HTTP2 needs TLS (ALPN h2): set spec.tls, or use H2C for cleartext HTTP/2")
        }
        (Some(BackendProtocol::Wss), false) => Some("spec.protocol WSS is WebSocket over TLS: set spec.tls"),
        _ => None,
    };
    if let Some(rule) = rule {
        return Err(invalid(rule).into());
    }
    let cert = tls.and_then(|t| t.client_certificate_ref.as_ref()).is_some();
    match (mode, cert) {
        (Some(BackendTlsMode::ClientAndServer), false) if v17 => {
            Err(invalid("spec.tls.clientCertificateRef: must be set if and only if mode is ClientAndServer").into())
        }
        (Some(BackendTlsMode::None), true) => Err(invalid(
            "spec.tls.clientCertificateRef: must be set if and only if mode is ClientAndServer (mode is None)",
        )
        .into()),
        _ => Ok(()),
    }
}

/// Protocol → how Envoy speaks to the upstream, and whether it is TCP (unusable from HTTPRoute).
/// `HTTP2` without TLS can only be HTTP/2 with prior knowledge (h2c). `MCP` (streamable HTTP) and
/// `GRPC` ride on HTTP: MCP like `HTTP`, gRPC like `HTTP2`.
fn protocol_of(p: Option<BackendProtocol>, tls: bool) -> (ir::UpstreamProtocol, bool) {
    use ir::UpstreamProtocol as U;
    match p {
        None | Some(BackendProtocol::Http) | Some(BackendProtocol::Mcp) => (U::Auto, false),
        // A WebSocket upgrade is an HTTP/1.1 request; the route's upgrade handling carries it.
        Some(BackendProtocol::Http11) | Some(BackendProtocol::Wss) => (U::Http1, false),
        Some(BackendProtocol::Http2) | Some(BackendProtocol::Grpc) => (if tls { U::Http2 } else { U::H2c }, false),
        Some(BackendProtocol::H2c) => (U::H2c, false),
        Some(BackendProtocol::Tcp) => (U::Auto, true),
    }
}
