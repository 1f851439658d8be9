//! BackendTLSPolicy: which policy applies to which Service port, whether it is valid, and its status.
//!
//! Targets are `(Service, sectionName)`, the section being a Service *port name*. A sectioned policy
//! and a whole-Service policy do not conflict: the sectioned one applies to its port, the other to
//! the remaining ports. Two policies on the same `(Service, section)` conflict; the oldest wins, then
//! namespace/name (`order::older_first`), and the others are `Accepted=False/Conflicted`. The winner
//! applies even if it is invalid — an invalid policy makes its traffic fail with a 5xx, never fall back
//! to plaintext.
//!
//! An Envoy Gateway `Backend` is a target as a Service is (Envoy Gateway supports the pairing and its
//! users' manifests rely on it), whole only: its endpoints have no names, so a `sectionName` on it, like
//! one naming no port of a Service, does not exist and does not attach (`TargetNotFound`); routes to
//! that target say so. XBackends and GEP Backends may not be targeted (the GEP gives them inline TLS):
//! such a policy is `Invalid` and never applied. A Backend with `spec.tls` is served with its own TLS;
//! one without is where the policy's author clearly wanted TLS, so routes to it answer 500 for that
//! share — never plaintext.

use std::collections::{BTreeMap, BTreeSet};

use super::backends::Ctx;
use super::conditions::{
    Condition, PolicyCondition, PolicyProblem, PolicyReason as Reason, PolicyType as Type, Problem,
};
use super::tls::{self, SecretSet};
use crate::api::validation::BackendTlsPolicy;
use crate::ir;
use crate::ir::few::Few;
use crate::ir::names::BackendKind;
use crate::model::ObjectKey;

/// The tag of a recorded read of the policy applying to a Service ([`PolicyIndex::lookup`]).
pub const POLICY_READ: &str = "policy";

mod apply;
mod index;
mod status;

pub use apply::{Applied, to_backend};

pub use index::Rank;
pub use status::status_of;

#[derive(Debug, Default, PartialEq)]
pub struct PolicyVerdict {
    pub generation: i64,
    pub problems: Vec<PolicyProblem>,
    /// Lost a conflict on at least one target.
    pub conflicted_by: Option<ObjectKey>,
    /// Trust/SNI/SANs when valid.
    pub tls: Option<std::sync::Arc<ir::UpstreamTls>>,
    pub secrets: SecretSet,
    /// Problems with individual targetRefs (missing Service, a Backend kind): those targets are
    /// ignored; the policy still applies to its valid targets.
    pub target_problems: Vec<PolicyProblem>,
    pub valid_targets: usize,
    /// Every target of a kind routes can reference, found or not: the Gateways whose routes use one
    /// of them are the policy's status ancestors.
    pub targets: Vec<(BackendKind, ObjectKey)>,
    /// Targets whose `sectionName` names nothing: (kind, target, section).
    pub missing_sections: Vec<(BackendKind, ObjectKey, String)>,
}

/// A policy target: a Service (or Backend) and a section, a Service port name (`None`: the whole object).
pub type Target = (BackendKind, ObjectKey, Option<String>);

#[derive(Debug, Default)]
pub struct PolicyIndex {
    pub verdicts: BTreeMap<ObjectKey, PolicyVerdict>,
    /// Winning policy per target.
    winners: BTreeMap<Target, ObjectKey>,
    /// The policies on each target (existing Services only), in precedence order.
    /// Nearly always one policy a target, so held inline.
    contenders: BTreeMap<Target, Few<Rank, ()>>,
    /// The targets each policy contends for, sorted and without repeats (`index::verdict`).
    contends: BTreeMap<ObjectKey, Box<[Target]>>,
    /// Per target, the policies whose `sectionName` on it names nothing, with that section.
    missing: BTreeMap<(BackendKind, ObjectKey), BTreeSet<(ObjectKey, String)>>,
}

/// What changing some policies changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct IndexChanges {
    /// Policies whose verdict changed (or that appeared or went).
    pub policies: BTreeSet<ObjectKey>,
    /// Targets (Services and Backends, by key) whose applying policy changed: another winner, or the
    /// winner's verdict, or the missing sections named on them.
    pub services: BTreeSet<ObjectKey>,
}

impl crate::api::dense::Densify for PolicyIndex {
    fn densify(&mut self) {
        self.verdicts.densify();
        self.winners.densify();
        self.contenders.densify();
        self.contends.densify();
        self.missing.densify();
    }
}

impl PolicyIndex {
    /// Replaces the verdicts of some policies (`None`: the policy is gone) and settles who wins each
    /// target they contend for. Incremental translation calls it with the policies that changed, each
    /// verdict computed by [`PolicyIndex::verdict`] on its own.
    pub fn update<'k>(
        &mut self,
        verdicts: impl IntoIterator<Item = (&'k ObjectKey, Option<(PolicyVerdict, Rank, Vec<Target>)>)>,
    ) -> IndexChanges {
        index::update(self, verdicts)
    }

    /// The verdict of one policy, the rank it contends with and the targets it contends for (`None`
    /// when the model has no such policy).
    pub fn verdict(ctx: Ctx<'_>, key: &ObjectKey) -> Option<(PolicyVerdict, Rank, Vec<Target>)> {
        index::verdict(ctx, key)
    }

    /// The policy that applies to `svc`'s port named `port_name`: the sectioned one first.
    pub fn lookup(&self, svc: &ObjectKey, port_name: &str) -> Option<(&ObjectKey, &PolicyVerdict)> {
        self.lookup_kind(BackendKind::Service, svc, port_name)
    }

    /// The policy that applies to `key` of `kind` (section `section`, `""` for none): the sectioned
    /// one first. For an XBackend or a GEP Backend, a policy that (invalidly) names it.
    pub fn lookup_kind(
        &self,
        kind: BackendKind,
        key: &ObjectKey,
        section: &str,
    ) -> Option<(&ObjectKey, &PolicyVerdict)> {
        crate::model::objects::record(|| crate::model::objects::Read::Derived(POLICY_READ, key.clone()));
        let sectioned = (!section.is_empty())
            .then(|| self.winners.get(&(kind, key.clone(), Some(section.to_string()))))
            .flatten();
        let winner = sectioned.or_else(|| self.winners.get(&(kind, key.clone(), None)))?;
        self.verdicts.get(winner).map(|v| (winner, v))
    }

    /// What the routes to `key` of `kind` should say about policies whose `sectionName` on it names
    /// nothing (their traffic goes out as if those policies did not exist).
    pub fn missing_section_notes(&self, kind: BackendKind, key: &ObjectKey) -> Vec<String> {
        crate::model::objects::record(|| crate::model::objects::Read::Derived(POLICY_READ, key.clone()));
        let what = match kind {
            BackendKind::Service => format!("Service {key} has no port named"),
            _ => format!("{} {key} has no section named", super::backends::kind_name(kind)),
        };
        self.missing
            .get(&(kind, key.clone()))
            .into_iter()
            .flatten()
            .map(|(policy, section)| {
                format!("BackendTLSPolicy {policy} (sectionName {section:?}, not applied: {what} {section:?})")
            })
            .collect()
    }

    /// Accepted / ResolvedRefs of one policy.
    pub fn conditions(v: &PolicyVerdict) -> Vec<PolicyCondition> {
        let g = v.generation;
        let accepted = if let Some(winner) = &v.conflicted_by {
            Condition::fail(
                Type::Accepted,
                Reason::Conflicted,
                format!(
                    "BackendTLSPolicy {winner} targets the same Service and section and takes precedence (older, or first by namespace/name)"
                ),
                g,
            )
        } else if let Some(p) = v.problems.iter().find(|p| p.type_ == Type::Accepted) {
            Condition::fail(Type::Accepted, p.reason, join(&v.problems, Type::Accepted), g)
        } else if v.valid_targets == 0
            && let Some(p) = v.target_problems.first()
        {
            Condition::fail(Type::Accepted, p.reason, join(&v.target_problems, Type::Accepted), g)
        } else if v.target_problems.is_empty() {
            Condition::ok(Type::Accepted, Reason::Accepted, "Policy accepted", g)
        } else {
            let msg = format!(
                "Policy accepted for its valid targets; ignored: {}",
                join(&v.target_problems, Type::Accepted)
            );
            Condition::ok(Type::Accepted, Reason::Accepted, msg, g)
        };
        let refs = match v.problems.iter().find(|p| p.type_ == Type::ResolvedRefs) {
            Some(p) => Condition::fail(Type::ResolvedRefs, p.reason, join(&v.problems, Type::ResolvedRefs), g),
            None => Condition::ok(Type::ResolvedRefs, Reason::ResolvedRefs, "All references resolved", g),
        };
        vec![accepted, refs]
    }
}

fn join(problems: &[PolicyProblem], ty: Type) -> String {
    problems
        .iter()
        .filter(|p| p.type_ == ty)
        .map(|p| p.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

fn evaluate(ctx: Ctx<'_>, key: &ObjectKey, policy: &BackendTlsPolicy) -> PolicyVerdict {
    let site = tls::Site {
        namespace: &key.namespace,
        owner: ("backendtlspolicy", &key.namespace, &key.name),
        field: "spec.validation",
    };
    let mut problems = Vec::new();
    let validated = tls::resolve_validation(
        ctx.model,
        &ctx.opts.system_ca_path,
        site,
        &policy.policy.spec.validation,
        &policy.validation,
        &mut problems,
    );
    let (tls, secrets) = match validated {
        Ok(v) => (Some(v.tls), v.secrets),
        Err(p) => {
            problems.push(p);
            (None, SecretSet::new())
        }
    };
    PolicyVerdict {
        generation: policy.policy.metadata.generation.unwrap_or(0),
        problems: problems.into_iter().map(Problem::widen).collect(),
        tls: tls.map(std::sync::Arc::new),
        secrets,
        ..Default::default()
    }
}
