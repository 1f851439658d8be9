//! Building and maintaining the [`PolicyIndex`]: one policy's verdict on its own ([`verdict`]), and
//! [`update`], which replaces some verdicts and settles only the targets they contend for — every policy
//! at once when the engine starts from empty, the policies that changed afterwards, one code path.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{IndexChanges, PolicyIndex, PolicyVerdict, Reason, Target, evaluate};
use crate::api::consts::{
    CORE_GROUP, EG_GROUP, GATEWAY_GROUP, KIND_BACKEND, KIND_SERVICE, KIND_XBACKEND, X_GATEWAY_GROUP,
};
use crate::api::validation::BackendTlsPolicy;
use crate::gateway::backends::{Ctx, article};
use crate::gateway::conditions::Problem;
use crate::ir::few::Few;
use crate::ir::names::BackendKind;
use crate::model::{Kind, Name, ObjectKey};

/// A policy's precedence among the policies on one target: the oldest first, then namespace/name of
/// its metadata (`order::older_first`), then its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    created: Option<Time>,
    namespace: Option<Name>,
    name: Option<Name>,
    key: ObjectKey,
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        crate::gateway::order::older_first(self.created.as_ref(), other.created.as_ref())
            .then_with(|| self.namespace.cmp(&other.namespace))
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.key.cmp(&other.key))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One policy's verdict (without `conflicted_by`, which only the index can say), its rank and the
/// targets it contends for: every existing Service port (or whole Service) and Envoy Gateway Backend it
/// targets, and the XBackends and GEP Backends it names (which it may not target: those with TLS of
/// their own keep it, routes to the others answer 500 rather than go out without the TLS the policy
/// asks for).
pub fn verdict(ctx: Ctx<'_>, key: &ObjectKey) -> Option<(PolicyVerdict, Rank, Vec<Target>)> {
    let policy = ctx.model.backend_tls_policies.get(key)?;
    let mut verdict = evaluate(ctx, key, policy);
    let mut contends = Vec::new();
    for (i, t) in policy.policy.spec.target_refs.iter().enumerate() {
        let at = TargetAt {
            field: format!("spec.targetRefs[{i}]"),
            target: ObjectKey::new(&key.namespace, &t.name),
            section: t.section_name.as_deref(),
        };
        let (v, c) = (&mut verdict, &mut contends);
        match (t.group.as_str(), t.kind.as_str()) {
            (CORE_GROUP, KIND_SERVICE) => service_target(ctx, at, v, c),
            (EG_GROUP, KIND_BACKEND) => eg_target(ctx, at, v, c),
            (group @ (X_GATEWAY_GROUP | GATEWAY_GROUP), kind @ (KIND_XBACKEND | KIND_BACKEND)) => {
                backend_target(group, kind, at, v, c)
            }
            (g, k) => v.target_problems.push(Problem::accepted(
                Reason::Invalid,
                format!(
                    "{}: target kind {}/{k} is not supported; use a core Service or a {EG_GROUP} Backend",
                    at.field,
                    if g.is_empty() { "core" } else { g }
                ),
            )),
        }
    }
    // The index keeps them as a set.
    contends.sort();
    contends.dedup();
    // Both kept for the policy's life.
    contends.shrink_to_fit();
    verdict.targets.shrink_to_fit();
    Some((verdict, rank(key, policy), contends))
}

/// One targetRef: its field path, the object it names, its section.
struct TargetAt<'a> {
    field: String,
    target: ObjectKey,
    section: Option<&'a str>,
}

/// A Service target: the whole Service, or the port its section names (which must exist).
fn service_target(ctx: Ctx<'_>, at: TargetAt<'_>, verdict: &mut PolicyVerdict, contends: &mut Vec<Target>) {
    let TargetAt { field, target, section } = at;
    verdict.targets.push((BackendKind::Service, target.clone()));
    let Some(svc) = ctx.model.services.get(&target) else {
        verdict.target_problems.push(Problem::accepted(
            Reason::TargetNotFound,
            ctx.model.not_found(Kind::Service, format!("{field}: Service {target}")),
        ));
        return;
    };
    let has_port = |name: &str| {
        let ports = svc.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or_default();
        ports.iter().any(|p| p.name.as_deref() == Some(name))
    };
    match section {
        Some(s) if !has_port(s) => missing_section(
            verdict,
            (BackendKind::Service, target.clone(), s.to_string()),
            format!("{field}.sectionName: Service {target} has no port named {s:?}"),
        ),
        _ => {
            verdict.valid_targets += 1;
            contends.push((BackendKind::Service, target, section.map(str::to_string)));
        }
    }
}

/// An Envoy Gateway Backend target: whole only, since its endpoints carry no names.
fn eg_target(ctx: Ctx<'_>, at: TargetAt<'_>, verdict: &mut PolicyVerdict, contends: &mut Vec<Target>) {
    let TargetAt { field, target, section } = at;
    verdict.targets.push((BackendKind::EgBackend, target.clone()));
    if !ctx.model.eg_backends.contains_key(&target) {
        verdict.target_problems.push(Problem::accepted(
            Reason::TargetNotFound,
            ctx.model
                .not_found(Kind::EgBackend, format!("{field}: Backend {target} ({EG_GROUP})")),
        ));
        return;
    }
    match section {
        Some(s) => missing_section(
            verdict,
            (BackendKind::EgBackend, target.clone(), s.to_string()),
            format!(
                "{field}.sectionName: Backend {target} ({EG_GROUP}) has no section named {s:?} (its endpoints are not named); omit sectionName"
            ),
        ),
        None => {
            verdict.valid_targets += 1;
            contends.push((BackendKind::EgBackend, target, None));
        }
    }
}

/// An XBackend or GEP Backend: never a valid target (the GEP gives it TLS of its own), but one whose
/// traffic must not go out without the TLS the policy asks for: contending makes
/// `PolicyIndex::forbidding` find it.
fn backend_target(group: &str, kind: &str, at: TargetAt<'_>, verdict: &mut PolicyVerdict, contends: &mut Vec<Target>) {
    let bk = match (group, kind) {
        (X_GATEWAY_GROUP, KIND_XBACKEND) => Some(BackendKind::XBackend),
        (GATEWAY_GROUP, KIND_BACKEND) => Some(BackendKind::Backend),
        _ => None,
    };
    if let Some(bk) = bk {
        verdict.targets.push((bk, at.target.clone()));
        contends.push((bk, at.target, None));
    }
    verdict.target_problems.push(Problem::accepted(
        Reason::Invalid,
        format!(
            "{}: a BackendTLSPolicy cannot target {} {kind} ({group}), whose TLS is its own spec.tls; the policy is not applied to it. Served with its own spec.tls if it has one, else its share of traffic answers 500 rather than go out without the TLS this policy asks for",
            at.field,
            article(kind)
        ),
    ));
}

/// A targetRef whose section does not exist does not attach (`TargetNotFound`); the routes that use
/// the target say so, since its traffic then goes out as if no policy named it.
fn missing_section(verdict: &mut PolicyVerdict, missing: (BackendKind, ObjectKey, String), message: String) {
    verdict
        .target_problems
        .push(Problem::accepted(Reason::TargetNotFound, message));
    verdict.missing_sections.push(missing);
}

fn rank(key: &ObjectKey, p: &BackendTlsPolicy) -> Rank {
    let p = &p.policy;
    Rank {
        created: p.metadata.creation_timestamp.clone(),
        namespace: p.metadata.namespace.clone(),
        name: p.metadata.name.clone(),
        key: key.clone(),
    }
}

pub(super) fn update<'k>(
    index: &mut PolicyIndex,
    verdicts: impl IntoIterator<Item = (&'k ObjectKey, Option<(PolicyVerdict, Rank, Vec<Target>)>)>,
) -> IndexChanges {
    let mut changes = IndexChanges::default();
    let mut targets: BTreeSet<Target> = BTreeSet::new();
    // The policies whose `conflicted_by` may change, with the verdict each had before.
    let mut before: Vec<(ObjectKey, Option<PolicyVerdict>)> = Vec::new();
    for (key, next) in verdicts {
        for t in index.contends.remove(key).into_iter().flatten() {
            if let Some(set) = index.contenders.get_mut(&t) {
                set.retain(|r, _| &r.key != key);
            }
            targets.insert(t);
        }
        let old = index.verdicts.remove(key);
        for (kind, target, section) in old.iter().flat_map(|v| &v.missing_sections) {
            let id = (*kind, target.clone());
            if let Some(set) = index.missing.get_mut(&id) {
                set.remove(&(key.clone(), section.clone()));
                if set.is_empty() {
                    index.missing.remove(&id);
                }
            }
        }
        if let Some((verdict, rank, contends)) = next {
            for (kind, target, section) in &verdict.missing_sections {
                let set = index.missing.entry((*kind, target.clone())).or_default();
                set.insert((key.clone(), section.clone()));
            }
            for t in &contends {
                index.contenders.entry(t.clone()).or_default().insert(rank.clone(), ());
                targets.insert(t.clone());
            }
            index.contends.insert(key.clone(), contends.into_boxed_slice());
            index.verdicts.insert(key.clone(), verdict);
        }
        before.push((key.clone(), old));
    }
    let mut involved: BTreeSet<ObjectKey> = BTreeSet::new();
    for t in &targets {
        let old = index.winners.get(t).cloned();
        let set = index.contenders.get(t);
        let next = set.and_then(|s| s.keys().next()).map(|r| r.key.clone());
        involved.extend(set.into_iter().flat_map(Few::keys).map(|r| r.key.clone()));
        if old != next {
            changes.services.insert(t.1.clone());
        }
        match next {
            Some(w) => index.winners.insert(t.clone(), w),
            None => {
                index.contenders.remove(t);
                index.winners.remove(t)
            }
        };
    }
    let mut seen: BTreeSet<ObjectKey> = before.iter().map(|(k, _)| k.clone()).collect();
    let mut contention: Vec<(ObjectKey, Option<ObjectKey>)> = Vec::new();
    for key in involved {
        if seen.insert(key.clone()) {
            let old = index.verdicts.get(&key).and_then(|v| v.conflicted_by.clone());
            contention.push((key, old));
        }
    }
    for (key, old) in before {
        settle_conflict(index, &key);
        if old.as_ref() != index.verdicts.get(&key) {
            changed(index, &key, old.as_ref(), &mut changes);
        }
    }
    for (key, old) in contention {
        settle_conflict(index, &key);
        if old != index.verdicts.get(&key).and_then(|v| v.conflicted_by.clone()) {
            changed(index, &key, None, &mut changes);
        }
    }
    changes
}

/// Policy `key`'s verdict changed (from `old`): so did the policy of every target it wins, and what the
/// routes to a target whose missing section it names (before or now) say.
fn changed(index: &PolicyIndex, key: &ObjectKey, old: Option<&PolicyVerdict>, changes: &mut IndexChanges) {
    changes.policies.insert(key.clone());
    for t in index.contends.get(key).into_iter().flatten() {
        if index.winners.get(t) == Some(key) {
            changes.services.insert(t.1.clone());
        }
    }
    let now = index.verdicts.get(key);
    for (_, target, _) in old.into_iter().chain(now).flat_map(|v| &v.missing_sections) {
        changes.services.insert(target.clone());
    }
}

/// `conflicted_by`: the winner of the first target (in target order) the policy loses. Targets a policy
/// may not name (XBackends, GEP Backends) are no contest: every policy naming one is `Invalid`.
fn settle_conflict(index: &mut PolicyIndex, key: &ObjectKey) {
    let winner = index
        .contends
        .get(key)
        .into_iter()
        .flatten()
        .filter(|t| matches!(t.0, BackendKind::Service | BackendKind::EgBackend))
        .filter_map(|t| index.winners.get(t))
        .find(|w| *w != key)
        .cloned();
    if let Some(v) = index.verdicts.get_mut(key) {
        v.conflicted_by = winner;
    }
}
