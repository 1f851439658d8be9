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

use super::MAX_POLICY_ANCESTORS;
use super::backends::{Backends, Ctx, References};
use super::conditions::{
    Condition, PolicyCondition, PolicyProblem, PolicyReason as Reason, PolicyType as Type, Problem,
};
use super::status::{ObjectStatus, ParentRef, PolicyAncestorStatus, StatusBody};
use super::tls::{self, SecretSet};
use crate::api::consts::{
    CORE_GROUP, EG_GROUP, GATEWAY_GROUP, KIND_BACKEND, KIND_SERVICE, KIND_XBACKEND, X_GATEWAY_GROUP,
};
use crate::ir;
use crate::ir::names::BackendKind;
use crate::model::{Model, ObjectKey};

/// The tag of a recorded read of the policy applying to a Service ([`PolicyIndex::lookup`]).
pub const POLICY_READ: &str = "policy";

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

#[derive(Debug, Default)]
pub struct PolicyIndex {
    pub verdicts: BTreeMap<ObjectKey, PolicyVerdict>,
    /// Winning policy per (Service, sectionName).
    winners: BTreeMap<(ObjectKey, Option<String>), ObjectKey>,
}

impl PolicyIndex {
    pub fn build(ctx: Ctx<'_>) -> Self {
        let mut index = PolicyIndex::default();
        let mut contenders: BTreeMap<(ObjectKey, Option<String>), Vec<&BackendTlsPolicy>> = BTreeMap::new();
        for (key, policy) in &ctx.model.backend_tls_policies {
            let mut verdict = evaluate(ctx, key, policy);
            for (i, t) in policy.spec.target_refs.iter().enumerate() {
                let field = format!("spec.targetRefs[{i}]");
                let target = ObjectKey::new(&key.namespace, &t.name);
                match (t.group.as_str(), t.kind.as_str()) {
                    (CORE_GROUP, KIND_SERVICE) => {
                        verdict.targets.push((BackendKind::Service, target.clone()));
                        if ctx.model.services.contains_key(&target) {
                            verdict.valid_targets += 1;
                            contenders
                                .entry((target, t.section_name.clone()))
                                .or_default()
                                .push(policy);
                        } else {
                            verdict.target_problems.push(Problem::accepted(
                                Reason::TargetNotFound,
                                format!("{field}: Service {target} not found"),
                            ));
                        }
                    }
                    (group @ (X_GATEWAY_GROUP | GATEWAY_GROUP | EG_GROUP), kind @ (KIND_XBACKEND | KIND_BACKEND)) => {
                        let bk = match (group, kind) {
                            (X_GATEWAY_GROUP, KIND_XBACKEND) => Some(BackendKind::XBackend),
                            (GATEWAY_GROUP, KIND_BACKEND) => Some(BackendKind::Backend),
                            (EG_GROUP, KIND_BACKEND) => Some(BackendKind::EgBackend),
                            _ => None,
                        };
                        verdict.targets.extend(bk.map(|bk| (bk, target.clone())));
                        verdict.target_problems.push(Problem::accepted(
                            Reason::Invalid,
                            format!(
                                "{field}: a BackendTLSPolicy cannot target {} {kind} ({group}); set spec.tls on the Backend itself",
                                super::backends::article(kind)
                            ),
                        ));
                    }
                    (g, k) => verdict.target_problems.push(Problem::accepted(
                        Reason::Invalid,
                        format!(
                            "{field}: target kind {}/{k} is not supported; use a core Service",
                            if g.is_empty() { "core" } else { g }
                        ),
                    )),
                }
            }
            index.verdicts.insert(key.clone(), verdict);
        }
        for (target, mut policies) in contenders {
            policies.sort_by(|a, b| super::order::oldest_first(&a.metadata, &b.metadata));
            let winner = key_of(policies[0]);
            for loser in &policies[1..] {
                if let Some(v) = index.verdicts.get_mut(&key_of(loser)) {
                    v.conflicted_by.get_or_insert_with(|| winner.clone());
                }
            }
            index.winners.insert(target, winner);
        }
        index
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

    /// The Services whose applying policy differs between `self` and `next` (another winner, or the
    /// winner's verdict changed): what an incremental translation must redo.
    pub fn changed_services(&self, next: &PolicyIndex) -> BTreeSet<ObjectKey> {
        let mut out = BTreeSet::new();
        let targets: BTreeSet<&(ObjectKey, Option<String>)> = self.winners.keys().chain(next.winners.keys()).collect();
        for t in targets {
            let before = self.winners.get(t).map(|w| (w, self.verdicts.get(w)));
            let after = next.winners.get(t).map(|w| (w, next.verdicts.get(w)));
            if before != after {
                out.insert(t.0.clone());
            }
        }
        out
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

fn key_of(p: &BackendTlsPolicy) -> ObjectKey {
    ObjectKey::new(
        p.metadata.namespace.clone().unwrap_or_default(),
        p.metadata.name.clone().unwrap_or_default(),
    )
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

/// `status.ancestors` of every policy: one entry per Gateway whose routes use one of its targets.
pub fn statuses(model: &Model, backends: &Backends<'_>, refs: &References, controller: &str) -> Vec<ObjectStatus> {
    backends
        .policies
        .verdicts
        .iter()
        .filter(|(key, _)| model.backend_tls_policies.contains_key(key))
        .filter_map(|(key, verdict)| status_of(key, verdict, refs, controller))
        .collect()
}

/// The status of one policy, if a Gateway's routes use one of its targets.
pub fn status_of(
    key: &ObjectKey,
    verdict: &PolicyVerdict,
    refs: &References,
    controller: &str,
) -> Option<ObjectStatus> {
    let ancestors: BTreeSet<&ObjectKey> = verdict
        .targets
        .iter()
        .filter_map(|t| refs.referenced_by.get(t))
        .flatten()
        .collect();
    if ancestors.is_empty() {
        return None;
    }
    let conditions = PolicyIndex::conditions(verdict);
    let ancestors = ancestors
        .into_iter()
        .take(MAX_POLICY_ANCESTORS)
        .map(|gw| PolicyAncestorStatus {
            ancestor_ref: ParentRef::gateway(gw, None, None),
            controller_name: controller.to_string(),
            conditions: conditions.clone(),
        })
        .collect();
    Some(ObjectStatus::new(
        "gateway.networking.k8s.io/v1",
        "BackendTLSPolicy",
        key,
        StatusBody::Policy { ancestors },
    ))
}
