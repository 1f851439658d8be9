//! ReferenceGrant: may an object in one namespace refer to an object in another?
//!
//! Grants live in the *target* namespace; `from` entries name (group, kind, namespace) and `to`
//! entries (group, kind, optional name). Every field must match; entries are ORed. The model is a
//! snapshot, so removing a grant revokes access on the next translation.

use crate::model::Model;

/// One side of a reference: group ("" for core), kind, namespace, name.
#[derive(Debug, Clone, Copy)]
pub struct RefEnd<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// True if `from` may reference `to`: same namespace, or a ReferenceGrant in `to.namespace` allows it.
pub fn permitted(model: &Model, from: RefEnd<'_>, to: RefEnd<'_>) -> bool {
    if from.namespace == to.namespace {
        return true;
    }
    model
        .reference_grants
        .iter()
        .filter(|(key, _)| key.namespace == to.namespace)
        .any(|(_, grant)| {
            let from_ok = grant
                .spec
                .from
                .iter()
                .any(|f| f.group == from.group && f.kind == from.kind && f.namespace == from.namespace);
            let to_ok =
                grant.spec.to.iter().any(|t| {
                    t.group == to.group && t.kind == to.kind && t.name.as_deref().is_none_or(|n| n == to.name)
                });
            from_ok && to_ok
        })
}
