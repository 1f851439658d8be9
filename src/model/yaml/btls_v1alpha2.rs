//! BackendTLSPolicy `gateway.networking.k8s.io/v1alpha2`, read into the v1 type so the translator sees
//! one kind. Skipping it (as pier once did) let its target go out in plaintext, so it is read, not
//! warned about.
//!
//! v1alpha2 was written in two shapes. Gateway API v1.0's: one `spec.targetRef` (with an optional
//! `namespace`) and `spec.tls {caCertRefs, wellKnownCACerts, hostname}`; the `gateway-api` crate has
//! no type for it, so it is declared here, strictly, and mapped field by field. Manifests written
//! later sometimes put the v1alpha3/v1 shape (`targetRefs`, `validation`) under `v1alpha2`: that is
//! read as v1, which it is.

use gateway_api::apis::standard::backendtlspolicies::{
    BackendTlsPolicy, BackendTlsPolicySpec, BackendTlsPolicyTargetRefs, BackendTlsPolicyValidation,
    BackendTlsPolicyValidationCaCertificateRefs,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

use super::kinds::typed;
use super::{Location, ParseError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    target_ref: TargetRef,
    tls: Tls,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TargetRef {
    #[serde(default)]
    group: String,
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    section_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Tls {
    #[serde(default)]
    ca_cert_refs: Option<Vec<CaRef>>,
    #[serde(default, rename = "wellKnownCACerts")]
    well_known_ca_certs: Option<String>,
    hostname: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaRef {
    #[serde(default)]
    group: String,
    kind: String,
    name: String,
}

/// Decodes a v1alpha2 BackendTLSPolicy (either shape) into the v1 type.
pub(super) fn decode(mut value: Value, at: &Location) -> Result<BackendTlsPolicy, ParseError> {
    let spec = value.get("spec");
    let v1_0_shape = spec.is_some_and(|s| s.get("targetRef").is_some() || s.get("tls").is_some());
    if !v1_0_shape {
        return typed(value, at, "");
    }
    let metadata = value.get_mut("metadata").map(Value::take).unwrap_or_default();
    let metadata: ObjectMeta = typed(metadata, at, "metadata")?;
    let spec = value.get_mut("spec").map(Value::take).unwrap_or_default();
    let Spec { target_ref, tls } = typed(spec, at, "spec")?;
    let own = metadata.namespace.as_deref().unwrap_or_default();
    if let Some(ns) = target_ref.namespace.as_deref().filter(|ns| *ns != own) {
        // v1 has no cross-namespace target; mapping it to the same name here would protect the wrong
        // Service, and dropping it would leave the named one in plaintext.
        return Err(ParseError::Field {
            at: at.clone(),
            path: "spec.targetRef.namespace".into(),
            message: format!(
                "{ns:?}: a BackendTLSPolicy may only target objects in its own namespace ({own:?}); move the policy there"
            ),
        });
    }
    let validation = BackendTlsPolicyValidation {
        ca_certificate_refs: tls.ca_cert_refs.map(|refs| {
            refs.into_iter()
                .map(|r| BackendTlsPolicyValidationCaCertificateRefs {
                    group: r.group,
                    kind: r.kind,
                    name: r.name,
                })
                .collect()
        }),
        well_known_ca_certificates: tls.well_known_ca_certs,
        hostname: tls.hostname,
        ..Default::default()
    };
    Ok(BackendTlsPolicy {
        metadata,
        spec: BackendTlsPolicySpec {
            target_refs: vec![BackendTlsPolicyTargetRefs {
                group: target_ref.group,
                kind: target_ref.kind,
                name: target_ref.name,
                section_name: target_ref.section_name,
            }],
            validation,
            ..Default::default()
        },
        // Status is pier's to write; an old version's is not carried over.
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::model::Object;

    type Policy = crate::api::stored::Stored<gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicySpec>;

    fn policy(text: &str) -> Result<Policy, String> {
        let parsed = crate::model::yaml::parse("p.yaml", text).map_err(|e| e.to_string())?;
        match parsed.objects.into_iter().next() {
            Some((_, Object::BackendTlsPolicy(p))) => Ok(p.policy),
            _ => Err("not a BackendTLSPolicy".into()),
        }
    }

    const HEAD: &str =
        "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: BackendTLSPolicy\nmetadata: {name: p, namespace: app}\n";

    #[test]
    fn the_v1_0_shape_maps_onto_v1() {
        let p = policy(&format!(
            "{HEAD}spec:\n  targetRef: {{group: '', kind: Service, name: web, namespace: app, sectionName: https}}\n  \
             tls: {{caCertRefs: [{{group: '', kind: ConfigMap, name: ca}}], hostname: web.example.com}}\n"
        ))
        .unwrap();
        let t = &p.spec.target_refs[0];
        assert_eq!(
            (t.kind.as_str(), t.name.as_str(), t.section_name.as_deref()),
            ("Service", "web", Some("https"))
        );
        assert_eq!(p.spec.validation.hostname, "web.example.com");
        assert_eq!(p.spec.validation.ca_certificate_refs.as_ref().unwrap()[0].name, "ca");
        let system = policy(&format!(
            "{HEAD}spec:\n  targetRef: {{group: '', kind: Service, name: web}}\n  tls: {{wellKnownCACerts: System, hostname: h}}\n"
        ))
        .unwrap();
        assert_eq!(
            system.spec.validation.well_known_ca_certificates.as_deref(),
            Some("System")
        );
    }

    #[test]
    fn the_later_shape_under_v1alpha2_reads_as_v1() {
        let p = policy(&format!(
            "{HEAD}spec: {{targetRefs: [{{group: '', kind: Service, name: web}}], validation: {{hostname: h, wellKnownCACertificates: System}}}}\n"
        ))
        .unwrap();
        assert_eq!(p.spec.target_refs[0].name, "web");
    }

    #[test]
    fn what_cannot_be_mapped_is_an_error_naming_the_field() {
        let other_ns = policy(&format!(
            "{HEAD}spec:\n  targetRef: {{group: '', kind: Service, name: web, namespace: other}}\n  tls: {{wellKnownCACerts: System, hostname: h}}\n"
        ))
        .unwrap_err();
        assert!(other_ns.contains("spec.targetRef.namespace"), "{other_ns}");
        let unknown = policy(&format!(
            "{HEAD}spec:\n  targetRef: {{group: '', kind: Service, name: web}}\n  tls: {{wellKnownCACerts: System, hostname: h, sni: x}}\n"
        ))
        .unwrap_err();
        assert!(unknown.contains("spec.tls"), "{unknown}");
    }
}
