//! What the fake API server serves, and the discovery documents that describe it (`/api`, `/apis`, each
//! group version's resource list, `/version`), which is how kubectl finds a kind's resource, scope and
//! verbs. Legacy discovery only: a client asking for aggregated discovery gets the legacy documents with
//! their own content type and reads those, as it does from an older API server.

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// (group, plural, kind, namespaced, versions served).
pub const RESOURCES: &[(&str, &str, &str, bool, &[&str])] = &[
    ("", "services", "Service", true, &["v1"]),
    ("", "secrets", "Secret", true, &["v1"]),
    ("", "configmaps", "ConfigMap", true, &["v1"]),
    ("", "namespaces", "Namespace", false, &["v1"]),
    ("", "pods", "Pod", true, &["v1"]),
    ("discovery.k8s.io", "endpointslices", "EndpointSlice", true, &["v1"]),
    (
        "certificates.k8s.io",
        "clustertrustbundles",
        "ClusterTrustBundle",
        false,
        &["v1beta1"],
    ),
    ("coordination.k8s.io", "leases", "Lease", true, &["v1"]),
    (
        "gateway.networking.k8s.io",
        "gatewayclasses",
        "GatewayClass",
        false,
        &["v1"],
    ),
    ("gateway.networking.k8s.io", "gateways", "Gateway", true, &["v1"]),
    ("gateway.networking.k8s.io", "httproutes", "HTTPRoute", true, &["v1"]),
    ("gateway.networking.k8s.io", "grpcroutes", "GRPCRoute", true, &["v1"]),
    (
        "gateway.networking.k8s.io",
        "referencegrants",
        "ReferenceGrant",
        true,
        &["v1", "v1beta1"],
    ),
    (
        "gateway.networking.k8s.io",
        "backendtlspolicies",
        "BackendTLSPolicy",
        true,
        &["v1"],
    ),
    ("gateway.networking.k8s.io", "backends", "Backend", true, &["v1alpha1"]),
    (
        "gateway.networking.x-k8s.io",
        "xbackends",
        "XBackend",
        true,
        &["v1alpha1"],
    ),
    ("gateway.envoyproxy.io", "backends", "Backend", true, &["v1alpha1"]),
    // Kinds pier never watches, here so that kubectl can apply `deploy/` as to a cluster.
    ("", "serviceaccounts", "ServiceAccount", true, &["v1"]),
    ("apps", "deployments", "Deployment", true, &["v1"]),
    ("policy", "poddisruptionbudgets", "PodDisruptionBudget", true, &["v1"]),
    ("networking.k8s.io", "networkpolicies", "NetworkPolicy", true, &["v1"]),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "ClusterRole",
        false,
        &["v1"],
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &["v1"],
    ),
    ("rbac.authorization.k8s.io", "roles", "Role", true, &["v1"]),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        "RoleBinding",
        true,
        &["v1"],
    ),
];

/// The discovery document at `path`, if it is one.
pub fn discovery(path: &str, uninstalled: &std::collections::BTreeSet<(String, String)>) -> Option<Response> {
    let served = || {
        RESOURCES
            .iter()
            .filter(|r| !uninstalled.contains(&(r.0.to_string(), r.1.to_string())))
    };
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let body = match segs.as_slice() {
        ["version"] => json!({"major": "1", "minor": "37", "gitVersion": "v1.37.0-fake", "platform": "linux/amd64"}),
        ["api"] => json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
        ["apis"] => {
            let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
            for r in served().filter(|r| !r.0.is_empty()) {
                match groups.iter_mut().find(|(g, _)| *g == r.0) {
                    Some((_, versions)) => {
                        for v in r.4 {
                            if !versions.contains(v) {
                                versions.push(v);
                            }
                        }
                    }
                    None => groups.push((r.0, r.4.to_vec())),
                }
            }
            let groups: Vec<Value> = groups
                .iter()
                .map(|(g, versions)| {
                    let gv = |v: &&str| json!({"groupVersion": format!("{g}/{v}"), "version": v});
                    json!({"name": g, "versions": versions.iter().map(gv).collect::<Vec<_>>(),
                        "preferredVersion": gv(&versions[0])})
                })
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        ["api", version] => resource_list("", version, served()),
        ["apis", group, version] => resource_list(group, version, served()),
        ["openapi", "v3"] => {
            let mut paths = serde_json::Map::new();
            for r in served() {
                for v in r.4 {
                    let gv = group_version_path(r.0, v);
                    paths.insert(
                        gv.clone(),
                        json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash=fake")}),
                    );
                }
            }
            json!({"paths": paths})
        }
        ["openapi", "v3", "api", version] => openapi("", version, served()),
        ["openapi", "v3", "apis", group, version] => openapi(group, version, served()),
        _ => return None,
    };
    Some(axum::Json(body).into_response())
}

fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A group version's OpenAPI v3 document, as far as kubectl reads it: each kind's PATCH operation,
/// tagged with its group-version-kind and taking `fieldValidation`, which tells kubectl to leave
/// validation to the server (`fieldValidation=Strict`) instead of validating against schemas itself.
fn openapi<'a>(
    group: &str,
    version: &str,
    served: impl Iterator<Item = &'a (&'a str, &'a str, &'a str, bool, &'a [&'a str])>,
) -> Value {
    let mut paths = serde_json::Map::new();
    for r in served.filter(|r| r.0 == group && r.4.contains(&version)) {
        let base = group_version_path(group, version);
        let collection = if r.3 {
            format!("/{base}/namespaces/{{namespace}}/{}", r.1)
        } else {
            format!("/{base}/{}", r.1)
        };
        let patch = json!({"patch": {
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r.2},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}}}});
        paths.insert(format!("{collection}/{{name}}"), patch.clone());
        paths.insert(format!("{collection}/{{name}}/status"), patch);
    }
    json!({"openapi": "3.0.0", "info": {"title": "Kubernetes (fake)", "version": "v1.37.0"}, "paths": paths,
        "components": {"schemas": {}}})
}

fn resource_list<'a>(
    group: &str,
    version: &str,
    served: impl Iterator<Item = &'a (&'a str, &'a str, &'a str, bool, &'a [&'a str])>,
) -> Value {
    let mut resources = Vec::new();
    for r in served.filter(|r| r.0 == group && r.4.contains(&version)) {
        resources.push(
            json!({"name": r.1, "singularName": r.2.to_lowercase(), "namespaced": r.3, "kind": r.2,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}),
        );
        resources.push(
            json!({"name": format!("{}/status", r.1), "singularName": "", "namespaced": r.3,
            "kind": r.2, "verbs": ["get", "patch", "update"]}),
        );
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}
