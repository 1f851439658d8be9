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

use std::collections::{BTreeMap, BTreeSet};

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
pub mod resolved;
mod service;
pub mod verdict;

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
    pub discovery: ir::Discovery,
    pub protocol: ir::UpstreamProtocol,
    pub tls: Option<ir::UpstreamTls>,
    /// Whether the client certificate comes from the Gateway.
    pub gateway_client_cert: GatewayCert,
    /// `protocol: TCP`: not usable from an HTTPRoute.
    pub tcp: bool,
    /// Extra secrets this port needs (e.g. a BackendTLSPolicy CA for a Service port).
    pub secrets: SecretSet,
}

impl PortChoice {
    /// A port without TLS (callers add it).
    fn plain(port: u16, discovery: ir::Discovery, protocol: ir::UpstreamProtocol, tcp: bool) -> Self {
        Self {
            port,
            discovery,
            protocol,
            tls: None,
            gateway_client_cert: GatewayCert::No,
            tcp,
            secrets: SecretSet::new(),
        }
    }
}

/// A resolved backendRef: the cluster to send to and what it needs.
#[derive(Debug, Clone)]
pub struct Target {
    pub cluster: ir::Cluster,
    pub secrets: SecretSet,
    pub gateway_client_cert: GatewayCert,
    /// Things the route's status should mention (e.g. EndpointSlice addresses a guardrail dropped).
    pub notes: Vec<String>,
    /// An Envoy Gateway `fallback` Backend: used only when the rule's primary backends fail.
    pub fallback: bool,
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

/// Evaluates every Backend object of the model.
pub fn evaluate_all(ctx: Ctx<'_>) -> Evaluations {
    let mut out = Evaluations::new();
    for kind in [BackendKind::XBackend, BackendKind::Backend, BackendKind::EgBackend] {
        for key in backend_keys(ctx.model, kind) {
            if let Some(ev) = evaluate(ctx, kind, &key) {
                out.insert((kind, key), ev);
            }
        }
    }
    out
}

/// The keys of the Backend objects of `kind` (none for Services).
pub fn backend_keys(model: &Model, kind: BackendKind) -> Vec<ObjectKey> {
    match kind {
        BackendKind::XBackend => model.xbackends.keys().cloned().collect(),
        BackendKind::Backend => model.backends.keys().cloned().collect(),
        BackendKind::EgBackend => model.eg_backends.keys().cloned().collect(),
        BackendKind::Service => Vec::new(),
    }
}

/// Evaluates one Backend object; `None` when the model has none of that kind and key.
pub fn evaluate(ctx: Ctx<'_>, kind: BackendKind, key: &ObjectKey) -> Option<Evaluated> {
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

/// Every Backend object evaluated once, and the BackendTLSPolicies, for one translation. Read-only while
/// routes resolve their references: what a route reaches is reported in its own [`Reached`], so one
/// route's resolution can be redone without the others'.
pub struct Backends<'a> {
    ctx: Ctx<'a>,
    pub policies: &'a PolicyIndex,
    evaluated: &'a Evaluations,
}

/// What resolving one route's references reached: the backends it referenced (for their
/// `status.parents` and the policies' ancestors) and problems a Backend has for this Gateway only (a
/// required client certificate the Gateway does not have).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reached {
    pub refs: Vec<(BackendKind, ObjectKey)>,
    pub parent_problems: Vec<((BackendKind, ObjectKey), BackendProblem)>,
}

/// Who references what, over every route of every Gateway: the Gateways that reference each Backend
/// object and each Service, and the per-Gateway problems of Backends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct References {
    pub referenced_by: BTreeMap<(BackendKind, ObjectKey), BTreeSet<ObjectKey>>,
    pub parent_problems: BTreeMap<(BackendKind, ObjectKey, ObjectKey), BackendProblem>,
}

impl References {
    /// Adds what a route attached to `gateway` reached.
    pub fn add(&mut self, gateway: &ObjectKey, reached: &Reached) {
        for r in &reached.refs {
            self.referenced_by.entry(r.clone()).or_default().insert(gateway.clone());
        }
        for ((kind, key), p) in &reached.parent_problems {
            self.parent_problems
                .insert((*kind, key.clone(), gateway.clone()), p.clone());
        }
    }

    /// The problem a Backend has for one Gateway only, if any.
    pub fn parent_problem(&self, kind: BackendKind, key: &ObjectKey, gateway: &ObjectKey) -> Option<&BackendProblem> {
        self.parent_problems.get(&(kind, key.clone(), gateway.clone()))
    }
}

impl<'a> Backends<'a> {
    pub fn new(ctx: Ctx<'a>, policies: &'a PolicyIndex, evaluated: &'a Evaluations) -> Self {
        Self {
            ctx,
            policies,
            evaluated,
        }
    }

    /// Resolves one backendRef of a route attached to `gateway`; what it reached goes to `reached`.
    /// `Ok(None)`: the reference is fine but its target may not carry traffic (a Service port whose
    /// BackendTLSPolicy is invalid); its share gets a 5xx and the policy's status says why.
    pub fn resolve(
        &self,
        route: RouteSide<'_>,
        r: &RefSpec<'_>,
        gw: GatewaySide<'_>,
        reached: &mut Reached,
    ) -> Result<Option<Target>, RouteProblem> {
        let mut target = self.resolve_target(route, r, reached)?;
        if let Some(t) = target.as_mut() {
            apply_gateway_cert(t, r, gw, reached)?;
        }
        Ok(target)
    }

    fn resolve_target(
        &self,
        route: RouteSide<'_>,
        r: &RefSpec<'_>,
        reached: &mut Reached,
    ) -> Result<Option<Target>, RouteProblem> {
        let kind = backend_kind(r)?;
        permitted(self.ctx.model, route, r, kind)?;
        let key = ObjectKey::new(r.namespace, r.name);
        if kind == BackendKind::Service {
            reached.refs.push((kind, key.clone()));
            return service::resolve(self.ctx, self.policies, &key, r.port);
        }
        let what = format!("{} {key}", r.kind);
        let Some(ev) = self.evaluation(kind, &key) else {
            return Err(Problem::refs(RouteReason::BackendNotFound, format!("{what} not found")));
        };
        reached.refs.push((kind, key.clone()));
        let usable = ev.usable.as_ref().ok_or_else(|| not_accepted(&what, ev))?;
        if let (true, Some(p)) = (usable.ref_port_prohibited, r.port) {
            return Err(Problem::refs(
                RouteReason::UnsupportedValue,
                format!(
                    "{what}: backendRef.port ({p}) must not be set; the port is the {}'s spec.port.number",
                    r.kind
                ),
            ));
        }
        let choice = select_port(usable, r.port)
            .map_err(|m| Problem::refs(RouteReason::BackendNotFound, format!("{what}: {m}")))?;
        if choice.tcp && route.kind != "TCPRoute" {
            return Err(Problem::refs(
                RouteReason::UnsupportedProtocol,
                format!(
                    "{what} speaks TCP, which {} {} cannot carry",
                    article(route.kind),
                    route.kind
                ),
            ));
        }
        let name = match kind {
            BackendKind::EgBackend => names::eg_backend_cluster(r.namespace, r.name),
            _ => names::cluster(kind, r.namespace, r.name, choice.port),
        };
        let mut t = target(kind, &key, name, usable, choice);
        match super::backend_tls::to_backend(self.policies, kind, &key, &mut t)? {
            super::backend_tls::Applied::Serve => Ok(Some(t)),
            super::backend_tls::Applied::FailClosed => Ok(None),
        }
    }

    /// The evaluation of one Backend object (a recorded read of it, for the incremental translator).
    pub fn evaluation(&self, kind: BackendKind, key: &ObjectKey) -> Option<&Evaluated> {
        crate::model::objects::record(|| crate::model::objects::Read::Derived(kind.prefix(), key.clone()));
        self.evaluated.get(&(kind, key.clone()))
    }

    /// Every evaluated Backend object.
    pub fn evaluated(&self) -> impl Iterator<Item = (BackendKind, &ObjectKey, &Evaluated)> {
        self.evaluated.iter().map(|((kind, key), ev)| (*kind, key, ev))
    }
}

/// Puts the Gateway's client certificate on a target that takes it; refuses a target that requires one
/// when the Gateway has none (and reports it as the Backend's problem with this Gateway).
fn apply_gateway_cert(
    t: &mut Target,
    r: &RefSpec<'_>,
    gw: GatewaySide<'_>,
    reached: &mut Reached,
) -> Result<(), RouteProblem> {
    let Some(tls) = t.cluster.tls.as_mut() else {
        return Ok(());
    };
    match (t.gateway_client_cert, gw.client_cert) {
        (GatewayCert::No, _) | (GatewayCert::Optional, None) => Ok(()),
        (_, Some(cert)) => {
            tls.client_certificate = Some(cert.to_string());
            Ok(())
        }
        (GatewayCert::Required, None) => {
            let msg = format!(
                "{} {}/{}: tls.mode ClientAndServer needs a client certificate, but it sets no clientCertificateRef and Gateway {} has no valid spec.tls.backend.clientCertificateRef",
                r.kind, r.namespace, r.name, gw.key
            );
            let kind = match (r.group, r.kind) {
                (X_GATEWAY_GROUP, KIND_XBACKEND) => BackendKind::XBackend,
                _ => BackendKind::Backend,
            };
            let backend_side = Problem::refs(BackendReason::InvalidClientCertificateRef, msg.clone());
            reached
                .parent_problems
                .push(((kind, ObjectKey::new(r.namespace, r.name)), backend_side));
            Err(Problem::refs(RouteReason::InvalidBackend, msg))
        }
    }
}

/// The kind a backendRef names, if pier routes to it.
fn backend_kind(r: &RefSpec<'_>) -> Result<BackendKind, RouteProblem> {
    match (r.group, r.kind) {
        (CORE_GROUP, KIND_SERVICE) => Ok(BackendKind::Service),
        (X_GATEWAY_GROUP, KIND_XBACKEND) => Ok(BackendKind::XBackend),
        (GATEWAY_GROUP, KIND_BACKEND) => Ok(BackendKind::Backend),
        (EG_GROUP, KIND_BACKEND) => Ok(BackendKind::EgBackend),
        _ => {
            let g = if r.group.is_empty() { "core" } else { r.group };
            Err(Problem::refs(
                RouteReason::InvalidKind,
                format!(
                    "backendRef {g}/{} {:?}: unsupported kind; pier routes to core Service, {X_GATEWAY_GROUP}/XBackend, {GATEWAY_GROUP}/Backend and {EG_GROUP}/Backend",
                    r.kind, r.name
                ),
            ))
        }
    }
}

/// May the route reference this object? The GEP requires a Backend to live in the route's namespace (a
/// ReferenceGrant does not override that); Services and Envoy Gateway Backends follow ReferenceGrant.
fn permitted(model: &Model, route: RouteSide<'_>, r: &RefSpec<'_>, kind: BackendKind) -> Result<(), RouteProblem> {
    let what = format!("{} {}/{}", r.kind, r.namespace, r.name);
    if matches!(kind, BackendKind::XBackend | BackendKind::Backend) && r.namespace != route.namespace {
        return Err(Problem::refs(
            RouteReason::RefNotPermitted,
            format!(
                "{what}: {} {} must be in the same namespace as the {} that references it ({}); ReferenceGrant does not apply",
                article(r.kind),
                r.kind,
                route.kind,
                route.namespace
            ),
        ));
    }
    let from = super::refs::RefEnd {
        group: route.group,
        kind: route.kind,
        namespace: route.namespace,
        name: "",
    };
    let to = super::refs::RefEnd {
        group: r.group,
        kind: r.kind,
        namespace: r.namespace,
        name: r.name,
    };
    if !super::refs::permitted(model, from, to) {
        return Err(Problem::refs(
            RouteReason::RefNotPermitted,
            format!(
                "{what}: cross-namespace reference from {} {} needs a ReferenceGrant in namespace {}",
                route.kind, route.namespace, r.namespace
            ),
        ));
    }
    Ok(())
}

/// The route-side problem of referencing a Backend that is not accepted: its own problems, repeated.
fn not_accepted(what: &str, ev: &Evaluated) -> RouteProblem {
    let why = ev
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.reason, p.message))
        .collect::<Vec<_>>()
        .join("; ");
    Problem::refs(RouteReason::InvalidBackend, format!("{what} is not accepted: {why}"))
}

fn select_port(usable: &Usable, port: Option<i32>) -> Result<&PortChoice, String> {
    let listed = || {
        usable
            .choices
            .iter()
            .map(|c| c.port.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(want) = port.filter(|_| !usable.any_port) else {
        return match usable.choices.as_slice() {
            [one] => Ok(one),
            [] => Err("has no ports".into()),
            many if usable.any_port => Ok(&many[0]),
            _ => Err(format!(
                "serves several ports ({}); the backendRef must name one",
                listed()
            )),
        };
    };
    usable
        .choices
        .iter()
        .find(|c| i32::from(c.port) == want)
        .ok_or_else(|| format!("has no port {want} (it serves {})", listed()))
}

pub(super) fn target(kind: BackendKind, key: &ObjectKey, name: String, usable: &Usable, c: &PortChoice) -> Target {
    let mut secrets = usable.secrets.clone();
    secrets.extend(c.secrets.clone());
    Target {
        cluster: ir::Cluster {
            name,
            origin: ir::Origin {
                kind: kind_name(kind).to_string(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                port: c.port,
            },
            discovery: c.discovery.clone(),
            protocol: c.protocol,
            tls: c.tls.clone(),
            circuit_breaker: usable.circuit_breaker.clone(),
            outlier_detection: usable.outlier_detection.clone(),
        },
        secrets,
        gateway_client_cert: c.gateway_client_cert,
        notes: Vec::new(),
        fallback: usable.fallback,
    }
}

/// An aggregate cluster that tries `members` in order (the first is `primary`'s own cluster).
pub fn aggregate(primary: &Target, members: Vec<String>) -> Target {
    Target {
        cluster: ir::Cluster {
            name: names::failover_cluster(&members),
            origin: primary.cluster.origin.clone(),
            discovery: ir::Discovery::Aggregate { clusters: members },
            protocol: primary.cluster.protocol,
            tls: None,
            circuit_breaker: None,
            outlier_detection: None,
        },
        secrets: SecretSet::new(),
        gateway_client_cert: GatewayCert::No,
        notes: Vec::new(),
        fallback: false,
    }
}

pub fn kind_name(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Service => "Service",
        BackendKind::XBackend => "XBackend",
        BackendKind::Backend => "Backend",
        BackendKind::EgBackend => "Backend.gateway.envoyproxy.io",
    }
}

pub use verdict::conditions_of;

/// "a" or "an" before a kind name (an HTTPRoute, an XBackend, a Backend).
pub(crate) fn article(word: &str) -> &'static str {
    let vowel_sound = word.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u'])
        || word.starts_with("HTTP")
        || word.starts_with('X');
    if vowel_sound { "an" } else { "a" }
}
