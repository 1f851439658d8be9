//! Where a validation block (Gateway API's `BackendTLSPolicyValidation`) says trust comes from:
//! `caCertificateRefs` and GEP-5075's `clusterTrustBundleRef`, unioned when both are set, or
//! `wellKnownCACertificates` alone.
//!
//! The bundle reference is resolved as a ClusterTrustBundle entry of `caCertificateRefs` is ([`super::ca`]):
//! the same checks, SDS secret (`ca/clustertrustbundle/<name>` alone, one bundle under the owner's name
//! with other references) and reasons, so the two ways of naming a bundle behave alike. Only its group and
//! kind are its own: anything but a `certificates.k8s.io` ClusterTrustBundle is `InvalidKind`, never
//! looked up as another kind.

use super::{CaBundle, CaKinds, CaRef, resolve_ca_refs, system_ca};
use crate::api::LocalObjectReference;
use crate::api::consts::{CA_CERT_KEY, CERTIFICATES_GROUP, KIND_CLUSTER_TRUST_BUNDLE};
use crate::api::validation::ClusterTrustBundleRef;
use crate::gateway::conditions::{Problem, TlsProblem, TlsReason};
use crate::model::Model;

/// A validation block's trust fields.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    pub refs: &'a [LocalObjectReference],
    pub bundle: Option<&'a ClusterTrustBundleRef>,
    pub well_known: Option<&'a str>,
}

impl Sources<'_> {
    /// The reference fields that are set, as the messages name them.
    fn named(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.refs.is_empty() {
            out.push("caCertificateRefs");
        }
        if self.bundle.is_some() {
            out.push("clusterTrustBundleRef");
        }
        out
    }
}

/// The CA bundle a validation block trusts. Problems with single references that leave another valid go
/// to `problems`; the `Err` is what refuses the block.
pub fn trust(
    model: &Model,
    system_ca_path: &str,
    site: super::Site<'_>,
    s: Sources<'_>,
    problems: &mut Vec<TlsProblem>,
) -> Result<CaBundle, TlsProblem> {
    let field = site.field;
    let invalid = |m: String| Problem::accepted(TlsReason::Invalid, m);
    let named = s.named();
    match (named.is_empty(), s.well_known) {
        (false, Some(_)) => Err(invalid(format!(
            "{field}: must not contain both {} and wellKnownCACertificates",
            named.join(" and ")
        ))),
        (true, None) => Err(invalid(format!(
            "{field}: must specify caCertificateRefs or clusterTrustBundleRef (or both), or wellKnownCACertificates"
        ))),
        (true, Some("System")) => Ok(system_ca(system_ca_path)),
        (true, Some(other)) => Err(invalid(format!(
            "{field}.wellKnownCACertificates: {other:?} is not supported; pier supports \"System\""
        ))),
        (false, None) => {
            let mut refs: Vec<CaRef> = s.refs.iter().map(CaRef::from).collect();
            if let Some(r) = s.bundle {
                match bundle_ref(r) {
                    Ok(r) => refs.push(r),
                    Err(p) => problems.push(p),
                }
            }
            let ca = resolve_ca_refs(
                model,
                site.namespace,
                &refs,
                site.owner,
                CaKinds::WithClusterTrustBundle,
            );
            problems.extend(ca.problems);
            ca.bundle.ok_or_else(|| {
                let at = match named.as_slice() {
                    [one] => format!("{field}.{one}"),
                    _ => format!("{field} ({})", named.join(", ")),
                };
                Problem::accepted(
                    TlsReason::NoValidCACertificate,
                    format!("{at}: no valid CA certificate"),
                )
            })
        }
    }
}

/// `clusterTrustBundleRef` as a CA reference; group and kind default to the only ones it may name.
fn bundle_ref(r: &ClusterTrustBundleRef) -> Result<CaRef, TlsProblem> {
    let group = r.group.as_deref().unwrap_or(CERTIFICATES_GROUP);
    let kind = r.kind.as_deref().unwrap_or(KIND_CLUSTER_TRUST_BUNDLE);
    if (group, kind) != (CERTIFICATES_GROUP, KIND_CLUSTER_TRUST_BUNDLE) {
        let group = if group.is_empty() { "core" } else { group };
        return Err(Problem::refs(
            TlsReason::InvalidKind,
            format!(
                "clusterTrustBundleRef {group}/{kind} {:?}: only {CERTIFICATES_GROUP} {KIND_CLUSTER_TRUST_BUNDLE} is supported",
                r.name
            ),
        ));
    }
    Ok(CaRef {
        group: group.to_string(),
        kind: kind.to_string(),
        name: r.name.clone(),
        key: CA_CERT_KEY.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::tls::Site;
    use crate::ir;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";

    fn model() -> Model {
        let text = format!(
            "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {{name: roots}}\n\
             spec: {{trustBundle: {CERT:?}}}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ca, namespace: app}}\ndata: {{ca.crt: {CERT:?}}}\n"
        );
        crate::model::load::parse_texts(&[("t.yaml".into(), text)])
            .unwrap()
            .model
    }

    fn bundle(group: Option<&str>, kind: Option<&str>, name: &str) -> ClusterTrustBundleRef {
        ClusterTrustBundleRef {
            group: group.map(Into::into),
            kind: kind.map(Into::into),
            name: name.into(),
        }
    }

    fn config_map() -> LocalObjectReference {
        LocalObjectReference {
            group: String::new(),
            kind: "ConfigMap".into(),
            name: "ca".into(),
        }
    }

    fn run(s: Sources<'_>) -> (Result<CaBundle, TlsProblem>, Vec<TlsProblem>) {
        let site = Site {
            namespace: "app",
            owner: ("backendtlspolicy", "app", "p"),
            field: "spec.validation",
        };
        let mut problems = Vec::new();
        let out = trust(&model(), "/ca.pem", site, s, &mut problems);
        (out, problems)
    }

    fn sources<'a>(refs: &'a [LocalObjectReference], bundle: Option<&'a ClusterTrustBundleRef>) -> Sources<'a> {
        Sources {
            refs,
            bundle,
            well_known: None,
        }
    }

    #[test]
    fn the_bundle_ref_alone_is_a_trust_source_served_as_the_bundle() {
        for r in [
            bundle(None, None, "roots"),
            bundle(Some(CERTIFICATES_GROUP), Some(KIND_CLUSTER_TRUST_BUNDLE), "roots"),
        ] {
            let (out, problems) = run(sources(&[], Some(&r)));
            assert!(problems.is_empty(), "{problems:?}");
            let ca = out.unwrap();
            assert_eq!(ca.secret_name, "ca/clustertrustbundle/roots");
            assert_eq!(ca.secret, ir::Secret::CaBundle { pem: CERT.into() });
        }
    }

    #[test]
    fn with_ca_certificate_refs_the_anchors_are_unioned() {
        let r = bundle(None, None, "roots");
        let (out, problems) = run(sources(&[config_map()], Some(&r)));
        assert!(problems.is_empty(), "{problems:?}");
        let ca = out.unwrap();
        assert_eq!(ca.secret_name, "ca-bundle/backendtlspolicy/app/p");
        assert_eq!(
            ca.secret,
            ir::Secret::CaBundle {
                pem: format!("{CERT}{CERT}")
            }
        );
    }

    #[test]
    fn an_invalid_bundle_ref_names_the_field_and_refuses_only_when_it_is_all_there_is() {
        let missing = bundle(None, None, "gone");
        let (out, problems) = run(sources(&[], Some(&missing)));
        let refused = out.unwrap_err();
        assert_eq!(refused.reason, TlsReason::NoValidCACertificate);
        assert_eq!(
            refused.message,
            "spec.validation.clusterTrustBundleRef: no valid CA certificate"
        );
        assert_eq!(problems[0].reason, TlsReason::InvalidCACertificateRef);
        assert_eq!(problems[0].message, "ClusterTrustBundle gone not found");

        let wrong = bundle(Some(""), Some("ConfigMap"), "ca");
        let (out, problems) = run(sources(&[config_map()], Some(&wrong)));
        assert_eq!(
            out.unwrap().secret_name,
            "ca/configmap/app/ca",
            "the ConfigMap still serves"
        );
        assert_eq!(problems[0].reason, TlsReason::InvalidKind);
        assert_eq!(
            problems[0].message,
            "clusterTrustBundleRef core/ConfigMap \"ca\": only certificates.k8s.io ClusterTrustBundle is supported"
        );
    }

    #[test]
    fn well_known_excludes_the_bundle_ref_and_nothing_at_all_is_invalid() {
        let r = bundle(None, None, "roots");
        let (out, _) = run(Sources {
            well_known: Some("System"),
            ..sources(&[], Some(&r))
        });
        let e = out.unwrap_err();
        assert_eq!(e.reason, TlsReason::Invalid);
        assert_eq!(
            e.message,
            "spec.validation: must not contain both clusterTrustBundleRef and wellKnownCACertificates"
        );
        let e = run(sources(&[], None)).0.unwrap_err();
        assert_eq!(
            e.message,
            "spec.validation: must specify caCertificateRefs or clusterTrustBundleRef (or both), or wellKnownCACertificates"
        );
    }
}
