//! A route's backendRef → what it reaches: [`Backends`] resolves each reference against the Backends
//! the engine keeps evaluated (`super::evaluate`, redone only when its inputs change), checks the route-level rules (kind,
//! namespace, ReferenceGrant, port, the Gateway's client certificate) and names the cluster; what each
//! route reached is kept per route ([`Reached`]) and summed per Gateway ([`References`]) for statuses.

use super::*;

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
    /// The Gateways referencing each, with how many of the routes attached there reach it; nearly
    /// always one Gateway, so a sorted vector rather than a tree node.
    pub referenced_by: BTreeMap<(BackendKind, ObjectKey), litemap::LiteMap<ObjectKey, usize>>,
    pub parent_problems: BTreeMap<(BackendKind, ObjectKey, ObjectKey), BackendProblem>,
}

impl References {
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
            let message = self.ctx.model.not_found(model_kind(kind), &what);
            return Err(Problem::refs(RouteReason::BackendNotFound, message));
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
        if kind == BackendKind::EgBackend {
            super::service::policies_readable(self.ctx, &what)?;
        }
        let mut t = target(kind, &key, name, usable, choice, self.ctx.opts.connect_timeout_ms);
        match crate::gateway::backend_tls::to_backend(self.policies, kind, &key, &mut t)? {
            crate::gateway::backend_tls::Applied::Serve => Ok(Some(t)),
            crate::gateway::backend_tls::Applied::FailClosed => Ok(None),
        }
    }

    /// The evaluation of one Backend object (a recorded read of it, for the incremental translator).
    pub fn evaluation(&self, kind: BackendKind, key: &ObjectKey) -> Option<&Evaluated> {
        crate::model::objects::record(|| crate::model::objects::Read::Derived(kind.prefix(), key.clone()));
        self.evaluated.get(&(kind, key.clone()))
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
    // The target was built for this route alone, so this never copies the cluster; its TLS is shared
    // with the Backend's evaluation, and is copied when the Gateway's certificate goes in.
    let Some(tls) = Arc::make_mut(&mut t.cluster).tls.as_mut() else {
        return Ok(());
    };
    match (t.gateway_client_cert, gw.client_cert) {
        (GatewayCert::No, _) | (GatewayCert::Optional, None) => Ok(()),
        (_, Some(cert)) => {
            Arc::make_mut(tls).client_certificate = Some(cert.to_string());
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
    let from = crate::gateway::refs::RefEnd {
        group: route.group,
        kind: route.kind,
        namespace: route.namespace,
        name: "",
    };
    let to = crate::gateway::refs::RefEnd {
        group: r.group,
        kind: r.kind,
        namespace: r.namespace,
        name: r.name,
    };
    if !crate::gateway::refs::permitted(model, from, to) {
        return Err(Problem::refs(
            RouteReason::RefNotPermitted,
            format!(
                "{what}: cross-namespace reference from {} {} needs a ReferenceGrant in namespace {}{}",
                route.kind,
                route.namespace,
                r.namespace,
                model.grants_note()
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

pub(in crate::gateway) fn target(
    kind: BackendKind,
    key: &ObjectKey,
    name: String,
    usable: &Usable,
    c: &PortChoice,
    connect_timeout_ms: u64,
) -> Target {
    let mut secrets = usable.secrets.clone();
    secrets.extend(c.secrets.clone());
    Target {
        cluster: Arc::new(ir::Cluster {
            name: name.into(),
            origin: ir::Origin {
                kind: kind_name(kind),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                port: c.port,
            },
            discovery: c.discovery.clone(),
            protocol: c.protocol,
            tls: c.tls.clone(),
            circuit_breaker: usable.circuit_breaker.clone(),
            outlier_detection: usable.outlier_detection.clone(),
            connect_timeout_ms,
        }),
        secrets,
        gateway_client_cert: c.gateway_client_cert,
        notes: Vec::new(),
        fallback: usable.fallback,
        long_lived: c.long_lived,
        session: c.session.clone(),
    }
}

/// An aggregate cluster that tries `members` in order (the first is `primary`'s own cluster).
pub fn aggregate(primary: &Target, members: Vec<String>) -> Target {
    Target {
        cluster: Arc::new(ir::Cluster {
            name: names::failover_cluster(&members).into(),
            origin: primary.cluster.origin.clone(),
            discovery: Arc::new(ir::Discovery::Aggregate { clusters: members }),
            protocol: primary.cluster.protocol,
            tls: None,
            circuit_breaker: None,
            outlier_detection: None,
            connect_timeout_ms: primary.cluster.connect_timeout_ms,
        }),
        secrets: SecretSet::new(),
        gateway_client_cert: GatewayCert::No,
        notes: Vec::new(),
        fallback: false,
        long_lived: primary.long_lived,
        session: primary.session.clone(),
    }
}

/// The model kind a backendRef of `kind` reads.
fn model_kind(kind: BackendKind) -> crate::model::Kind {
    use crate::model::Kind;
    match kind {
        BackendKind::Service => Kind::Service,
        BackendKind::XBackend => Kind::XBackend,
        BackendKind::Backend => Kind::Backend,
        BackendKind::EgBackend => Kind::EgBackend,
    }
}
