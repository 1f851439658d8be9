//! The one table of what pier reads from and writes to the API server. The watchers, the status writer
//! and the ClusterRole test (`tests/it/kube/manifests.rs`) all derive from [`WATCHED`] and [`api_calls`], so
//! a kind added here is watched, written and granted together — or the RBAC test fails.

use kube::discovery::ApiResource;

/// A kind pier watches (and maybe writes the status of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchedKind {
    /// [`Object::kind_name`](crate::model::Object::kind_name) of the decoded objects.
    pub name: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// The status pier computes for this kind is written back.
    pub status: bool,
}

impl WatchedKind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.to_string(),
            version: self.version.to_string(),
            api_version: self.api_version(),
            kind: self.kind.to_string(),
            plural: self.plural.to_string(),
        }
    }

    /// Why the API server may not serve the kind: a CRD pier needs is not installed, or (for a built-in
    /// beta API such as ClusterTrustBundle, off by default) the cluster does not enable it.
    pub fn missing_hint(&self) -> &'static str {
        if self.group == CERTS {
            "API not enabled on this cluster?"
        } else {
            "CRD not installed?"
        }
    }

    /// How logs and warnings name the kind: `XBackend (gateway.networking.x-k8s.io/v1alpha1)`.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.kind, self.api_version())
    }
}

const GW: &str = "gateway.networking.k8s.io";
const XGW: &str = "gateway.networking.x-k8s.io";
const EG: &str = "gateway.envoyproxy.io";
const CERTS: &str = "certificates.k8s.io";

const fn kind(
    name: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    status: bool,
) -> WatchedKind {
    WatchedKind {
        name,
        group,
        version,
        kind,
        plural,
        namespaced,
        status,
    }
}

/// Every kind the model holds, at the version pier reads. ReferenceGrant is watched at v1 and v1beta1,
/// because a cluster's Gateway API install may serve either; the v1 watch wins when both are served.
/// ClusterTrustBundle is watched at v1beta1 only, although files may also be v1 (GA in Kubernetes 1.37) or
/// v1alpha1: the model holds k8s-openapi's v1beta1 type, and 0.28 (the line gateway-api 0.22 builds on)
/// has no v1 type. A cluster that does not serve v1beta1 (a beta API, off by default; 1.37+ may serve v1
/// only) reports the kind as not served, as it does a missing CRD. A v1 watch would decode into the same
/// type, as files do, shadowing v1beta1 as ReferenceGrant v1 does; it waits for a cluster that needs it.
#[rustfmt::skip]
pub const WATCHED: &[WatchedKind] = &[
    //   model name,                       group,               version,     kind,                  plural,                 namespaced, status
    kind("GatewayClass",                   GW,                  "v1",        "GatewayClass",        "gatewayclasses",       false,  true),
    kind("Gateway",                        GW,                  "v1",        "Gateway",             "gateways",             true,   true),
    kind("HTTPRoute",                      GW,                  "v1",        "HTTPRoute",           "httproutes",           true,   true),
    kind("GRPCRoute",                      GW,                  "v1",        "GRPCRoute",           "grpcroutes",           true,   true),
    kind("ReferenceGrant",                 GW,                  "v1",        "ReferenceGrant",      "referencegrants",      true,   false),
    kind("ReferenceGrant",                 GW,                  "v1beta1",   "ReferenceGrant",      "referencegrants",      true,   false),
    kind("BackendTLSPolicy",               GW,                  "v1",        "BackendTLSPolicy",    "backendtlspolicies",   true,   true),
    kind("XBackend",                       XGW,                 "v1alpha1",  "XBackend",            "xbackends",            true,   true),
    kind("Backend",                        GW,                  "v1alpha1",  "Backend",             "backends",             true,   true),
    kind("Backend.gateway.envoyproxy.io",  EG,                  "v1alpha1",  "Backend",             "backends",             true,   true),
    kind("Service",                        "",                  "v1",        "Service",             "services",             true,   false),
    kind("EndpointSlice",                  "discovery.k8s.io",  "v1",        "EndpointSlice",       "endpointslices",       true,   false),
    kind("Pod",                            "",                  "v1",        "Pod",                 "pods",                 true,   false),
    kind("Secret",                         "",                  "v1",        "Secret",              "secrets",              true,   false),
    kind("ConfigMap",                      "",                  "v1",        "ConfigMap",           "configmaps",           true,   false),
    kind("ClusterTrustBundle",             CERTS,               "v1beta1",   "ClusterTrustBundle",  "clustertrustbundles",  false,  false),
    kind("Namespace",                      "",                  "v1",        "Namespace",           "namespaces",           false,  false),
];

/// The kind whose status pier writes for an `ObjectStatus` of `api_version` and `kind`.
pub fn status_kind(api_version: &str, kind: &str) -> Option<&'static WatchedKind> {
    WATCHED
        .iter()
        .find(|k| k.status && k.kind == kind && k.api_version() == api_version)
}

/// Leader election's Lease (`coordination.k8s.io/v1`).
pub const LEASE_GROUP: &str = "coordination.k8s.io";
pub const LEASE_RESOURCE: &str = "leases";
/// What kube-lease-manager does with the Lease: read it, create it once, patch holder and renewals.
pub const LEASE_VERBS: &[&str] = &["get", "create", "patch"];

/// One RBAC grant pier needs: `verbs` on `resource` (a plural, or `plural/status`) in `group`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiCall {
    pub group: &'static str,
    pub resource: String,
    pub verbs: Vec<&'static str>,
}

/// Every API call pier makes, merged per resource. Watches list and watch every kind; the status writer
/// gets the object and replaces its status; the Kubernetes source gets a Secret or ConfigMap whose data
/// it dropped once a Gateway, Backend or policy starts referencing it; leader election uses the Lease.
pub fn api_calls() -> Vec<ApiCall> {
    let mut calls: std::collections::BTreeMap<(&'static str, String), Vec<&'static str>> = Default::default();
    let mut add = |group: &'static str, resource: String, verbs: &[&'static str]| {
        let entry = calls.entry((group, resource)).or_default();
        for v in verbs {
            if !entry.contains(v) {
                entry.push(v);
            }
        }
    };
    for k in WATCHED {
        add(k.group, k.plural.to_string(), &["list", "watch"]);
        if k.status {
            add(k.group, k.plural.to_string(), &["get"]);
            add(k.group, format!("{}/status", k.plural), &["update"]);
        }
        if k.name == "Secret" || k.name == "ConfigMap" {
            add(k.group, k.plural.to_string(), &["get"]);
        }
    }
    add(LEASE_GROUP, LEASE_RESOURCE.to_string(), LEASE_VERBS);
    calls
        .into_iter()
        .map(|((group, resource), mut verbs)| {
            verbs.sort_unstable();
            ApiCall { group, resource, verbs }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// That each name matches the parser's is `tests/it/kube/manifests.rs` (the parser is above `api`).
    #[test]
    fn status_kinds_resolve_and_api_calls_are_granted() {
        let gw = status_kind("gateway.networking.k8s.io/v1", "Gateway").unwrap();
        assert_eq!(gw.plural, "gateways");
        assert!(status_kind("v1", "Service").is_none());
        let calls = api_calls();
        let lease = calls.iter().find(|c| c.resource == "leases").unwrap();
        assert_eq!(lease.verbs, ["create", "get", "patch"]);
        assert!(
            calls
                .iter()
                .any(|c| c.resource == "httproutes/status" && c.verbs == ["update"])
        );
    }
}
