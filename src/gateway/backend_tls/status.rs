//! BackendTLSPolicy `status.ancestors`: one entry per Gateway whose routes use one of the policy's
//! targets.

use std::collections::BTreeSet;

use super::{PolicyIndex, PolicyVerdict};
use crate::gateway::MAX_POLICY_ANCESTORS;
use crate::gateway::backends::References;
use crate::gateway::status::{ObjectStatus, ParentRef, PolicyAncestorStatus, StatusBody};
use crate::model::ObjectKey;

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
        .flat_map(|gws| gws.keys())
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
            controller_name: crate::model::Name::new(controller),
            conditions: conditions.clone(),
        })
        .collect();
    Some(ObjectStatus::new(
        crate::api::consts::GATEWAY_V1,
        crate::api::consts::KIND_BACKEND_TLS_POLICY,
        key,
        StatusBody::Policy { ancestors },
    ))
}
