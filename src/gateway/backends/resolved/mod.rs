//! Hostname Backends (GEP/XBackend `ExternalHostname`, draft `FQDN`, Envoy Gateway `fqdn` endpoints):
//! who resolves them, and what a Backend's status says about it.
//!
//! With `--resolve-hostnames envoy` (the default) a hostname becomes a STRICT_DNS target: Envoy
//! resolves it, and the guardrails could only check the name. With `pier`, the resolver stage
//! (`runtime::resolve`) puts each name's answer in the model (`model::Resolution`), and here every
//! answered address is judged by the one address policy (`policy::judge_answers`, the same rules as any
//! Backend or EndpointSlice address, operator CIDRs and embedded IPv4 included): the allowed ones
//! become EDS endpoints on the target's port, carrying the hostname (TLS still sends it as SNI and
//! verifies it, both set from the Backend as before), and the dropped ones are named in the Backend's
//! `Resolved` condition. A name with no resolution yet, or whose lookups failed past the stale window,
//! gets no endpoint at all: traffic to it answers 503, and nothing unjudged is ever served.
//!
//! Must not touch: the clock (the stage turns TTLs and the stale window into `Resolution` states).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::Ctx;
use crate::gateway::conditions::{BackendCondition, BackendReason, BackendType, Condition, Status};
use crate::gateway::policy::{self, Refusal};
use crate::ir;
use crate::model::{Model, Resolution, resolution};
use crate::options::{Options, ResolveMode};

/// What pier's resolver said about one name a Backend uses, once judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameReport {
    pub name: String,
    pub state: NameState,
    pub allowed: Vec<IpAddr>,
    pub dropped: Vec<Refusal>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameState {
    Answered,
    Stale(String),
    Failed(String),
    Pending,
}

/// The discovery for `targets` (hostname:port each) under the operator's resolution mode; with pier
/// resolving, what each name resolved to goes to `reports` (one entry per name).
pub fn discovery(ctx: Ctx<'_>, targets: Vec<ir::DnsTarget>, reports: &mut Vec<NameReport>) -> ir::Discovery {
    if ctx.opts.resolution.mode == ResolveMode::Envoy {
        return ir::Discovery::Dns {
            targets,
            dns: ctx.opts.dns.clone(),
        };
    }
    // One endpoint per address, port and priority, even when two names answer with the same address.
    let mut endpoints = BTreeMap::new();
    for t in &targets {
        let report = judge(ctx, &t.hostname);
        for ip in &report.allowed {
            let address = ir::EndpointAddress::Ip(*ip, t.port);
            endpoints
                .entry((t.priority, address.clone()))
                .or_insert_with(|| ir::Endpoint {
                    address,
                    priority: t.priority,
                    hostname: Some(t.hostname.clone()),
                    zone: None,
                });
        }
        if !reports.iter().any(|r| r.name == report.name) {
            reports.push(report);
        }
    }
    ir::Discovery::Eds {
        endpoints: endpoints.into_values().collect(),
    }
}

/// Every hostname some Backend of `model` would resolve (lower case, no trailing dot): what the resolver
/// stage looks up. Names the guardrails refuse are left out — pier never even asks DNS about them.
pub fn hostnames(model: &Model, opts: &Options) -> BTreeSet<String> {
    use crate::api::backend::BackendShape;
    use crate::api::draft::DestinationType;
    use crate::api::eg::EgBackendType;
    use crate::api::xbackend::{BackendType as Type, XBackendSpec};
    let gep = |spec: &XBackendSpec| {
        let name = spec
            .external_hostname
            .as_ref()
            .filter(|_| spec.type_ == Type::ExternalHostname);
        name.map(|e| e.hostname.clone())
    };
    let mut names: Vec<String> = Vec::new();
    names.extend(model.xbackends.values().filter_map(|b| gep(&b.spec)));
    for b in model.backends.values() {
        names.extend(match &b.spec {
            BackendShape::Gep(spec) => gep(spec),
            BackendShape::Draft(spec) => {
                let d = &spec.destination;
                let fqdn = d.fqdn.as_ref().filter(|_| d.type_ == DestinationType::Fqdn);
                fqdn.map(|f| f.hostname.clone())
            }
        });
    }
    for b in model.eg_backends.values() {
        if b.spec.type_.unwrap_or(EgBackendType::Endpoints) == EgBackendType::Endpoints {
            let endpoints = b.spec.endpoints.iter().flatten();
            names.extend(endpoints.filter_map(|e| e.fqdn.as_ref().map(|f| f.hostname.clone())));
        }
    }
    names
        .iter()
        .filter(|n| policy::check_hostname(n, &opts.guardrails).is_ok())
        .map(|n| resolution::normalize(n))
        .collect()
}

/// `hostname`'s resolution (a recorded read, so the engine redoes this Backend when it changes), judged.
fn judge(ctx: Ctx<'_>, hostname: &str) -> NameReport {
    let key = resolution::key(hostname);
    let resolved = ctx.model.resolutions.get(&key);
    let judged = policy::judge_answers(resolved.map_or(&[][..], |r| r.addresses()), &ctx.opts.guardrails);
    let state = match resolved.map(|r| r.as_ref()) {
        None => NameState::Pending,
        Some(Resolution::Answered { .. }) => NameState::Answered,
        Some(Resolution::Stale { error, .. }) => NameState::Stale(error.clone()),
        Some(Resolution::Failed { error }) => NameState::Failed(error.clone()),
    };
    NameReport {
        name: key.name.to_string(),
        state,
        allowed: judged.allowed,
        dropped: judged.dropped,
    }
}

/// The `Resolved` condition of a Backend whose names pier resolves (none in `envoy` mode). True while
/// some name has an allowed address; otherwise False (Unknown before the first lookup) with the reason
/// of the first name. The message says, per name, where it resolved and what was dropped.
pub fn condition(reports: &[NameReport], generation: i64) -> Option<BackendCondition> {
    if reports.is_empty() {
        return None;
    }
    let message = reports.iter().map(describe).collect::<Vec<_>>().join("; ");
    let serving = reports.iter().any(|r| !r.allowed.is_empty());
    let stale = reports.iter().any(|r| matches!(r.state, NameState::Stale(_)));
    let (status, reason) = match &reports[0].state {
        _ if serving && stale => (Status::True, BackendReason::ServingStaleAnswer),
        _ if serving => (Status::True, BackendReason::Resolved),
        NameState::Pending => (Status::Unknown, BackendReason::NotResolvedYet),
        NameState::Failed(_) => (Status::False, BackendReason::LookupFailed),
        NameState::Answered | NameState::Stale(_) => (Status::False, BackendReason::NoAllowedAddress),
    };
    Some(Condition::new(
        BackendType::Resolved,
        status,
        reason,
        message,
        generation,
    ))
}

/// One name's part of the message: `api.example.com resolved to 203.0.113.7; dropped 169.254.169.254
/// (rule cloud-metadata)`.
fn describe(r: &NameReport) -> String {
    let list = |ips: &[IpAddr]| ips.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    let dropped = r
        .dropped
        .iter()
        .map(|d| match d.value.strip_suffix(')') {
            // `::ffff:a9fe:a9fe (IPv4-mapped form of 169.254.169.254)`: the rule goes inside.
            Some(open) => format!("{open}, rule {})", d.rule.name()),
            None => format!("{} (rule {})", d.value, d.rule.name()),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let answer = match (r.allowed.is_empty(), r.dropped.is_empty()) {
        (false, true) => format!("resolved to {}", list(&r.allowed)),
        (false, false) => format!("resolved to {}, dropped {dropped}", list(&r.allowed)),
        (true, false) => format!("resolved to no allowed address, dropped {dropped}"),
        (true, true) => "resolved to no address".to_string(),
    };
    match &r.state {
        NameState::Answered => format!("{} {answer}", r.name),
        NameState::Stale(error) => format!(
            "{}: lookup failed ({error}); its last answer is served until the stale window ends: {answer}",
            r.name
        ),
        NameState::Failed(error) => format!(
            "{}: lookup failed ({error}) and no earlier answer is left to serve; it has no endpoints",
            r.name
        ),
        NameState::Pending => format!("{} has not been resolved yet; it has no endpoints", r.name),
    }
}

#[cfg(test)]
mod tests;
