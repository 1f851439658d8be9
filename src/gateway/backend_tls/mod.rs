//! BackendTLSPolicy: which policy applies to which Service port, whether it is valid, and its status.
//!
//! Targets are `(Service, sectionName)`, the section being a Service *port name*. A sectioned policy
//! and a whole-Service policy do not conflict: the sectioned one applies to its port, the other to
//! the remaining ports. Two policies on the same `(Service, section)` conflict; the oldest wins, then
//! namespace/name (`order::oldest_first`), and the others are `Accepted=False/Conflicted`. The winner
//! applies even if it is invalid — an invalid policy makes its traffic fail with a 5xx, never fall back
//! to plaintext. Policies targeting a Backend kind are refused: the GEP gives Backends inline TLS.

use std::collections::{BTreeMap, BTreeSet};

use gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicy;

use super::backends::Ctx;
use super::conditions::{
    Condition, PolicyCondition, PolicyProblem, PolicyReason as Reason, PolicyType as Type, Problem,
};
use super::tls::{self, SecretSet};
use crate::ir;
use crate::ir::names::BackendKind;
use crate::model::ObjectKey;

/// The tag of a recorded read of the policy applying to a Service ([`PolicyIndex::lookup`]).
pub const POLICY_READ: &str = "policy";

mod index;
mod status;

pub use index::Rank;
pub use status::{status_of, statuses};

#[derive(Debug, Default, PartialEq)]
pub struct PolicyVerdict {
    pub generation: i64,
    pub problems: Vec<PolicyProblem>,
    /// Lost a conflict on at least one target.
    pub conflicted_by: Option<ObjectKey>,
    /// Trust/SNI/SANs when valid.
    pub tls: Option<ir::UpstreamTls>,
    pub secrets: SecretSet,
    /// Problems with individual targetRefs (missing Service, a Backend kind): those targets are
    /// ignored; the policy still applies to its valid targets.
    pub target_problems: Vec<PolicyProblem>,
    pub valid_targets: usize,
    /// Every target of a kind routes can reference, found or not: the Gateways whose routes use one
    /// of them are the policy's status ancestors.
    pub targets: Vec<(BackendKind, ObjectKey)>,
}

/// A policy target: a Service and a port name (`None`: the whole Service).
pub type Target = (ObjectKey, Option<String>);

#[derive(Debug, Default)]
pub struct PolicyIndex {
    pub verdicts: BTreeMap<ObjectKey, PolicyVerdict>,
    /// Winning policy per target.
    winners: BTreeMap<Target, ObjectKey>,
    /// The policies on each target (existing Services only), in precedence order.
    contenders: BTreeMap<Target, BTreeSet<Rank>>,
    /// The targets each policy contends for.
    contends: BTreeMap<ObjectKey, BTreeSet<Target>>,
}

/// What changing some policies changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct IndexChanges {
    /// Policies whose verdict changed (or that appeared or went).
    pub policies: BTreeSet<ObjectKey>,
    /// Services whose applying policy changed: another winner, or the winner's verdict.
    pub services: BTreeSet<ObjectKey>,
}

impl PolicyIndex {
    /// Every policy of the model, indexed.
    pub fn build(ctx: Ctx<'_>) -> Self {
        let mut index = PolicyIndex::default();
        let keys: Vec<ObjectKey> = ctx.model.backend_tls_policies.keys().cloned().collect();
        index.update(keys.iter().map(|k| (k, index::verdict(ctx, k))));
        index
    }

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
        crate::model::objects::record(|| crate::model::objects::Read::Derived(POLICY_READ, svc.clone()));
        let sectioned = (!port_name.is_empty())
            .then(|| self.winners.get(&(svc.clone(), Some(port_name.to_string()))))
            .flatten();
        let key = sectioned.or_else(|| self.winners.get(&(svc.clone(), None)))?;
        self.verdicts.get(key).map(|v| (key, v))
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
                "Policy accepted for its Service targets; ignored: {}",
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
        &policy.spec.validation,
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
        generation: policy.metadata.generation.unwrap_or(0),
        problems: problems.into_iter().map(Problem::widen).collect(),
        tls,
        secrets,
        ..Default::default()
    }
}
