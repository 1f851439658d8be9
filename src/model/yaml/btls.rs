//! BackendTLSPolicy in every version pier reads, into [`BackendTlsPolicy`]: the crate's v1 type (v1 and
//! v1alpha3 typed directly, v1alpha2 through `btls_v1alpha2`) and the validation fields that type lacks
//! ([`ValidationExtras`], `api::validation`), taken out of `spec.validation` first so the crate's type,
//! which ignores unknown fields, never sees them. Gateway API v1.0's v1alpha2 shape has no `validation`
//! (its `spec.tls` is strict), so it never carries them.

use serde_json::Value;

use super::kinds::typed;
use super::{Location, ParseError};
use gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicy as StandardPolicy;

use crate::api::stored::Stored;
use crate::api::validation::{BackendTlsPolicy, ValidationExtras};

pub(super) fn decode(mut value: Value, at: &Location, v1alpha2: bool) -> Result<BackendTlsPolicy, ParseError> {
    let validation = take_extras(&mut value, at)?;
    let policy: StandardPolicy = if v1alpha2 {
        super::btls_v1alpha2::decode(value, at)?
    } else {
        typed(value, at, "")?
    };
    Ok(BackendTlsPolicy {
        policy: Stored::new(policy.metadata, policy.spec),
        validation,
    })
}

/// Removes [`ValidationExtras::FIELDS`] from `spec.validation` and types them, with their paths in errors.
fn take_extras(value: &mut Value, at: &Location) -> Result<ValidationExtras, ParseError> {
    let Some(validation) = value.pointer_mut("/spec/validation").and_then(Value::as_object_mut) else {
        return Ok(ValidationExtras::default());
    };
    let taken: serde_json::Map<String, Value> = ValidationExtras::FIELDS
        .iter()
        .filter_map(|f| validation.remove(*f).map(|v| (f.to_string(), v)))
        .collect();
    typed(Value::Object(taken), at, "spec.validation")
}

#[cfg(test)]
mod tests {
    use crate::model::Object;

    fn policy(api_version: &str, validation: &str) -> Result<super::BackendTlsPolicy, String> {
        let text = format!(
            "apiVersion: gateway.networking.k8s.io/{api_version}\nkind: BackendTLSPolicy\nmetadata: {{name: p, namespace: app}}\n\
             spec: {{targetRefs: [{{group: '', kind: Service, name: web}}], validation: {validation}}}\n"
        );
        let parsed = crate::model::yaml::parse("p.yaml", &text).map_err(|e| e.to_string())?;
        match parsed.objects.into_iter().next() {
            Some((_, Object::BackendTlsPolicy(p))) => Ok(p),
            _ => Err("not a BackendTLSPolicy".into()),
        }
    }

    #[test]
    fn every_version_keeps_the_cluster_trust_bundle_ref_beside_the_standard_fields() {
        for version in ["v1", "v1alpha3", "v1alpha2"] {
            let p = policy(
                version,
                "{hostname: h, caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], \
                 clusterTrustBundleRef: {group: certificates.k8s.io, kind: ClusterTrustBundle, name: roots}}",
            )
            .unwrap();
            assert_eq!(p.policy.spec.validation.hostname, "h", "{version}");
            assert_eq!(p.policy.spec.validation.ca_certificate_refs.as_ref().unwrap().len(), 1);
            let r = p.validation.cluster_trust_bundle_ref.expect(version);
            assert_eq!(
                (r.group.as_deref(), r.kind.as_deref(), r.name.as_str()),
                (Some("certificates.k8s.io"), Some("ClusterTrustBundle"), "roots")
            );
        }
        let plain = policy("v1", "{hostname: h, wellKnownCACertificates: System}").unwrap();
        assert_eq!(plain.validation, Default::default());
    }

    #[test]
    fn a_malformed_bundle_ref_is_an_error_naming_the_field() {
        let e = policy("v1", "{hostname: h, clusterTrustBundleRef: {kind: ClusterTrustBundle}}").unwrap_err();
        assert!(e.contains("spec.validation.clusterTrustBundleRef"), "{e}");
        assert!(e.contains("name"), "{e}");
    }
}
