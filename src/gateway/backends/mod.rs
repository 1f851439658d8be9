//! backendRef → cluster. Each Backend kind is evaluated once per translation into an [`Evaluated`]:
//! the problems that go on its own status, and — if it is usable — one [`PortChoice`] per port it
//! serves. A route's backendRef then only selects a port and checks route-level rules (kind, namespace,
//! ReferenceGrant, protocol). Clusters are named by identity in `ir::names`, so every route that
//! uses the same backend port shares one cluster.
//!
//! Must not touch: listeners, routes, or anything Envoy-specific beyond the IR.

use std::collections::{BTreeMap, BTreeSet};

use super::backend_tls::PolicyIndex;
use super::conditions::{self, Condition, Problem, reason};
use super::tls::SecretSet;
use crate::api::consts::{
    CORE_GROUP, EG_GROUP, GATEWAY_GROUP, KIND_BACKEND, KIND_SERVICE, KIND_XBACKEND, X_GATEWAY_GROUP,
};
use crate::ir;
use crate::ir::names::{self, BackendKind};
use crate::model::{Model, ObjectKey};
use crate::options::Options;

mod draft;
mod eg;
mod endpoints;
mod gep;
mod service;

/// What the translator needs from its surroundings while evaluating backends.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub model: &'a Model,
    pub opts: &'a Options,
}

/// The result of evaluating one Backend object.
#[derive(Debug, Default)]
pub struct Evaluated {
    pub generation: i64,
    /// Problems for the object's own status (Accepted / ResolvedRefs).
    pub problems: Vec<Problem>,
    /// Draft `spec.destination` shape.
    pub deprecated: bool,
    /// Informational notes appended to the Accepted message (e.g. endpoints skipped).
    pub notes: Vec<String>,
    pub usable: Option<Usable>,
}

/// Everything needed to build a cluster for any port of a usable backend.
#[derive(Debug, Default, Clone)]
pub struct Usable {
    pub choices: Vec<PortChoice>,
    /// Envoy Gateway Backends carry ports on their endpoints: one cluster whatever the ref's port.
    pub any_port: bool,
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

#[derive(Debug, Clone)]
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

pub struct Backends<'a> {
    ctx: Ctx<'a>,
    pub policies: PolicyIndex,
    evaluated: BTreeMap<(BackendKind, ObjectKey), Evaluated>,
    /// Gateways that reference each Backend object (for `status.parents`) and each Service.
    pub referenced_by: BTreeMap<(BackendKind, ObjectKey), BTreeSet<ObjectKey>>,
    /// Problems of a Backend that hold for one Gateway only (a required client certificate the
    /// Gateway does not have), keyed by (kind, Backend, Gateway).
    pub parent_problems: BTreeMap<(BackendKind, ObjectKey, ObjectKey), Problem>,
}

impl<'a> Backends<'a> {
    pub fn new(ctx: Ctx<'a>) -> Self {
        let policies = PolicyIndex::build(ctx);
        let mut evaluated = BTreeMap::new();
        for (key, xb) in &ctx.model.xbackends {
            let g = xb.metadata.generation.unwrap_or(0);
            evaluated.insert(
                (BackendKind::XBackend, key.clone()),
                gep::evaluate(ctx, "xbackend", key, &xb.spec, g),
            );
        }
        for (key, b) in &ctx.model.backends {
            let g = b.metadata.generation.unwrap_or(0);
            let ev = match &b.spec {
                crate::api::backend::BackendShape::Gep(spec) => gep::evaluate(ctx, "backend", key, spec, g),
                crate::api::backend::BackendShape::Draft(spec) => draft::evaluate(ctx, key, spec, g),
            };
            evaluated.insert((BackendKind::Backend, key.clone()), ev);
        }
        for (key, b) in &ctx.model.eg_backends {
            let g = b.metadata.generation.unwrap_or(0);
            evaluated.insert(
                (BackendKind::EgBackend, key.clone()),
                eg::evaluate(ctx, key, &b.spec, g),
            );
        }
        Self {
            ctx,
            policies,
            evaluated,
            referenced_by: BTreeMap::new(),
            parent_problems: BTreeMap::new(),
        }
    }

    /// Resolves one backendRef of a route attached to `gateway`.
    /// `Ok(None)`: the reference is fine but its target may not carry traffic (a Service port whose
    /// BackendTLSPolicy is invalid); its share gets a 5xx and the policy's status says why.
    pub fn resolve(
        &mut self,
        route: RouteSide<'_>,
        r: &RefSpec<'_>,
        gw: GatewaySide<'_>,
    ) -> Result<Option<Target>, Problem> {
        let mut target = self.resolve_target(route, r, gw.key)?;
        if let Some(t) = target.as_mut() {
            self.apply_gateway_cert(t, r, gw)?;
        }
        Ok(target)
    }

    /// Puts the Gateway's client certificate on a target that takes it; refuses a target that
    /// requires one when the Gateway has none.
    fn apply_gateway_cert(&mut self, t: &mut Target, r: &RefSpec<'_>, gw: GatewaySide<'_>) -> Result<(), Problem> {
        let Some(tls) = t.cluster.tls.as_mut() else {
            return Ok(());
        };
        match (t.gateway_client_cert, gw.client_cert) {
            (GatewayCert::No, _) => Ok(()),
            (_, Some(cert)) => {
                tls.client_certificate = Some(cert.to_string());
                Ok(())
            }
            (GatewayCert::Optional, None) => Ok(()),
            (GatewayCert::Required, None) => {
                let msg = format!(
                    "{} {}/{}: tls.mode ClientAndServer needs a client certificate, but it sets no clientCertificateRef and Gateway {} has no valid spec.tls.backend.clientCertificateRef",
                    r.kind, r.namespace, r.name, gw.key
                );
                let kind = match (r.group, r.kind) {
                    (X_GATEWAY_GROUP, KIND_XBACKEND) => BackendKind::XBackend,
                    _ => BackendKind::Backend,
                };
                let key = (kind, ObjectKey::new(r.namespace, r.name), gw.key.clone());
                self.parent_problems
                    .insert(key, Problem::refs(reason::INVALID_CLIENT_CERTIFICATE_REF, msg.clone()));
                Err(Problem::refs(reason::INVALID_BACKEND, msg))
            }
        }
    }

    fn resolve_target(
        &mut self,
        route: RouteSide<'_>,
        r: &RefSpec<'_>,
        gateway: &ObjectKey,
    ) -> Result<Option<Target>, Problem> {
        let kind = match (r.group, r.kind) {
            (CORE_GROUP, KIND_SERVICE) => BackendKind::Service,
            (X_GATEWAY_GROUP, KIND_XBACKEND) => BackendKind::XBackend,
            (GATEWAY_GROUP, KIND_BACKEND) => BackendKind::Backend,
            (EG_GROUP, KIND_BACKEND) => BackendKind::EgBackend,
            _ => {
                let g = if r.group.is_empty() { "core" } else { r.group };
                return Err(Problem::refs(
                    reason::INVALID_KIND,
                    format!(
                        "backendRef {g}/{} {:?}: unsupported kind; pier routes to core Service, {X_GATEWAY_GROUP}/XBackend, {GATEWAY_GROUP}/Backend and {EG_GROUP}/Backend",
                        r.kind, r.name
                    ),
                ));
            }
        };
        let key = ObjectKey::new(r.namespace, r.name);
        let what = format!("{} {key}", r.kind);
        // The GEP requires a Backend to live in the route's namespace; a ReferenceGrant does not
        // override that. Services and Envoy Gateway Backends follow ReferenceGrant.
        if matches!(kind, BackendKind::XBackend | BackendKind::Backend) && r.namespace != route.namespace {
            return Err(Problem::refs(
                reason::REF_NOT_PERMITTED,
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
        if !super::refs::permitted(self.ctx.model, from, to) {
            return Err(Problem::refs(
                reason::REF_NOT_PERMITTED,
                format!(
                    "{what}: cross-namespace reference from {} {} needs a ReferenceGrant in namespace {}",
                    route.kind, route.namespace, r.namespace
                ),
            ));
        }
        if kind == BackendKind::Service {
            self.referenced_by
                .entry((kind, key.clone()))
                .or_default()
                .insert(gateway.clone());
            return service::resolve(self.ctx, &self.policies, &key, r.port);
        }
        let Some(ev) = self.evaluated.get(&(kind, key.clone())) else {
            return Err(Problem::refs(reason::BACKEND_NOT_FOUND, format!("{what} not found")));
        };
        self.referenced_by
            .entry((kind, key.clone()))
            .or_default()
            .insert(gateway.clone());
        let Some(usable) = &ev.usable else {
            let why = ev
                .problems
                .iter()
                .map(|p| format!("{}: {}", p.reason, p.message))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(Problem::refs(
                reason::INVALID_BACKEND,
                format!("{what} is not accepted: {why}"),
            ));
        };
        let choice = select_port(usable, r.port)
            .map_err(|m| Problem::refs(reason::BACKEND_NOT_FOUND, format!("{what}: {m}")))?;
        let name = match kind {
            BackendKind::EgBackend => names::eg_backend_cluster(r.namespace, r.name),
            _ => names::cluster(kind, r.namespace, r.name, choice.port),
        };
        if choice.tcp && route.kind != "TCPRoute" {
            return Err(Problem::refs(
                reason::UNSUPPORTED_PROTOCOL,
                format!(
                    "{what} speaks TCP, which {} {} cannot carry",
                    article(route.kind),
                    route.kind
                ),
            ));
        }
        Ok(Some(target(kind, &key, name, usable, choice)))
    }

    /// Status conditions of every evaluated Backend object.
    pub fn object_conditions(&self) -> impl Iterator<Item = (BackendKind, &ObjectKey, Vec<Condition>)> {
        self.evaluated
            .iter()
            .map(|((kind, key), ev)| (*kind, key, conditions_of(ev, None)))
    }

    /// Status conditions of a Backend object as seen from one Gateway (its `status.parents` entry).
    pub fn parent_conditions(&self, kind: BackendKind, key: &ObjectKey, gateway: &ObjectKey) -> Vec<Condition> {
        let extra = self.parent_problems.get(&(kind, key.clone(), gateway.clone()));
        self.evaluated
            .get(&(kind, key.clone()))
            .map(|ev| conditions_of(ev, extra))
            .unwrap_or_default()
    }
}

fn select_port(usable: &Usable, port: Option<i32>) -> Result<&PortChoice, String> {
    if usable.any_port || port.is_none() {
        return match usable.choices.as_slice() {
            [one] => Ok(one),
            [] => Err("has no ports".into()),
            many if usable.any_port => Ok(&many[0]),
            many => Err(format!(
                "serves several ports ({}); the backendRef must name one",
                many.iter().map(|c| c.port.to_string()).collect::<Vec<_>>().join(", ")
            )),
        };
    }
    let want = port.expect("checked");
    usable
        .choices
        .iter()
        .find(|c| i32::from(c.port) == want)
        .ok_or_else(|| {
            format!(
                "has no port {want} (it serves {})",
                usable
                    .choices
                    .iter()
                    .map(|c| c.port.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
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

/// Accepted / ResolvedRefs (and Deprecated) from an evaluation. The first problem of each type wins
/// the reason; every message is kept.
fn conditions_of(ev: &Evaluated, extra: Option<&Problem>) -> Vec<Condition> {
    let g = ev.generation;
    let problems: Vec<Problem> = ev.problems.iter().chain(extra).cloned().collect();
    let usable = ev.usable.is_some() && extra.is_none();
    let pick = |ty: &'static str| problems.iter().filter(move |p| p.type_ == ty);
    let join = |ps: Vec<&Problem>| ps.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ");
    let refs: Vec<&Problem> = pick(conditions::RESOLVED_REFS).collect();
    let accepted: Vec<&Problem> = pick(conditions::ACCEPTED).collect();
    let mut out = Vec::new();
    let notes = if ev.notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", ev.notes.join("; "))
    };
    out.push(match (accepted.first(), usable, refs.first()) {
        (Some(p), _, _) => Condition::fail(conditions::ACCEPTED, p.reason, join(accepted.clone()), g),
        (None, false, Some(_)) => Condition::fail(
            conditions::ACCEPTED,
            reason::UNRESOLVED_REFS,
            format!("references did not resolve: {}", join(refs.clone())),
            g,
        ),
        _ => Condition::ok(
            conditions::ACCEPTED,
            reason::ACCEPTED,
            format!("Backend accepted{notes}"),
            g,
        ),
    });
    out.push(match refs.first() {
        Some(p) => Condition::fail(conditions::RESOLVED_REFS, p.reason, join(refs.clone()), g),
        None => Condition::ok(
            conditions::RESOLVED_REFS,
            reason::RESOLVED_REFS,
            "All references resolved",
            g,
        ),
    });
    if ev.deprecated {
        out.push(Condition::ok(
            conditions::DEPRECATED,
            reason::DRAFT_SHAPE,
            "spec.destination is the draft Backend shape; write the GEP-4488 shape (spec.type, spec.port, spec.externalHostname, spec.tls) instead",
            g,
        ));
    }
    out
}

/// "a" or "an" before a kind name (an HTTPRoute, an XBackend, a Backend).
pub(crate) fn article(word: &str) -> &'static str {
    let vowel_sound = word.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u'])
        || word.starts_with("HTTP")
        || word.starts_with('X');
    if vowel_sound { "an" } else { "a" }
}

/// Port numbers in objects are i32; Envoy wants u16 in 1..=65535.
pub(super) fn port_u16(p: i32) -> Option<u16> {
    u16::try_from(p).ok().filter(|p| *p != 0)
}
