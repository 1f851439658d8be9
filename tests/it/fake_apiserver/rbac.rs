//! RBAC as the API server enforces it for pier's ServiceAccount: the rules `deploy/10-rbac.yaml` grants
//! (the ClusterRole cluster-wide, the Role in its own namespace), checked for every request by verb,
//! API group, resource and subresource, and namespace. Tests revoke single grants to see what pier does
//! without them; any other refusal is pier calling something the manifests do not grant, and
//! [`FakeApiServer::shutdown`](super::FakeApiServer::shutdown) fails the test for it.
//!
//! Requests from the client named [`ADMIN`] (kubectl, recognised by its user agent since it sends no
//! token over plain HTTP) are a cluster admin's and never checked. Aggregated roles, resourceNames and non-resource URLs are not modelled: pier's manifests use
//! none of them.

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use serde_json::Value;

/// The client RBAC does not apply to.
pub const ADMIN: &str = "admin";

/// A grant: (API group, resource or `resource/subresource`, verb).
pub type Grant = (String, String, String);

#[derive(Debug, Default)]
pub struct Rbac {
    /// Granted everywhere (the ClusterRole, bound by a ClusterRoleBinding).
    cluster: Vec<PolicyRule>,
    /// Granted in one namespace (a Role and its RoleBinding).
    namespaced: Vec<(String, PolicyRule)>,
    /// Grants a test took away.
    pub revoked: BTreeSet<Grant>,
    /// Refusals of grants no test revoked.
    pub unexpected: Vec<String>,
}

impl Rbac {
    /// The rules the manifests bind to pier's ServiceAccount.
    pub fn from_manifests() -> Rbac {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/10-rbac.yaml");
        let text = std::fs::read_to_string(path).expect("deploy/10-rbac.yaml");
        let mut rbac = Rbac::default();
        for doc in text.split("\n---").filter(|d| !d.trim().is_empty()) {
            let v: Value = serde_saphyr::from_str(doc).expect("an RBAC manifest parses");
            match v["kind"].as_str() {
                Some("ClusterRole") => {
                    let r: ClusterRole = serde_json::from_value(v).unwrap();
                    rbac.cluster.extend(r.rules.unwrap_or_default());
                }
                Some("Role") => {
                    let r: Role = serde_json::from_value(v).unwrap();
                    let ns = r.metadata.namespace.clone().expect("a Role has a namespace");
                    rbac.namespaced
                        .extend(r.rules.unwrap_or_default().into_iter().map(|rule| (ns.clone(), rule)));
                }
                _ => {}
            }
        }
        assert!(!rbac.cluster.is_empty(), "deploy/10-rbac.yaml has a ClusterRole");
        rbac
    }

    /// Every grant the manifests make, cluster-wide or not.
    pub fn grants(&self) -> BTreeSet<Grant> {
        grants_of(self.cluster.iter().chain(self.namespaced.iter().map(|(_, r)| r)))
    }

    /// Whether `verb` on `resource` (with `/subresource`) of `group` in `namespace` is allowed; records
    /// a refusal no test asked for.
    pub fn check(&mut self, verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> bool {
        let grant = (group.to_string(), resource.to_string(), verb.to_string());
        if self.revoked.contains(&grant) {
            return false;
        }
        let covers = |r: &PolicyRule| {
            let any = |list: &Option<Vec<String>>, want: &str| list.iter().flatten().any(|x| x == "*" || x == want);
            any(&r.api_groups, group) && any(&r.resources, resource) && (r.verbs.iter().any(|v| v == "*" || v == verb))
        };
        let allowed = self.cluster.iter().any(covers)
            || self
                .namespaced
                .iter()
                .any(|(ns, r)| Some(ns.as_str()) == namespace && covers(r));
        if !allowed {
            self.unexpected.push(format!(
                "{verb} {resource} in group {group:?} ({})",
                namespace.map_or("cluster scope".to_string(), |n| format!("namespace {n}"))
            ));
        }
        allowed
    }
}

/// The (group, resource, verb) triples a set of rules grants.
pub fn grants_of<'a>(rules: impl IntoIterator<Item = &'a PolicyRule>) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for r in rules {
        for g in r.api_groups.iter().flatten() {
            for res in r.resources.iter().flatten() {
                for v in &r.verbs {
                    out.insert((g.clone(), res.clone(), v.clone()));
                }
            }
        }
    }
    out
}

/// The verb a request is, as RBAC names it.
pub fn verb(method: &str, named: bool, watch: bool) -> &'static str {
    match (method, named) {
        ("GET", _) if watch => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "unknown",
    }
}
