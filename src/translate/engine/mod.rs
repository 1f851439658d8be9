//! The incremental translator: [`Engine::update`] takes the next model and redoes only the work whose
//! inputs changed, keeping every Gateway's Envoy resources packed and versioned ([`GatewayOut`])
//! and every status current. It is the only orchestration of the translator: [`translate`](super::translate)
//! (the goldens, the fuzz targets) is this engine run once from the empty model (`pier translate` runs it
//! as [`Engine::once`], without the dependency index only later updates read), and a
//! property test (`tests/golden/engine.rs`) holds every update equal to a rebuild, resources, statuses and
//! versions alike, after every step of random edit sequences.
//!
//! # Design: an explicit memo and a dependency index of recorded reads
//!
//! The units of work are pure functions of `gateway`, its façade for the engine: one
//! BackendTLSPolicy's verdict, one Backend's evaluation, one Gateway's base (listeners, certificates) and
//! one route's attachment to one Gateway (`gateway::routes::attach`). Each runs under
//! `model::objects::track`, which records every object, namespace, kind and EndpointSlice set it reads
//! from the model, and every derived result (an evaluation, the policy of a Service) it consults. The
//! [`deps::DepIndex`] inverts those reads, so a model diff (`imbl` maps compare in time proportional to
//! what differs) names exactly the units to redo. A redone route replaces its old contribution to its
//! Gateway ([`gateway::GatewayState`]), which rebuilds only the virtual hosts, route configurations,
//! clusters, load assignments, secrets and listeners that contribution touched, and packs each changed
//! resource once with its content version.
//!
//! Where units are independent — the routes of a Gateway on which no route's hostnames can refuse
//! another's, and the packing of the clusters a flush touched — a large batch of them runs on every core
//! ([`crate::par`]) and their results are applied in order, as one thread would apply them. The recorder
//! is per thread and each unit runs under its own `track`, so the dependency index is the same. A
//! Gateway's rebuild or a first translation has such batches; an update of a few routes stays on the
//! caller's thread.
//!
//! The memo keeps what a later update reads, not everything a build saw: of a route, its place, its
//! generation and the Gateways it names (`Known`), and the result of its attachment; its spec is read
//! from the model again when it attaches (a few KiB a route, most of it rules, that the results already
//! say). Results kept for the engine's life carry no spare vector capacity; maps that are nearly always
//! one entry (a hostname's routes when each route has its own, the units that read one object) hold it
//! inline ([`Few`](crate::ir::few::Few)), and a route's cluster is one `Arc` shared with its Gateway's
//! clusters in use.
//!
//! `salsa` was the alternative. It wants every input and intermediate value `Eq + Hash` and owned by
//! its database, but the Gateway API and Kubernetes types come from generated crates that are neither,
//! so the model would have to be mirrored into salsa inputs, and the translator's functions rewritten
//! as queries over them — two representations of the model, and the translator's units no longer plain
//! functions a test can call. Recorded reads get the same precision (no dependency is declared
//! by hand, so none can be forgotten) with the translator's own functions unchanged, and the memo is
//! plain data the engine owns: a few maps, no framework, no global revision to reason about.
//!
//! What is not incremental, on purpose: a change to a Gateway object, to its listeners or to what its
//! listeners resolve rebuilds that Gateway (every route attaches anew); so does any change on a
//! Gateway where HTTPRoutes and GRPCRoutes both attach, since one route's hostnames can then refuse
//! another; a GatewayClass change re-reads the classes.
//! All of those are rare next to route, Backend, Service and endpoint changes.

pub mod check;
pub mod counted;
mod deps;
mod gateway;
mod gateways;
mod hosts;
mod known;
mod once;
mod status;
mod statuses;

pub use crate::snapshot::StatusSet;

use std::collections::{BTreeMap, BTreeSet};

use crate::snapshot::{self, GatewayOut};
use deps::{Changes, DepIndex, Unit};
use gateway::GatewayState;
use known::Known;
use status::{RefCounts, Statuses};

use crate::gateway::backend_tls::{POLICY_READ, PolicyIndex};
use crate::gateway::backends::{self, Ctx, Evaluations};
use crate::gateway::spec::{self, RouteKind, RouteSpec};
use crate::ir::names::BackendKind;
use crate::model::objects::track;
use crate::model::{Kind, Model, ObjectKey};
use crate::options::Options;

/// A route, as the engine names it.
type RouteId = (RouteKind, ObjectKey);

pub struct Engine {
    opts: Options,
    model: Model,
    classes: BTreeSet<String>,
    policies: PolicyIndex,
    /// Backend (or Service) → the policies that target it, for their ancestors.
    policy_targets: BTreeMap<(BackendKind, ObjectKey), BTreeSet<ObjectKey>>,
    evaluations: Evaluations,
    deps: DepIndex,
    routes: BTreeMap<RouteId, Known>,
    /// Gateway → the routes whose parentRefs name it.
    naming: BTreeMap<ObjectKey, BTreeSet<RouteId>>,
    gateways: BTreeMap<ObjectKey, GatewayState>,
    refs: RefCounts,
    statuses: Statuses,
}

/// What one update changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Update {
    /// Gateways whose resources changed, appeared or went away.
    pub gateways: BTreeSet<ObjectKey>,
    /// Whether any status changed.
    pub statuses: bool,
}

/// The statuses an update must recompute.
#[derive(Debug, Default)]
struct Dirty {
    classes: bool,
    gateways: BTreeSet<ObjectKey>,
    routes: BTreeSet<RouteId>,
    backends: BTreeSet<(BackendKind, ObjectKey)>,
    policies: BTreeSet<ObjectKey>,
}

impl Engine {
    /// An engine over the empty model.
    pub fn new(opts: Options) -> Engine {
        Engine {
            opts,
            model: Model::default(),
            classes: BTreeSet::new(),
            policies: PolicyIndex::default(),
            policy_targets: BTreeMap::new(),
            evaluations: Evaluations::new(),
            deps: DepIndex::default(),
            routes: BTreeMap::new(),
            naming: BTreeMap::new(),
            gateways: BTreeMap::new(),
            refs: RefCounts::default(),
            statuses: Statuses::default(),
        }
    }

    /// An engine that has translated `model`.
    pub fn with(model: Model, opts: Options) -> Engine {
        let mut engine = Engine::new(opts);
        engine.update(model);
        engine
    }

    /// Moves to `model`, redoing what its differences from the current model touch.
    pub fn update(&mut self, model: Model) -> Update {
        if self.deps.is_off() {
            return self.rebuild(model);
        }
        self.apply(model)
    }

    /// [`update`](Self::update) itself, for an engine whose dependency index answers.
    fn apply(&mut self, model: Model) -> Update {
        let mut changes = Changes::between(&self.model, &model);
        self.model = model;
        let mut update = Update::default();
        if changes.is_empty() {
            return update;
        }
        let bulk = !self.deps.is_off() && changes.reads.len() >= crate::api::dense::BULK;
        let mut dirty = Dirty::default();
        if changes.touches(Kind::GatewayClass) {
            dirty.classes = true;
        }
        self.refresh_policies(&mut changes, &mut dirty);
        self.refresh_evaluations(&mut changes, &mut dirty);
        let respecced = self.refresh_specs(&changes, &mut dirty);
        self.refresh_gateways(&changes, respecced, &mut dirty, &mut update);
        update.statuses = self.refresh_statuses(dirty);
        if bulk {
            crate::api::dense::Densify::densify(self);
        }
        update
    }

    /// The model the engine last took.
    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Every pier Gateway's resources.
    pub fn gateways(&self) -> impl Iterator<Item = (&ObjectKey, &GatewayOut)> {
        self.gateways.iter().map(|(k, s)| (k, &s.out))
    }

    pub fn gateway(&self, key: &ObjectKey) -> Option<&GatewayOut> {
        self.gateways.get(key).map(|s| &s.out)
    }

    pub fn statuses(&self) -> &Statuses {
        &self.statuses
    }

    /// [`translation`](Self::translation) of an engine that is done with: what only later updates
    /// read (the model, the memo, the dependency index) is freed before the resources are decoded, so
    /// the decoded output never sits beside them (`pier translate`'s peak).
    pub fn into_translation(self) -> super::Translation {
        let (gateways, statuses) = self.into_output();
        decoded(&gateways, statuses.list())
    }

    /// A call of its own because what a destructuring leaves behind is freed only when the variable
    /// goes out of scope: here, on return, before anything is decoded.
    fn into_output(self) -> (BTreeMap<ObjectKey, GatewayState>, Statuses) {
        (self.gateways, self.statuses)
    }

    /// The engine's output as plain Envoy resources (decoded; for `translate()` and tests).
    pub fn translation(&self) -> super::Translation {
        decoded(&self.gateways, self.statuses.list())
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            model: &self.model,
            opts: &self.opts,
        }
    }

    /// Re-evaluates the BackendTLSPolicies that changed or whose inputs did, and settles the targets
    /// they contend for; the Services whose applying policy changed become derived changes.
    fn refresh_policies(&mut self, changes: &mut Changes, dirty: &mut Dirty) {
        let mut todo: BTreeSet<ObjectKey> = changes.keys(Kind::BackendTlsPolicy).cloned().collect();
        for unit in self.deps.hit(changes) {
            if let Unit::Policy(key) = unit {
                todo.insert(key);
            }
        }
        if todo.is_empty() {
            return;
        }
        let mut verdicts = Vec::new();
        for key in &todo {
            let unit = Unit::Policy(key.clone());
            let (verdict, reads) = track(|| PolicyIndex::verdict(self.ctx(), key));
            match verdict {
                Some(_) => self.deps.set(unit, reads),
                None => self.deps.forget(&unit),
            }
            for t in self.policies.verdicts.get(key).into_iter().flat_map(|v| &v.targets) {
                if let Some(set) = self.policy_targets.get_mut(t) {
                    set.remove(key);
                }
            }
            verdicts.push((key, verdict));
        }
        let result = self.policies.update(verdicts);
        for key in &todo {
            for t in self.policies.verdicts.get(key).into_iter().flat_map(|v| &v.targets) {
                self.policy_targets.entry(t.clone()).or_default().insert(key.clone());
            }
        }
        for svc in result.services {
            changes.derived(POLICY_READ, svc);
        }
        dirty.policies.extend(result.policies);
    }

    /// Re-evaluates the Backends that changed or whose inputs did; those that come out differently
    /// become derived changes.
    fn refresh_evaluations(&mut self, changes: &mut Changes, dirty: &mut Dirty) {
        let mut todo: BTreeSet<(BackendKind, ObjectKey)> = BTreeSet::new();
        for kind in [BackendKind::XBackend, BackendKind::Backend, BackendKind::EgBackend] {
            todo.extend(changes.keys(model_kind(kind)).map(|k| (kind, k.clone())));
        }
        for unit in self.deps.hit(changes) {
            if let Unit::Backend(kind, key) = unit {
                todo.insert((kind, key));
            }
        }
        for (kind, key) in todo {
            let unit = Unit::Backend(kind, key.clone());
            let (ev, reads) = track(|| backends::evaluate(self.ctx(), kind, &key));
            let id = (kind, key);
            let changed = match ev {
                Some(ev) => {
                    self.deps.set(unit, reads);
                    let changed = self.evaluations.get(&id) != Some(&ev);
                    self.evaluations.insert(id.clone(), ev);
                    changed
                }
                None => {
                    self.deps.forget(&unit);
                    self.evaluations.remove(&id).is_some()
                }
            };
            if changed {
                changes.derived(kind.prefix(), id.1.clone());
                dirty.backends.insert(id);
            }
        }
    }

    /// Re-reads the routes that changed; returns, per Gateway, the routes that named it before or name
    /// it now.
    fn refresh_specs(&mut self, changes: &Changes, dirty: &mut Dirty) -> BTreeMap<ObjectKey, BTreeSet<RouteId>> {
        let mut ids: BTreeSet<RouteId> = BTreeSet::new();
        for kind in [Kind::HttpRoute, Kind::HttpRouteExtras] {
            ids.extend(changes.keys(kind).map(|k| (RouteKind::Http, k.clone())));
        }
        ids.extend(changes.keys(Kind::GrpcRoute).map(|k| (RouteKind::Grpc, k.clone())));
        let mut per_gateway: BTreeMap<ObjectKey, BTreeSet<RouteId>> = BTreeMap::new();
        for id in ids {
            let old = match read_spec(&self.model, &id).map(|spec| Known::of(&spec)) {
                Some(known) => self.routes.insert(id.clone(), known),
                None => self.routes.remove(&id),
            };
            for gw in old.into_iter().flat_map(|k| k.gateways) {
                if let Some(set) = self.naming.get_mut(&gw) {
                    set.remove(&id);
                    if set.is_empty() {
                        self.naming.remove(&gw);
                    }
                }
                per_gateway.entry(gw).or_default().insert(id.clone());
            }
            for gw in self.routes.get(&id).into_iter().flat_map(|k| k.gateways.iter()) {
                self.naming.entry(gw.clone()).or_default().insert(id.clone());
                per_gateway.entry(gw.clone()).or_default().insert(id.clone());
            }
            dirty.routes.insert(id);
        }
        per_gateway
    }
}

/// Does `m` have the route? Every route the engine knows is in its model; attaching checks anyway,
/// since a route missing there must be detached, not panic the server.
fn in_model(m: &Model, (kind, key): &RouteId) -> bool {
    match kind {
        RouteKind::Http => m.http_routes.contains_key(key),
        RouteKind::Grpc => m.grpc_routes.contains_key(key),
    }
}

/// The route's spec as `m` has it, if `m` has the route.
fn read_spec(m: &Model, (kind, key): &RouteId) -> Option<RouteSpec> {
    match kind {
        RouteKind::Http => {
            let r = m.http_routes.get(key)?;
            Some(spec::http::route(
                key,
                r,
                m.http_route_extras.get(key).map(|e| e.as_ref()),
            ))
        }
        RouteKind::Grpc => Some(spec::grpc::route(key, m.grpc_routes.get(key)?)),
    }
}

fn model_kind(kind: BackendKind) -> Kind {
    match kind {
        BackendKind::XBackend => Kind::XBackend,
        BackendKind::Backend => Kind::Backend,
        BackendKind::EgBackend => Kind::EgBackend,
        BackendKind::Service => Kind::Service,
    }
}

fn decoded(
    gateways: &BTreeMap<ObjectKey, GatewayState>,
    statuses: Vec<crate::gateway::status::ObjectStatus>,
) -> super::Translation {
    super::Translation {
        gateways: gateways
            .iter()
            .map(|(k, s)| (k.to_string(), snapshot::decode(&s.out)))
            .collect(),
        proxyless: gateways
            .iter()
            .filter_map(|(k, s)| Some((k.to_string(), snapshot::decode(s.out.grpc.as_deref()?))))
            .collect(),
        statuses,
    }
}
