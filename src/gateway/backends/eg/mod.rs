//! Envoy Gateway's `Backend`, with Envoy Gateway's semantics so its manifests behave the same here:
//! `fqdn` endpoints → STRICT_DNS; `ip` and `unix` endpoints → EDS (they may mix; FQDN may not mix
//! with either); `fallback: true` → every endpoint at priority 1; `appProtocols` h2c → HTTP/2, ws/wss
//! → HTTP/1.1; `DynamicResolver` → a dynamic forward proxy, only when the operator enabled it. TLS
//! needs a CA (refs or `System`) unless `insecureSkipVerify`, as in Envoy Gateway (`tls`). Unlike Envoy
//! Gateway, the guardrails of `gateway::policy` apply to every endpoint, and a refused endpoint
//! refuses the whole Backend (a partial Backend would silently shift its traffic).

mod tls;

use super::common::{Findings, Refused, allowed_hostname, destination_not_allowed, invalid, port};
use super::{Ctx, Evaluated, PortChoice, Usable, resolved};
use crate::api::eg::{
    APP_PROTOCOL_H2C, APP_PROTOCOL_WS, APP_PROTOCOL_WSS, EgBackendSpec, EgBackendType, EgEndpoint, EgFqdnEndpoint,
    EgIpEndpoint, EgUnixEndpoint,
};
use crate::gateway::conditions::{BackendProblem, BackendReason, Problem};
use crate::gateway::policy;
use crate::ir;
use crate::model::ObjectKey;

const UNIX_PATH_MAX: usize = 108;

pub fn evaluate(ctx: Ctx<'_>, key: &ObjectKey, spec: &EgBackendSpec, generation: i64) -> Evaluated {
    let mut found = Findings::default();
    let verdict = usable(ctx, key, spec, &mut found);
    Evaluated::new(generation, None, found, verdict)
}

fn usable(ctx: Ctx<'_>, key: &ObjectKey, spec: &EgBackendSpec, found: &mut Findings) -> Result<Usable, Refused> {
    let EgBackendSpec {
        type_,
        endpoints,
        app_protocols,
        fallback,
        tls,
    } = spec;
    let fallback = fallback.unwrap_or(false);
    let mut protocol = app_protocol(app_protocols.as_deref().unwrap_or_default())?;
    let endpoints = endpoints.as_deref().unwrap_or_default();
    let (discovery, port) = match type_.unwrap_or(EgBackendType::Endpoints) {
        EgBackendType::DynamicResolver => dynamic_resolver(ctx, endpoints)?,
        EgBackendType::Endpoints => {
            let auto_sni = tls
                .as_ref()
                .and_then(|t| t.auto_sni_from_endpoint_hostname)
                .unwrap_or(false);
            endpoint_discovery(ctx, endpoints, u32::from(fallback), auto_sni, found)?
        }
    };
    let mut usable = Usable {
        any_port: true,
        fallback,
        ..Default::default()
    };
    let mut choice_tls = None;
    let mut gateway_cert = super::GatewayCert::No;
    if let Some(t) = tls {
        let (upstream, gw) = tls::backend_tls(ctx, key, t, &mut usable.secrets)?;
        if protocol == ir::UpstreamProtocol::H2c {
            protocol = ir::UpstreamProtocol::Http2;
        }
        choice_tls = Some(std::sync::Arc::new(upstream));
        gateway_cert = gw;
    }
    let mut choice = PortChoice::plain(port, discovery, protocol, false);
    choice.tls = choice_tls;
    choice.gateway_client_cert = gateway_cert;
    usable.choices.push(choice);
    Ok(usable)
}

/// `appProtocols`: the last one listed decides.
fn app_protocol(list: &[String]) -> Result<ir::UpstreamProtocol, BackendProblem> {
    let mut protocol = ir::UpstreamProtocol::Auto;
    for (i, p) in list.iter().enumerate() {
        protocol = match p.as_str() {
            APP_PROTOCOL_H2C => ir::UpstreamProtocol::H2c,
            APP_PROTOCOL_WS | APP_PROTOCOL_WSS => ir::UpstreamProtocol::Http1,
            other => return Err(invalid(format!("spec.appProtocols[{i}]: unknown protocol {other:?}"))),
        };
    }
    Ok(protocol)
}

/// `DynamicResolver`: an open forward proxy for whoever writes the route, so only with the operator's
/// opt-in. There is no endpoint to check: the guardrails go to Envoy, which checks each request's
/// authority.
fn dynamic_resolver(ctx: Ctx<'_>, endpoints: &[EgEndpoint]) -> Result<(ir::Discovery, u16), BackendProblem> {
    if !endpoints.is_empty() {
        return Err(invalid(
            "spec.endpoints: DynamicResolver type cannot have endpoints specified",
        ));
    }
    let g = &ctx.opts.guardrails;
    if !g.enable_dynamic_resolver {
        return Err(Problem::accepted(
            BackendReason::UnsupportedValue,
            "spec.type: DynamicResolver turns the proxy into an open forward proxy and is disabled; an operator can enable it with --enable-dynamic-resolver",
        ));
    }
    let discovery = ir::Discovery::DynamicForwardProxy {
        dns: ctx.opts.dns.clone(),
        deny_authorities: policy::authority_deny_regexes(g),
        allow_authorities: policy::authority_allow_regexes(g),
    };
    Ok((discovery, 0))
}

/// One endpoint: a DNS target (fqdn) or an address (ip, unix).
enum Destination {
    Dns(ir::DnsTarget),
    Address(ir::Endpoint),
}

/// `Endpoints`: a DNS cluster over the fqdn endpoints, or EDS over the ip and unix ones; the port is
/// the first endpoint's.
fn endpoint_discovery(
    ctx: Ctx<'_>,
    eps: &[EgEndpoint],
    priority: u32,
    auto_sni: bool,
    found: &mut Findings,
) -> Result<(ir::Discovery, u16), BackendProblem> {
    if eps.is_empty() {
        return Err(invalid("spec.endpoints: at least one endpoint is required"));
    }
    let fqdn_count = eps.iter().filter(|e| e.fqdn.is_some()).count();
    if fqdn_count != 0 && fqdn_count != eps.len() {
        return Err(invalid(
            "spec.endpoints: fqdn addresses cannot be mixed with other address types",
        ));
    }
    let mut targets = Vec::new();
    let mut endpoints = Vec::new();
    for (i, e) in eps.iter().enumerate() {
        match destination(ctx, e, &format!("spec.endpoints[{i}]"), priority)? {
            Destination::Dns(t) => targets.push(t),
            Destination::Address(a) => endpoints.push(a),
        }
    }
    if auto_sni && endpoints.iter().any(|e| e.hostname.is_none()) {
        return Err(invalid(
            "spec.endpoints: when tls.autoSNIFromEndpointHostname is enabled, IP and Unix endpoints must define a hostname",
        ));
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
        return Ok((ir::Discovery::Eds { endpoints }, port));
    }
    let port = targets[0].port;
    targets.sort();
    Ok((resolved::discovery(ctx, targets, &mut found.resolved), port))
}

/// One endpoint at `f`, once the guardrails allow it.
fn destination(ctx: Ctx<'_>, e: &EgEndpoint, f: &str, priority: u32) -> Result<Destination, BackendProblem> {
    let EgEndpoint {
        fqdn,
        ip,
        unix,
        hostname,
        zone,
    } = e;
    let endpoint = |address| ir::Endpoint {
        address,
        priority,
        hostname: hostname.clone(),
        zone: zone.clone(),
    };
    let guardrails = &ctx.opts.guardrails;
    match (fqdn, ip, unix) {
        (Some(EgFqdnEndpoint { hostname, port: p }), None, None) => {
            let port = port(*p, &format!("{f}.fqdn.port"))?;
            allowed_hostname(ctx, hostname, f)?;
            Ok(Destination::Dns(ir::DnsTarget {
                hostname: hostname.clone(),
                port,
                priority,
            }))
        }
        (None, Some(EgIpEndpoint { address, port: p }), None) => {
            let port = port(*p, &format!("{f}.ip.port"))?;
            let addr = policy::parse_ip(address)
                .ok_or_else(|| invalid(format!("{f}.ip.address: {address:?} is not an IP address")))?;
            policy::check_ip(addr, guardrails).map_err(|r| destination_not_allowed(f, r))?;
            Ok(Destination::Address(endpoint(ir::EndpointAddress::Ip(addr, port))))
        }
        (None, None, Some(EgUnixEndpoint { path })) => {
            if path.len() > UNIX_PATH_MAX {
                return Err(invalid(format!(
                    "{f}.unix.path: must not exceed {UNIX_PATH_MAX} characters"
                )));
            }
            policy::check_unix(path, guardrails).map_err(|r| destination_not_allowed(f, r))?;
            Ok(Destination::Address(endpoint(ir::EndpointAddress::Unix(path.clone()))))
        }
        _ => Err(invalid(format!(
            "{f}: exactly one of fqdn, ip or unix must be specified"
        ))),
    }
}
