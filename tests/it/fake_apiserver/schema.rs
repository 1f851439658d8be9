//! Objects and status writes pruned and validated against the kind's structural schema, as the API
//! server does: a field the schema lacks vanishes (silently, as in a cluster), and an object missing a
//! required field is refused with 422. The schemas are the CRDs themselves: `pier crds` for pier's own
//! kinds (XBackend, the GEP-4488 Backend, Envoy Gateway's Backend), and the `gateway-api` crate's
//! `CustomResourceExt::crd()` for the Gateway API kinds (the experimental channel where the crate has
//! it, the superset a cluster running either channel accepts). Core kinds go through their k8s-openapi
//! type, which is what the API server's decoder does with a built-in kind: unknown fields are dropped,
//! a field of the wrong type is refused. This is what caught XBackend status written as `status.parents[].ancestorRef`
//! while the v1.7 schema has `status.ancestors`: every test passed, and a cluster would have dropped it.
//!
//! What it cannot show: upstream's own CRDs can differ from the crate's generated ones (the experimental
//! channel carries fields the crate lacks), and CEL validation rules are not evaluated.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use kube::CustomResourceExt;
use serde_json::Value;

/// `(group, plural, version)` → the version's `openAPIV3Schema`.
fn schemas() -> &'static BTreeMap<(String, String, String), Value> {
    static SCHEMAS: OnceLock<BTreeMap<(String, String, String), Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        use gateway_api::apis::experimental as exp;
        use gateway_api::apis::standard as std_;
        let crds = [
            exp::gatewayclasses::GatewayClass::crd(),
            exp::gateways::Gateway::crd(),
            exp::httproutes::HttpRoute::crd(),
            exp::grpcroutes::GrpcRoute::crd(),
            exp::referencegrants::ReferenceGrant::crd(),
            std_::backendtlspolicies::BackendTlsPolicy::crd(),
        ]
        .into_iter()
        .chain(pier::crds::crds());
        let mut out = BTreeMap::new();
        for crd in crds {
            let crd = serde_json::to_value(&crd).expect("a CRD serializes");
            let (group, plural) = (&crd["spec"]["group"], &crd["spec"]["names"]["plural"]);
            for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
                let key = (
                    group.as_str().unwrap_or_default().to_string(),
                    plural.as_str().unwrap_or_default().to_string(),
                    v["name"].as_str().unwrap_or_default().to_string(),
                );
                out.insert(key, v["schema"]["openAPIV3Schema"].clone());
            }
        }
        // The crate has BackendTLSPolicy from the standard channel only; the experimental channel's CRD
        // adds GEP-5075's `validation.clusterTrustBundleRef` (`pier::api::validation`).
        let key = (
            "gateway.networking.k8s.io".to_string(),
            "backendtlspolicies".to_string(),
            "v1".to_string(),
        );
        if let Some(schema) = out.get_mut(&key) {
            schema["properties"]["spec"]["properties"]["validation"]["properties"]["clusterTrustBundleRef"] =
                serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        }
        out
    })
}

/// What happens to a field the schema lacks: dropped silently (the API server's default for CRDs), or
/// the request refused (`fieldValidation=Strict`, what kubectl asks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    Prune,
    Strict,
}

/// What a check found: invalid values, and fields the schema lacks (already pruned).
#[derive(Default)]
struct Found {
    errors: Vec<String>,
    unknown: Vec<String>,
}

impl Found {
    fn verdict(self, fields: Fields) -> Result<(), String> {
        if fields == Fields::Strict && !self.unknown.is_empty() {
            let unknown: Vec<String> = self.unknown.iter().map(|u| format!("unknown field \"{u}\"")).collect();
            return Err(format!("strict decoding error: {}", unknown.join(", ")));
        }
        self.errors.first().map_or(Ok(()), |e| Err(e.clone()))
    }
}

/// Prunes `status` to the kind's status schema; `Err` names a required field it lacks. Kinds without a
/// schema here (core kinds, Leases) are left as they are.
pub fn status(group: &str, plural: &str, version: &str, status: &mut Value, fields: Fields) -> Result<(), String> {
    let Some(schema) = schemas().get(&(group.to_string(), plural.to_string(), version.to_string())) else {
        return Ok(());
    };
    let status_schema = &schema["properties"]["status"];
    if status_schema.is_null() || status.is_null() {
        return Ok(());
    }
    let mut found = Found::default();
    prune(status, status_schema, "status", &mut found);
    found.verdict(fields)
}

/// Prunes a whole object as a create or update would: a custom resource to its schema (metadata is the
/// API server's own), a core kind through its type. `Err` says what is invalid.
pub fn object(group: &str, plural: &str, version: &str, obj: &mut Value, fields: Fields) -> Result<(), String> {
    let mut found = Found::default();
    if let Some(schema) = schemas().get(&(group.to_string(), plural.to_string(), version.to_string())) {
        if let Value::Object(map) = obj {
            let props = properties(schema).unwrap_or_default();
            map.retain(|k, _| {
                let known = matches!(k.as_str(), "apiVersion" | "kind" | "metadata") || props.contains_key(k);
                if !known {
                    found.unknown.push(k.clone());
                }
                known
            });
            for (k, v) in map.iter_mut().filter(|(k, _)| k.as_str() != "metadata") {
                if let Some(s) = props.get(k) {
                    prune(v, s, k, &mut found);
                }
            }
        }
    } else {
        let before = obj.clone();
        core(plural, obj).map_err(|e| format!("decoding: {e}"))?;
        dropped(&before, obj, "", &mut found.unknown);
    }
    found.verdict(fields)
}

/// Keys of `before` that `after` lacks (null values aside): what a typed decode dropped.
fn dropped(before: &Value, after: &Value, at: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, v) in b {
                let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
                match a.get(k) {
                    None if !v.is_null() => out.push(path),
                    Some(av) => dropped(v, av, &path, out),
                    None => {}
                }
            }
        }
        (Value::Array(b), Value::Array(a)) => {
            for (i, (bv, av)) in b.iter().zip(a).enumerate() {
                dropped(bv, av, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// A core kind decoded into its k8s-openapi type and encoded again.
fn core(plural: &str, obj: &mut Value) -> Result<(), String> {
    use k8s_openapi::api::{apps, coordination, core::v1 as core, discovery, networking, policy, rbac};
    fn through<T: serde::de::DeserializeOwned + serde::Serialize>(obj: &mut Value) -> Result<(), String> {
        let typed: T = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
        *obj = serde_json::to_value(typed).map_err(|e| e.to_string())?;
        Ok(())
    }
    match plural {
        "services" => through::<core::Service>(obj),
        "secrets" => through::<core::Secret>(obj),
        "configmaps" => through::<core::ConfigMap>(obj),
        "namespaces" => through::<core::Namespace>(obj),
        "pods" => through::<core::Pod>(obj),
        "serviceaccounts" => through::<core::ServiceAccount>(obj),
        "endpointslices" => through::<discovery::v1::EndpointSlice>(obj),
        "leases" => through::<coordination::v1::Lease>(obj),
        "deployments" => through::<apps::v1::Deployment>(obj),
        "poddisruptionbudgets" => through::<policy::v1::PodDisruptionBudget>(obj),
        "networkpolicies" => through::<networking::v1::NetworkPolicy>(obj),
        "clusterroles" => through::<rbac::v1::ClusterRole>(obj),
        "clusterrolebindings" => through::<rbac::v1::ClusterRoleBinding>(obj),
        "roles" => through::<rbac::v1::Role>(obj),
        "rolebindings" => through::<rbac::v1::RoleBinding>(obj),
        _ => Ok(()),
    }
}

/// The properties a schema node allows: its own and those of its `allOf` / `anyOf` / `oneOf` branches.
fn properties(schema: &Value) -> Option<serde_json::Map<String, Value>> {
    let mut out = schema["properties"].as_object().cloned();
    for key in ["allOf", "anyOf", "oneOf"] {
        for branch in schema[key].as_array().into_iter().flatten() {
            if let Some(p) = properties(branch) {
                out.get_or_insert_with(Default::default).extend(p);
            }
        }
    }
    out
}

fn prune(value: &mut Value, schema: &Value, at: &str, found: &mut Found) {
    if schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true) {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(props) = properties(schema) {
                map.retain(|k, _| {
                    let known = props.contains_key(k);
                    if !known {
                        found.unknown.push(format!("{at}.{k}"));
                    }
                    known
                });
                for (k, v) in map.iter_mut() {
                    prune(v, &props[k], &format!("{at}.{k}"), found);
                }
            } else if schema["additionalProperties"].is_object() {
                for (k, v) in map.iter_mut() {
                    prune(v, &schema["additionalProperties"], &format!("{at}.{k}"), found);
                }
            }
            for r in schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(r) {
                    found.errors.push(format!("{at}.{r}: Required value"));
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for (i, item) in items.iter_mut().enumerate() {
                prune(item, &schema["items"], &format!("{at}[{i}]"), found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_xbackend_status_in_the_v16_shape_does_not_survive() {
        let gw = json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "default", "name": "gw"});
        let entry = |r: &str| json!({"controllerName": "pier.dev/gateway-controller", r: gw, "conditions": []});
        let mut v17 = json!({"ancestors": [entry("ancestorRef")], "unknown": 1});
        status(
            "gateway.networking.x-k8s.io",
            "xbackends",
            "v1alpha1",
            &mut v17,
            Fields::Prune,
        )
        .unwrap();
        assert_eq!(
            v17,
            json!({"ancestors": [entry("ancestorRef")]}),
            "pruned to the schema"
        );
        let mut half = json!({"parents": [entry("ancestorRef")]});
        let e = status(
            "gateway.networking.x-k8s.io",
            "xbackends",
            "v1alpha1",
            &mut half,
            Fields::Prune,
        )
        .unwrap_err();
        assert_eq!(e, "status.parents[0].parentRef: Required value");
    }
}
