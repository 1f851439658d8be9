//! backendRef → cluster. Each Backend kind is evaluated once per translation into an [`Evaluated`]:
//! the problems that go on its own status, and — if it is usable — one [`PortChoice`] per port it
//! serves. A route's backendRef then only selects a port and checks route-level rules (kind, namespace,
//! ReferenceGrant, protocol). Clusters are named by identity in `ir::names`, so every route that
//! uses the same backend port shares one cluster.
//!
//! Each shape's evaluation (`gep`, `draft`, `eg`) destructures its spec, so a field added upstream is a
//! compile error here rather than a setting silently dropped, and is a chain of small steps returning
//! `Result<_, BackendProblem>`; the steps every shape shares are in `common`.
//!
//! Must not touch: listeners, routes, or anything Envoy-specific beyond the IR.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::backend_tls::PolicyIndex;
use super::conditions::{BackendProblem, BackendReason, Problem, RouteProblem, RouteReason};
use super::tls::SecretSet;
use crate::api::consts::{
    CORE_GROUP, EG_GROUP, GATEWAY_GROUP, KIND_BACKEND, KIND_SERVICE, KIND_XBACKEND, X_GATEWAY_GROUP,
};
use crate::ir;
use crate::ir::names::{self, BackendKind};
use crate::model::{Model, ObjectKey};
use crate::options::Options;

mod common;
mod draft;
mod eg;
pub mod endpoints;
mod gep;
mod pods;
mod reach;
pub mod resolved;
mod service;
pub mod verdict;

pub(super) use reach::target;
pub use reach::{Backends, Reached, References, aggregate};

pub(crate) use common::port_u16;
use common::{Findings, Refused};

/// What the translator needs from its surroundings while evaluating backends.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub model: &'a Model,
    pub opts: &'a Options,
}

/// The result of evaluating one Backend object.
#[derive(Debug, Default, PartialEq)]
pub struct Evaluated {
    pub generation: i64,
    /// Problems for the object's own status (Accepted / ResolvedRefs).
    pub problems: Vec<BackendProblem>,
    /// A shape pier still reads but upstream has left behind: `Deprecated=True` says which.
    pub deprecated: Option<Deprecation>,
    /// Informational notes appended to the Accepted message (e.g. endpoints skipped).
    pub notes: Vec<String>,
    /// With `--resolve-hostnames pier`: what each of its hostnames resolved to (usable Backends only).
    pub resolved: Vec<resolved::NameReport>,
    pub usable: Option<Usable>,
}

impl Evaluated {
    /// `verdict` is the Backend's usable form or what refuses it; `found` what else its evaluation found.
    /// A Backend with an `Accepted` problem is never usable.
    fn new(
        generation: i64,
        deprecated: Option<Deprecation>,
        found: Findings,
        verdict: Result<Usable, Refused>,
    ) -> Self {
        let mut problems = found.problems;
        let usable = match verdict {
            Ok(u) => Some(u),
            Err(Refused(ps)) => {
                problems.extend(ps);
                None
            }
        };
        let usable = usable.filter(|_| {
            problems
                .iter()
                .all(|p| p.type_ != super::conditions::BackendType::Accepted)
        });
        Self {
            generation,
            problems,
            deprecated,
            notes: found.notes,
            resolved: if usable.is_some() { found.resolved } else { Vec::new() },
            usable,
        }
    }
}

/// Why a Backend is marked `Deprecated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deprecation {
    /// The draft `spec.destination` shape of the standard-group Backend.
    DraftShape,
    /// `spec.port.port` (Gateway API v1.6.0) instead of `spec.port.number` (the v1.7 line).
    PortPortShape,
}

/// Everything needed to build a cluster for any port of a usable backend.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Usable {
    pub choices: Vec<PortChoice>,
    /// Envoy Gateway Backends carry ports on their endpoints: one cluster whatever the ref's port.
    pub any_port: bool,
    /// The v1.7 shape (`spec.port.number`): the port lives on the Backend and a backendRef must not
    /// set one.
    pub ref_port_prohibited: bool,
    pub secrets: SecretSet,
    pub circuit_breaker: Option<ir::CircuitBreaker>,
    pub outlier_detection: Option<ir::OutlierDetection>,
    /// Envoy Gateway `fallback: true`.
    pub fallback: bool,
}

/// Whether a backend presents the Gateway's `spec.tls.backend.clientCertificateRef` upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GatewayCert {
    /// The backend has its own certificate, or no TLS.
    #[default]
    No,
    /// Presented when the Gateway has one (BackendTLSPolicy Services, draft and Envoy Gateway shapes).
    Optional,
    /// mTLS is required (`mode: ClientAndServer` without a certificate of its own): without the
    /// Gateway's certificate the backend cannot be reached from that Gateway.
    Required,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PortChoice {
    pub port: u16,
    pub discovery: std::sync::Arc<ir::Discovery>,
    pub protocol: ir::UpstreamProtocol,
    pub tls: Option<std::sync::Arc<ir::UpstreamTls>>,
    /// Whether the client certificate comes from the Gateway.
    pub gateway_client_cert: GatewayCert,
    /// `protocol: TCP`: not usable from an HTTPRoute.
    pub tcp: bool,
    /// `protocol: MCP`: answers are event streams (SSE) that outlive Envoy's default 15 s route timeout.
    pub long_lived: bool,
    /// The Backend's own session persistence (GEP-1619), judged.
    pub session: Option<ir::Session>,
    /// Extra secrets this port needs (e.g. a BackendTLSPolicy CA for a Service port).
    pub secrets: SecretSet,
}

impl PortChoice {
    /// A port without TLS (callers add it).
    fn plain(port: u16, discovery: ir::Discovery, protocol: ir::UpstreamProtocol, tcp: bool) -> Self {
        Self {
            port,
            discovery: std::sync::Arc::new(discovery),
            protocol,
            tls: None,
            gateway_client_cert: GatewayCert::No,
            tcp,
            long_lived: false,
            session: None,
            secrets: SecretSet::new(),
        }
    }
}

/// A resolved backendRef: the cluster to send to and what it needs.
#[derive(Debug, Clone)]
pub struct Target {
    /// Shared with the Gateway's clusters in use, which keep it as long as a route reaches it.
    pub cluster: Arc<ir::Cluster>,
    pub secrets: SecretSet,
    pub gateway_client_cert: GatewayCert,
    /// Things the route's status should mention (e.g. EndpointSlice addresses a guardrail dropped).
    pub notes: Vec<String>,
    /// An Envoy Gateway `fallback` Backend: used only when the rule's primary backends fail.
    pub fallback: bool,
    /// The backend's answers are long-lived streams (MCP): the rule gets no default deadline.
    pub long_lived: bool,
    /// The Backend's own session persistence, used by a rule that sets none and forwards to it alone.
    pub session: Option<ir::Session>,
}

/// A backendRef as written in a route (defaults already applied by the caller).
#[derive(Debug, Clone)]
pub struct RefSpec<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub port: Option<i32>,
}

/// The Gateway whose configuration is being built: its key and its valid backend client certificate
/// (SDS name), if any.
#[derive(Debug, Clone, Copy)]
pub struct GatewaySide<'a> {
    pub key: &'a ObjectKey,
    pub client_cert: Option<&'a str>,
}

/// The route a backendRef belongs to.
#[derive(Debug, Clone, Copy)]
pub struct RouteSide<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
}

/// Every Backend object's evaluation, by kind and key.
pub type Evaluations = BTreeMap<(BackendKind, ObjectKey), Evaluated>;

/// Evaluates one Backend object; `None` when the model has none of that kind and key.
pub fn evaluate(ctx: Ctx<'_>, kind: BackendKind, key: &ObjectKey) -> Option<Evaluated> {
    let mut ev = evaluate_kind(ctx, kind, key)?;
    // Kept for the Backend's life: no spare room for more port choices or secrets than it has (a
    // pushed vector holds four).
    if let Some(usable) = &mut ev.usable {
        usable.choices.shrink_to_fit();
        super::tls::compact(&mut usable.secrets);
        usable
            .choices
            .iter_mut()
            .for_each(|c| super::tls::compact(&mut c.secrets));
    }
    Some(ev)
}

fn evaluate_kind(ctx: Ctx<'_>, kind: BackendKind, key: &ObjectKey) -> Option<Evaluated> {
    use crate::api::backend::BackendShape;
    let model = ctx.model;
    Some(match kind {
        BackendKind::XBackend => {
            let xb = model.xbackends.get(key)?;
            gep::evaluate(ctx, "xbackend", key, &xb.spec, xb.metadata.generation.unwrap_or(0))
        }
        BackendKind::Backend => {
            let b = model.backends.get(key)?;
            let g = b.metadata.generation.unwrap_or(0);
            match &b.spec {
                BackendShape::Gep(spec) => gep::evaluate(ctx, "backend", key, spec, g),
                BackendShape::Draft(spec) => draft::evaluate(ctx, key, spec, g),
            }
        }
        BackendKind::EgBackend => {
            let b = model.eg_backends.get(key)?;
            eg::evaluate(ctx, key, &b.spec, b.metadata.generation.unwrap_or(0))
        }
        BackendKind::Service => return None,
    })
}

pub fn kind_name(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Service => "Service",
        BackendKind::XBackend => "XBackend",
        BackendKind::Backend => "Backend",
        BackendKind::EgBackend => "Backend.gateway.envoyproxy.io",
    }
}

/// "a" or "an" before a kind name (an HTTPRoute, an XBackend, a Backend).
pub(crate) fn article(word: &str) -> &'static str {
    let vowel_sound = word.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u'])
        || word.starts_with("HTTP")
        || word.starts_with('X');
    if vowel_sound { "an" } else { "a" }
}
