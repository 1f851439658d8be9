//! Steps every Backend shape shares, so each rule is written once: "set if and only if type is X", the
//! rule that a Backend's references stay in its namespace, the Backend's own client certificate, port
//! numbers, and the guardrail refusal. Each returns `Result<_, BackendProblem>`, so a shape's
//! evaluation is a chain of `?`.

use super::super::conditions::{BackendProblem, BackendReason, Problem};
use super::super::policy;
use super::super::tls::{self, SecretSet};
use super::Ctx;
use crate::api::SecretObjectReference;
use crate::model::ObjectKey;

/// What evaluating a Backend found besides its verdict: notes for its `Accepted` message (endpoints
/// skipped, ...) and problems that do not refuse it (one CA reference of several that did not resolve).
#[derive(Debug, Default)]
pub struct Findings {
    pub notes: Vec<String>,
    pub problems: Vec<BackendProblem>,
    /// With `--resolve-hostnames pier`: what each hostname resolved to, judged.
    pub resolved: Vec<super::resolved::NameReport>,
}

/// Why a Backend cannot be used: usually one problem, sometimes several found together (every CA
/// reference of a draft Backend that did not resolve).
#[derive(Debug)]
pub struct Refused(pub Vec<BackendProblem>);

impl From<BackendProblem> for Refused {
    fn from(p: BackendProblem) -> Self {
        Refused(vec![p])
    }
}

pub(super) fn invalid(message: impl Into<String>) -> BackendProblem {
    Problem::accepted(BackendReason::Invalid, message)
}

/// "Set if and only if type is X" for a union selected by a `type` field: the member `wanted` names
/// (field path, value) must be set, and every member in `others` (field path, whether set) unset.
/// A stray member is reported before a missing one.
pub(super) fn set_iff<'a, T>(
    ty: &str,
    wanted: (&str, Option<&'a T>),
    others: &[(&str, bool)],
) -> Result<&'a T, BackendProblem> {
    if let Some((field, _)) = others.iter().find(|(_, set)| *set) {
        return Err(invalid(format!("{field}: must be unset when type is {ty}")));
    }
    let (field, value) = wanted;
    value.ok_or_else(|| invalid(format!("{field}: must be set when type is {ty}")))
}

/// A Backend's references (Services, Secrets, CA bundles) must be in its own namespace: the GEP gives
/// Backends no cross-namespace references, and a ReferenceGrant does not change that. `field` is the
/// reference's path, `kind` what it names.
pub(super) fn same_namespace(
    backend: &ObjectKey,
    namespace: Option<&str>,
    field: &str,
    kind: &str,
) -> Result<(), BackendProblem> {
    match namespace {
        Some(ns) if ns != backend.namespace => Err(Problem::refs(
            BackendReason::RefNotPermitted,
            format!("{field}.namespace: the {kind} must be in the Backend's namespace"),
        )),
        _ => Ok(()),
    }
}

/// The Backend's own client certificate (`field` is its path): a `kubernetes.io/tls` Secret in the
/// Backend's namespace, served over SDS. Returns its SDS name; the secret goes to `secrets`.
pub(super) fn client_certificate(
    ctx: Ctx<'_>,
    backend: &ObjectKey,
    r: &SecretObjectReference,
    field: &str,
    secrets: &mut SecretSet,
) -> Result<String, BackendProblem> {
    same_namespace(backend, r.namespace.as_deref(), field, "Secret")?;
    let (name, secret) = tls::resolve_tls_secret(ctx.model, &backend.namespace, r)
        .map_err(|m| Problem::refs(BackendReason::InvalidClientCertificateRef, format!("{field}: {m}")))?;
    secrets.insert(name.clone(), secret);
    Ok(name)
}

/// A port number of an object (i32 there) as Envoy wants it: 1..=65535.
pub(crate) fn port_u16(p: i32) -> Option<u16> {
    u16::try_from(p).ok().filter(|p| *p != 0)
}

/// `field` holds a port: 1..=65535.
pub(super) fn port(p: i32, field: &str) -> Result<u16, BackendProblem> {
    port_u16(p).ok_or_else(|| invalid(format!("{field}: must be in 1..65535")))
}

/// The hostname guardrails (`gateway::policy`) on an external hostname at `field`.
pub(super) fn allowed_hostname(ctx: Ctx<'_>, hostname: &str, field: &str) -> Result<(), BackendProblem> {
    policy::check_hostname(hostname, &ctx.opts.guardrails).map_err(|refusal| destination_not_allowed(field, refusal))
}

pub(super) fn destination_not_allowed(field: &str, refusal: policy::Refusal) -> BackendProblem {
    Problem::accepted(BackendReason::DestinationNotAllowed, format!("{field}: {refusal}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_iff_names_the_stray_member_first() {
        let v = Some(1);
        assert_eq!(set_iff("A", ("spec.a", v.as_ref()), &[("spec.b", false)]), Ok(&1));
        let stray = set_iff("A", ("spec.a", None::<&i32>), &[("spec.b", true)]).unwrap_err();
        assert_eq!(stray.message, "spec.b: must be unset when type is A");
        let missing = set_iff("A", ("spec.a", None::<&i32>), &[("spec.b", false)]).unwrap_err();
        assert_eq!(missing.message, "spec.a: must be set when type is A");
    }

    #[test]
    fn references_stay_in_the_backend_namespace() {
        let b = ObjectKey::new("team", "api");
        assert!(same_namespace(&b, None, "spec.x", "Secret").is_ok());
        assert!(same_namespace(&b, Some("team"), "spec.x", "Secret").is_ok());
        let p = same_namespace(&b, Some("other"), "spec.x", "Secret").unwrap_err();
        assert_eq!(p.reason, BackendReason::RefNotPermitted);
        assert_eq!(
            p.message,
            "spec.x.namespace: the Secret must be in the Backend's namespace"
        );
    }
}
