//! CA references: a core ConfigMap or Secret key holding a PEM bundle, or — where the reference has
//! Gateway API's `BackendTLSPolicyValidation` type ([`CaKinds::WithClusterTrustBundle`]) — a
//! `certificates.k8s.io` ClusterTrustBundle, whose `spec.trustBundle` is the bundle.
//!
//! A ClusterTrustBundle is cluster-scoped and public by design (any Pod may project one), so it is found
//! by name alone and needs no ReferenceGrant. Its `signerName` only restricts who may write it and is not
//! read. Every bundle is checked alike, whatever holds it: at least one certificate, nothing that is not
//! PEM, no private key; a bundle that fails is the reference's problem (`InvalidCACertificateRef`), an
//! unsupported group or kind is `InvalidKind`.

use super::{check_certificates, secret_string};
use crate::api::LocalObjectReference;
use crate::api::consts::{CA_CERT_KEY, CERTIFICATES_GROUP, KIND_CLUSTER_TRUST_BUNDLE, KIND_CONFIGMAP, KIND_SECRET};
use crate::gateway::conditions::{Problem, TlsProblem, TlsReason};
use crate::ir;
use crate::ir::names;
use crate::model::{Kind, Model, ObjectKey};

/// A resolved trust bundle: its SDS name and content.
#[derive(Debug, Clone, PartialEq)]
pub struct CaBundle {
    pub secret_name: String,
    pub secret: ir::Secret,
}

/// Outcome of resolving a list of CA references: the bundle of the valid ones (if any) and a problem
/// per invalid one.
#[derive(Debug, Default)]
pub struct CaOutcome {
    pub bundle: Option<CaBundle>,
    pub problems: Vec<TlsProblem>,
}

/// One CA reference: its group, kind and name, and the key holding the PEM bundle (ConfigMap and
/// Secret only).
#[derive(Debug, Clone)]
pub struct CaRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub key: String,
}

impl From<&LocalObjectReference> for CaRef {
    fn from(r: &LocalObjectReference) -> Self {
        Self {
            group: r.group.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            key: CA_CERT_KEY.to_string(),
        }
    }
}

/// The kinds a list of CA references may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaKinds {
    /// Core ConfigMap and Secret: a Gateway's frontend validation, the draft and Envoy Gateway Backends.
    Core,
    /// Those and ClusterTrustBundle: Gateway API's `BackendTLSPolicyValidation`, shared by
    /// BackendTLSPolicy and the Backend's `spec.tls.validation`.
    WithClusterTrustBundle,
}

impl CaKinds {
    fn supported(self) -> &'static str {
        match self {
            CaKinds::Core => "only core ConfigMap and Secret are supported",
            CaKinds::WithClusterTrustBundle => {
                "only core ConfigMap and Secret, and certificates.k8s.io ClusterTrustBundle, are supported"
            }
        }
    }
}

/// Resolves CA references (ConfigMaps and Secrets local to `namespace`). `owner` names the object for a
/// bundle made of several references, e.g. `("xbackend", ns, name)`.
pub fn resolve_ca_refs(
    model: &Model,
    namespace: &str,
    refs: &[CaRef],
    owner: (&str, &str, &str),
    kinds: CaKinds,
) -> CaOutcome {
    let mut out = CaOutcome::default();
    let mut valid: Vec<(String, String)> = Vec::new();
    for r in refs {
        match resolve_one(model, namespace, r, kinds) {
            Ok(one) => valid.push(one),
            Err(p) => out.problems.push(p),
        }
    }
    out.bundle = bundle(valid, owner);
    out
}

/// The system trust bundle, as a file Envoy reads.
pub fn system_ca(path: &str) -> CaBundle {
    CaBundle {
        secret_name: names::SYSTEM_CA_SECRET.to_string(),
        secret: ir::Secret::CaFile { path: path.to_string() },
    }
}

/// One reference's SDS name and checked PEM.
fn resolve_one(model: &Model, namespace: &str, r: &CaRef, kinds: CaKinds) -> Result<(String, String), TlsProblem> {
    let found = match (r.group.as_str(), r.kind.as_str()) {
        ("", KIND_CONFIGMAP | KIND_SECRET) => core_pem(model, namespace, r),
        (CERTIFICATES_GROUP, KIND_CLUSTER_TRUST_BUNDLE) if kinds == CaKinds::WithClusterTrustBundle => {
            trust_bundle_pem(model, &r.name)
        }
        (group, kind) => {
            let group = if group.is_empty() { "core" } else { group };
            return Err(Problem::refs(
                TlsReason::InvalidKind,
                format!("caCertificateRef {group}/{kind} {:?}: {}", r.name, kinds.supported()),
            ));
        }
    };
    let invalid = |m: String| Problem::refs(TlsReason::InvalidCACertificateRef, m);
    let Found {
        secret_name,
        field,
        pem,
    } = found.map_err(invalid)?;
    check_certificates(&pem).map_err(|e| invalid(format!("{field}: {e}")))?;
    Ok((secret_name, pem))
}

/// A bundle as found, before its PEM is checked; `field` names where it was read, for messages.
struct Found {
    secret_name: String,
    field: String,
    pem: String,
}

/// `r.key` of a ConfigMap or Secret in `namespace`.
fn core_pem(model: &Model, namespace: &str, r: &CaRef) -> Result<Found, String> {
    let path = format!("{} {namespace}/{}", r.kind, r.name);
    let key = ObjectKey::new(namespace, &r.name);
    let pem = if r.kind == KIND_CONFIGMAP {
        let cm = model
            .config_maps
            .get(&key)
            .ok_or_else(|| model.not_found(Kind::ConfigMap, &path))?;
        cm.data.as_ref().and_then(|d| d.get(&r.key).cloned())
    } else {
        let s = model
            .secrets
            .get(&key)
            .ok_or_else(|| model.not_found(Kind::Secret, &path))?;
        secret_string(s, &r.key)
    };
    Ok(Found {
        secret_name: names::ca_secret(&r.kind.to_ascii_lowercase(), namespace, &r.name),
        pem: pem.ok_or_else(|| format!("{path} has no key {:?}", r.key))?,
        field: format!("{path} key {}", r.key),
    })
}

/// `spec.trustBundle` of the ClusterTrustBundle `name`.
fn trust_bundle_pem(model: &Model, name: &str) -> Result<Found, String> {
    let path = format!("{KIND_CLUSTER_TRUST_BUNDLE} {name}");
    let ctb = model
        .cluster_trust_bundles
        .get(&ObjectKey::cluster(name))
        .ok_or_else(|| model.not_found(Kind::ClusterTrustBundle, &path))?;
    Ok(Found {
        secret_name: names::cluster_trust_bundle_secret(name),
        pem: ctb.spec.trust_bundle.clone(),
        field: format!("{path} spec.trustBundle"),
    })
}

/// One reference's bundle under its own name; several, concatenated under the owner's.
fn bundle(mut valid: Vec<(String, String)>, owner: (&str, &str, &str)) -> Option<CaBundle> {
    match valid.len() {
        0 => None,
        1 => {
            let (secret_name, pem) = valid.pop().expect("one");
            Some(CaBundle {
                secret_name,
                secret: ir::Secret::CaBundle { pem },
            })
        }
        _ => {
            let pem = valid
                .iter()
                .map(|(_, p)| p.trim_end().to_string() + "\n")
                .collect::<String>();
            Some(CaBundle {
                secret_name: names::ca_bundle_secret(owner.0, owner.1, owner.2),
                secret: ir::Secret::CaBundle { pem },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

    fn model() -> Model {
        let bundle = |name: &str, pem: &str| {
            format!(
                "apiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {{name: {name}}}\n\
                 spec: {{trustBundle: {pem:?}}}\n---\n"
            )
        };
        let text = bundle("roots", CERT)
            + &bundle("empty", "")
            + &bundle("garbage", "not pem")
            + &bundle("keyed", &format!("{CERT}{KEY}"))
            + &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ca, namespace: app}}\ndata: {{ca.crt: {CERT:?}}}\n"
            );
        crate::model::load::parse_texts(&[("t.yaml".into(), text)])
            .unwrap()
            .model
    }

    fn ctb(name: &str) -> CaRef {
        CaRef {
            group: CERTIFICATES_GROUP.into(),
            kind: KIND_CLUSTER_TRUST_BUNDLE.into(),
            name: name.into(),
            key: CA_CERT_KEY.into(),
        }
    }

    fn resolve(refs: &[CaRef], kinds: CaKinds) -> CaOutcome {
        resolve_ca_refs(&model(), "app", refs, ("backendtlspolicy", "app", "p"), kinds)
    }

    fn only_problem(refs: &[CaRef], kinds: CaKinds) -> TlsProblem {
        let out = resolve(refs, kinds);
        assert!(out.bundle.is_none());
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        out.problems.into_iter().next().unwrap()
    }

    #[test]
    fn a_cluster_trust_bundle_is_found_by_name_from_any_namespace() {
        let out = resolve(&[ctb("roots")], CaKinds::WithClusterTrustBundle);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        let bundle = out.bundle.unwrap();
        assert_eq!(bundle.secret_name, "ca/clustertrustbundle/roots");
        assert_eq!(bundle.secret, ir::Secret::CaBundle { pem: CERT.into() });
        // With a ConfigMap: one bundle under the owner's name.
        let cm = CaRef {
            group: String::new(),
            kind: KIND_CONFIGMAP.into(),
            name: "ca".into(),
            key: CA_CERT_KEY.into(),
        };
        let both = resolve(&[ctb("roots"), cm], CaKinds::WithClusterTrustBundle)
            .bundle
            .unwrap();
        assert_eq!(both.secret_name, "ca-bundle/backendtlspolicy/app/p");
    }

    #[test]
    fn bad_bundles_are_invalid_references_naming_the_bundle_and_field() {
        for (name, want) in [
            ("missing", "ClusterTrustBundle missing not found"),
            (
                "empty",
                "ClusterTrustBundle empty spec.trustBundle: contains no PEM CERTIFICATE block",
            ),
            (
                "garbage",
                "ClusterTrustBundle garbage spec.trustBundle: contains no PEM CERTIFICATE block",
            ),
            (
                "keyed",
                "ClusterTrustBundle keyed spec.trustBundle: holds a private key",
            ),
        ] {
            let p = only_problem(&[ctb(name)], CaKinds::WithClusterTrustBundle);
            assert_eq!(p.reason, TlsReason::InvalidCACertificateRef, "{name}");
            assert!(p.message.starts_with(want), "{name}: {}", p.message);
        }
    }

    #[test]
    fn a_cluster_trust_bundle_is_a_supported_kind_only_where_the_field_allows_it() {
        let p = only_problem(&[ctb("roots")], CaKinds::Core);
        assert_eq!(p.reason, TlsReason::InvalidKind);
        assert!(
            p.message.contains("only core ConfigMap and Secret are supported"),
            "{}",
            p.message
        );
        let core_group = CaRef {
            group: String::new(),
            ..ctb("roots")
        };
        let p = only_problem(&[core_group], CaKinds::WithClusterTrustBundle);
        assert_eq!(p.reason, TlsReason::InvalidKind);
        assert!(
            p.message
                .starts_with("caCertificateRef core/ClusterTrustBundle \"roots\""),
            "{}",
            p.message
        );
    }
}
