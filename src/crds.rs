//! `pier crds`: the CustomResourceDefinitions pier needs that upstream Gateway API releases do not ship,
//! generated from pier's own Rust types (kube's `CustomResourceExt`, schemas by schemars), so the CRD a
//! cluster validates against is exactly what pier parses.
//!
//! - `xbackends.gateway.networking.x-k8s.io`: upstream's experimental v1.6 CRD refuses
//!   `type: EndpointSelector`; pier's replaces it (same name) and accepts it.
//! - `backends.gateway.networking.k8s.io`: the GEP-4488 `Backend` (the XBackend spec in the standard
//!   group). The older draft shape (`spec.destination`) is read from files only; its CRD would fail the
//!   structural-schema rules with two spec shapes under one version.
//! - `backends.gateway.envoyproxy.io`: Envoy Gateway's `Backend`, for clusters without Envoy Gateway.
//!   Where Envoy Gateway is installed, keep its CRD (pier reads the same objects).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::api::eg::EgBackend;
use crate::api::xbackend::XBackend;

/// Marks the CRDs pier generated, so an operator can tell them from upstream's.
pub const GENERATED_BY: &str = "pier.dev/generated-by";

/// Every CRD `pier crds` prints, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut backend = XBackend::crd();
    backend.spec.group = crate::api::consts::GATEWAY_GROUP.to_string();
    backend.spec.names.kind = "Backend".to_string();
    backend.spec.names.list_kind = Some("BackendList".to_string());
    backend.spec.names.plural = "backends".to_string();
    backend.spec.names.singular = Some("backend".to_string());
    backend.metadata.name = Some(format!("backends.{}", crate::api::consts::GATEWAY_GROUP));
    let mut out = vec![XBackend::crd(), backend, EgBackend::crd()];
    for crd in &mut out {
        crd.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(GENERATED_BY.to_string(), format!("pier {}", env!("CARGO_PKG_VERSION")));
    }
    out
}

/// The CRDs as one multi-document YAML stream.
pub fn yaml() -> Result<String, serde_saphyr::SerializeError> {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&crate::model::yaml::to_yaml(&crd)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_crds_and_xbackend_accepts_endpoint_selector() {
        let all = crds();
        let names: Vec<_> = all.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                "xbackends.gateway.networking.x-k8s.io",
                "backends.gateway.networking.k8s.io",
                "backends.gateway.envoyproxy.io"
            ]
        );
        let text = serde_json::to_string(&all[0]).unwrap();
        assert!(
            text.contains("EndpointSelector") && text.contains("endpointSelector"),
            "{text}"
        );
        for crd in &all {
            let v = &crd.spec.versions[0];
            assert!(
                v.subresources.as_ref().unwrap().status.is_some(),
                "{:?} has a status subresource",
                crd.metadata.name
            );
        }
        assert!(yaml().unwrap().matches("kind: CustomResourceDefinition").count() == 3);
    }
}
