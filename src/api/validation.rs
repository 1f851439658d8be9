//! What Gateway API's `BackendTLSPolicyValidation` has that the `gateway-api` crate's type lacks: GEP-5075's
//! `clusterTrustBundleRef` (experimental), a ClusterTrustBundle whose trust anchors join those of
//! `caCertificateRefs`. The crate generates its types from the standard channel, where the field does not
//! exist, and the type does not refuse unknown fields, so left alone the field would be dropped without a
//! word — and a policy whose only trust source it is would read as having none.
//!
//! The crate's type is kept whole and the missing field travels beside it ([`ValidationExtras`]), as
//! `model::HttpRouteExtras` does for HTTPRoute rules; nothing the crate has is declared again here.
//! Two carriers, because the validation block sits in two kinds of object:
//!
//! - the XBackend / GEP Backend `spec.tls.validation`, in pier's own spec: [`BackendTlsValidation`]
//!   flattens the crate's type and the extras into one field, so `pier crds` prints the field too and an
//!   API server does not prune it;
//! - BackendTLSPolicy, the crate's whole type: the parser takes the extras out of `spec.validation` before
//!   typing (`model::yaml::btls`) and [`BackendTlsPolicy`] holds both. They are one object in the model
//!   (one map entry, one `Arc`), so a change to either is a change to the policy for the translator, NACK
//!   containment and the Kubernetes source alike.

use gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicySpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TlsValidation;

/// A cluster-scoped ClusterTrustBundle (certificates.k8s.io) whose `spec.trustBundle` joins the trust
/// anchors of `caCertificateRefs` (GEP-5075). Found by name alone: no ReferenceGrant is needed.
///
/// GEP-5075 first typed this as a `ClusterObjectReference` (group, kind and name, all required), later as
/// a `ClusterTrustBundleObjectRef` whose group and kind default; either is read. Any group or kind but
/// `certificates.k8s.io` `ClusterTrustBundle` is refused (`InvalidKind`).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterTrustBundleRef {
    /// Default `certificates.k8s.io`, the only group supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Default `ClusterTrustBundle`, the only kind supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The ClusterTrustBundle's name.
    pub name: String,
}

/// The validation fields the crate's `BackendTLSPolicyValidation` lacks. Empty for most objects.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ValidationExtras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_trust_bundle_ref: Option<ClusterTrustBundleRef>,
}

impl ValidationExtras {
    /// The JSON names of the fields, for the parser to take out of a crate-typed object.
    pub const FIELDS: [&'static str; 1] = ["clusterTrustBundleRef"];
}

/// `spec.tls.validation` of an XBackend or GEP Backend: Gateway API's validation type, whole. Unknown
/// fields are not refused at this level (`deny_unknown_fields` does not combine with `flatten`, and the
/// crate's type never refused them); the bundle reference itself is strict.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
pub struct BackendTlsValidation {
    #[serde(flatten)]
    pub standard: TlsValidation,
    #[serde(flatten)]
    pub extras: ValidationExtras,
}

/// A BackendTLSPolicy (any version pier reads, as v1) with the validation fields its type lacks.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendTlsPolicy {
    pub policy: super::stored::Stored<BackendTlsPolicySpec>,
    pub validation: ValidationExtras,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_validation_reads_the_standard_fields_and_the_bundle_ref() {
        let v: BackendTlsValidation = serde_json::from_value(serde_json::json!({
            "hostname": "h",
            "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "ca"}],
            "clusterTrustBundleRef": {"name": "roots"},
        }))
        .unwrap();
        assert_eq!(v.standard.hostname, "h");
        assert_eq!(v.standard.ca_certificate_refs.as_ref().unwrap()[0].name, "ca");
        let r = v.extras.cluster_trust_bundle_ref.unwrap();
        assert_eq!((r.group, r.kind, r.name.as_str()), (None, None, "roots"));
        let typo = serde_json::from_value::<BackendTlsValidation>(serde_json::json!({
            "hostname": "h", "clusterTrustBundleRef": {"nme": "roots"},
        }))
        .unwrap_err();
        assert!(typo.to_string().contains("nme"), "{typo}");
    }
}
