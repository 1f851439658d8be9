//! The shipped manifests: every document in `deploy/` parses into its Kubernetes type without losing a
//! field, the RBAC grants exactly the API calls pier makes (from the one table in
//! `api::kinds`), the example Envoy's bootstrap is what `pier bootstrap` prints, and the
//! command line documents the Kubernetes options.

use std::collections::BTreeSet;
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::fake_apiserver::rbac::grants_of as grants;

fn documents() -> Vec<(String, Value)> {
    let dir = format!("{}/deploy", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "deploy/ holds the manifests");
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let docs = pier::model::yaml::values(&f.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
        for v in docs.into_iter().flatten() {
            out.push((f.file_name().unwrap().to_string_lossy().into_owned(), v));
        }
    }
    out
}

/// Parses into `T` and back: a field `T` does not know would be lost, so the two must agree.
fn typed<T: DeserializeOwned + serde::Serialize>(file: &str, v: &Value) -> T {
    let name = format!("{file}: {} {}", v["kind"], v["metadata"]["name"]);
    let t: T = serde_path_to_error::deserialize(v.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        &serde_json::to_value(&t).unwrap(),
        v,
        "{name}: a field did not survive parsing"
    );
    t
}

#[test]
fn every_manifest_parses_into_its_kubernetes_type() {
    let mut kinds = BTreeSet::new();
    for (file, v) in documents() {
        let kind = v["kind"].as_str().unwrap().to_string();
        match kind.as_str() {
            "Namespace" => drop(typed::<Namespace>(&file, &v)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(&file, &v)),
            "ClusterRole" => drop(typed::<ClusterRole>(&file, &v)),
            "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(&file, &v)),
            "Role" => drop(typed::<Role>(&file, &v)),
            "RoleBinding" => drop(typed::<RoleBinding>(&file, &v)),
            "Deployment" => drop(typed::<Deployment>(&file, &v)),
            "Service" => drop(typed::<Service>(&file, &v)),
            "PodDisruptionBudget" => drop(typed::<PodDisruptionBudget>(&file, &v)),
            "ConfigMap" => drop(typed::<ConfigMap>(&file, &v)),
            "NetworkPolicy" => drop(typed::<NetworkPolicy>(&file, &v)),
            other => panic!("{file}: no test type for kind {other}"),
        }
        kinds.insert(kind);
    }
    for k in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "NetworkPolicy",
    ] {
        assert!(kinds.contains(k), "deploy/ has a {k}");
    }
    let pier: Vec<Deployment> = documents()
        .iter()
        .filter(|(_, v)| v["kind"] == "Deployment" && v["metadata"]["name"] == "pier")
        .map(|(f, v)| typed(f, v))
        .collect();
    let spec = pier[0].spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(2));
    let c = &spec.template.spec.as_ref().unwrap().containers[0];
    let probe =
        |p: &Option<k8s_openapi::api::core::v1::Probe>| p.as_ref().unwrap().http_get.as_ref().unwrap().path.clone();
    assert_eq!(probe(&c.liveness_probe).as_deref(), Some("/healthz"));
    assert_eq!(probe(&c.readiness_probe).as_deref(), Some("/readyz"));
}

/// Each watched kind's name in the table is the name the parser gives the objects it decodes, so
/// what a watch delivers lands in the model under the kind the availability and metrics code expect.
#[test]
fn watched_kind_names_match_the_parser() {
    let mut decoded = 0;
    for k in pier::api::kinds::WATCHED {
        let json = serde_json::json!({"apiVersion": k.api_version(), "kind": k.kind, "metadata": {"name": "x"}});
        if let Ok(Some(obj)) = pier::model::yaml::decode_value("t", json) {
            assert_eq!(obj.kind_name(), k.name, "{}", k.describe());
            decoded += 1;
        }
    }
    // Kinds whose `spec` is required do not decode from a bare object; the seven that do must agree.
    assert!(decoded >= 7, "only {decoded} watched kinds decode from a bare object");
}

#[test]
fn rbac_grants_exactly_the_api_calls_pier_makes() {
    let docs = documents();
    let find = |kind: &str| docs.iter().find(|(_, v)| v["kind"] == kind).unwrap();
    let (f, v) = find("ClusterRole");
    let cluster: ClusterRole = typed(f, v);
    let (f, v) = find("Role");
    let role: Role = typed(f, v);
    let mut granted = grants(cluster.rules.as_deref().unwrap_or_default());
    granted.extend(grants(role.rules.as_deref().unwrap_or_default()));
    let mut needed = BTreeSet::new();
    for call in pier::api::kinds::api_calls() {
        for verb in call.verbs {
            needed.insert((call.group.to_string(), call.resource.clone(), verb.to_string()));
        }
    }
    let missing: Vec<_> = needed.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&needed).collect();
    assert!(
        missing.is_empty(),
        "calls pier makes that the RBAC does not grant: {missing:?}"
    );
    assert!(extra.is_empty(), "grants pier never uses: {extra:?}");
    // The Lease is only ever touched in pier's own namespace.
    assert!(
        grants(cluster.rules.as_deref().unwrap_or_default())
            .iter()
            .all(|g| g.1 != "leases")
    );
}

#[test]
fn example_envoy_bootstrap_is_what_pier_bootstrap_prints() {
    let docs = documents();
    let (_, cm) = docs
        .iter()
        .find(|(_, v)| v["kind"] == "ConfigMap" && v["metadata"]["name"] == "envoy-demo-edge-bootstrap")
        .unwrap();
    let shipped: Value = serde_saphyr::from_str(cm["data"]["envoy.yaml"].as_str().unwrap()).unwrap();
    let spec = pier::envoy::ads_bootstrap::BootstrapSpec {
        gateway: "demo/edge".into(),
        xds: vec![("pier-xds.pier-system.svc.cluster.local".into(), 18000)],
        delta: false,
        admin_port: 9901,
        node_id: None,
        dns_resolver: None,
        tls: Some(pier::envoy::ads_bootstrap::XdsTls {
            cert: "/etc/envoy/xds/tls.crt".into(),
            key: "/etc/envoy/xds/tls.key".into(),
            ca: "/etc/envoy/xds/ca.crt".into(),
            server_name: None,
        }),
    };
    assert_eq!(shipped, pier::envoy::ads_bootstrap::bootstrap(&spec));
}

fn pier(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pier")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The Deployment's `PIER_*` variables are options `pier serve` knows, and its admin settings are ones
/// pier starts with (an admin address beyond loopback needs a token or the explicit flag).
#[test]
fn the_deployment_sets_only_known_options_and_an_admin_api_pier_accepts() {
    let (_, d) = documents()
        .into_iter()
        .find(|(_, v)| v["kind"] == "Deployment")
        .unwrap();
    let env: Vec<(String, String)> = d["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let help = pier(&["serve", "--help"]);
    for (name, _) in env.iter().filter(|(n, _)| n.starts_with("PIER_")) {
        assert!(help.contains(name.as_str()), "{name} is not an option of pier serve");
    }
    let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let access = pier::admin::Access {
        allowed_hosts: Vec::new(),
        token: get("PIER_ADMIN_TOKEN_FILE").map(|_| "from the Secret".to_string()),
        allow_unauthenticated: get("PIER_ADMIN_ALLOW_UNAUTHENTICATED").as_deref() == Some("true"),
    };
    let admin = get("PIER_ADMIN_ADDRESS").unwrap().parse().unwrap();
    pier::admin::access::check_exposure(admin, &access).expect("the Deployment's pier starts");
}

#[test]
fn serve_help_documents_every_kubernetes_option_and_crds_print() {
    let help = pier(&["serve", "--help"]);
    for (flag, env) in [
        ("--kubernetes", "PIER_KUBERNETES"),
        ("--watch-namespaces", "PIER_WATCH_NAMESPACES"),
        ("--lease-name", "PIER_LEASE_NAME"),
        ("--lease-namespace", "PIER_LEASE_NAMESPACE"),
        ("--lease-identity", "PIER_LEASE_IDENTITY"),
        ("--status-writes-per-second", "PIER_STATUS_WRITES_PER_SECOND"),
    ] {
        assert!(help.contains(flag) && help.contains(env), "{flag} / {env} in:\n{help}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pier"))
        .args([
            "serve",
            "--admin-address",
            "127.0.0.1:0",
            "--xds-address",
            "127.0.0.1:0",
        ])
        .env("PIER_KUBERNETES", "false")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--config-dir (PIER_CONFIG_DIR) is required unless --kubernetes")
    );
    let crds = pier(&["crds"]);
    let names: Vec<String> = pier::model::yaml::values("pier crds", &crds)
        .unwrap()
        .into_iter()
        .flatten()
        .map(|d| d["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "xbackends.gateway.networking.x-k8s.io",
            "backends.gateway.networking.k8s.io",
            "backends.gateway.envoyproxy.io"
        ]
    );
}
