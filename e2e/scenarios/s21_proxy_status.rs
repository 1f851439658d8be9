//! Scenario 21: proxy status of real Envoys, over CSDS and `pier proxy-status`. Two Gateways, one Envoy
//! each, serving traffic:
//!
//! - CSDS on pier's xDS port, asked with Gateway `default/gw`'s client certificate, lists exactly that
//!   Gateway's Envoy (never the other's), with its node, and every cluster, listener and route
//!   configuration `SYNCED` with its contents — the names Envoy's own config dump shows active;
//! - `pier proxy-status` prints one line per Envoy, each `SYNCED` for CDS, EDS, LDS and RDS.

use std::collections::BTreeSet;

use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ConfigStatus};
use pier::testkit::upstream::Upstream;
use pier::testkit::{free_port, grpc, lo};
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::Scene;
use crate::harness::{Mode, eventually};

both_modes!(run);

async fn run(mode: Mode) {
    let mut scene = Scene::new("s21", mode).await;
    let up = Upstream::http("up", lo(2)).await;
    let other_port = free_port(std::net::Ipv4Addr::LOCALHOST);
    let mut docs = vec![gateway_class(), gateway("gw", scene.port), other_gateway(other_port)];
    docs.extend(service_at("up", &up.ip(), up.port()));
    docs.push(http_route("r", "gw", vec![rule("/", vec![service_ref("up", 80)])]));
    docs.push(http_route("o", "other", vec![rule("/", vec![service_ref("up", 80)])]));
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.start_envoy("default/other").await;
    scene.wait_for_upstream("/", "up").await;
    scene.wait_for_upstream_at(other_port, "/", "up").await;

    let pki = scene.pier().pki.clone();
    let certs = pki.join("gateways/default.gw");
    let ca = std::fs::read(pki.join("ca.crt")).expect("the CA");
    let tls = grpc::client_config(&ca, Some((certs.join("tls.crt"), certs.join("tls.key"))));
    let channel = grpc::channel(scene.pier().xds, tls)
        .await
        .expect("mTLS to pier's xDS port");
    let mut csds = ClientStatusDiscoveryServiceClient::new(channel);
    let active = active_names(&scene).await;
    let seen = eventually(
        "CSDS shows default/gw's Envoy synced",
        crate::harness::scene::CONVERGE,
        || {
            let mut csds = csds.clone();
            let active = active.clone();
            async move {
                let r = csds
                    .fetch_client_status(ClientStatusRequest::default())
                    .await
                    .map_err(|e| e.to_string())?
                    .into_inner();
                let nodes: Vec<String> = r
                    .config
                    .iter()
                    .filter_map(|c| Some(c.node.as_ref()?.id.clone()))
                    .collect();
                if nodes != ["e2e-default-gw-0"] {
                    return Err(format!("nodes {nodes:?}"));
                }
                let entries = &r.config[0].generic_xds_configs;
                let unsynced: Vec<_> = entries
                    .iter()
                    .filter(|g| g.config_status != ConfigStatus::Synced as i32)
                    .map(|g| (&g.name, g.config_status))
                    .collect();
                if !unsynced.is_empty() {
                    return Err(format!("not synced: {unsynced:?}"));
                }
                let names: BTreeSet<String> = entries.iter().map(|g| short_type(&g.type_url, &g.name)).collect();
                if names != active {
                    return Err(format!("CSDS {names:?}, Envoy {active:?}"));
                }
                Ok(entries.clone())
            }
        },
    )
    .await;
    assert!(seen.iter().all(|g| g.xds_config.is_some()), "contents included");
    drop(csds.fetch_client_status(ClientStatusRequest::default()).await);

    let out = std::process::Command::new(crate::harness::pier::pier_bin())
        .args(["proxy-status", "--admin", &scene.pier().admin.to_string()])
        .env_remove("PIER_ADMIN_ADDRESS")
        .env_remove("PIER_ADMIN_TOKEN_FILE")
        .output()
        .expect("running pier proxy-status");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for (node, gateway) in [
        ("e2e-default-gw-0", "default/gw"),
        ("e2e-default-other-1", "default/other"),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(node))
            .unwrap_or_else(|| panic!("{node}: {text}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&words[1..3], [gateway, mode.label()], "{text}");
        let states: Vec<&str> = words[3..]
            .iter()
            .copied()
            .filter(|w| w.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            .collect();
        assert_eq!(&states[..4], ["SYNCED"; 4], "CDS EDS LDS RDS: {text}");
    }
}

/// `cluster/NAME`, `listener/NAME`, `route/NAME`, `endpoint/NAME` for a CSDS entry.
fn short_type(type_url: &str, name: &str) -> String {
    let kind = match type_url.rsplit('.').next().unwrap_or_default() {
        "Cluster" => "cluster",
        "Listener" => "listener",
        "RouteConfiguration" => "route",
        "ClusterLoadAssignment" => "endpoint",
        other => other,
    };
    format!("{kind}/{name}")
}

/// What the Envoy of default/gw holds from pier, in [`short_type`] form: its dynamic clusters (and their
/// endpoints), listeners and route configurations.
async fn active_names(scene: &Scene) -> BTreeSet<String> {
    let dump = scene
        .envoy()
        .admin_get("/config_dump?include_eds")
        .await
        .expect("Envoy's config dump");
    let dump: Value = serde_json::from_str(&dump.body).expect("JSON");
    let mut names = BTreeSet::new();
    for config in dump["configs"].as_array().into_iter().flatten() {
        let pick = |key: &str, path: &[&str]| -> Vec<String> {
            config[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| path.iter().fold(c, |v, k| &v[*k]).as_str().map(String::from))
                .collect()
        };
        for n in pick("dynamic_active_clusters", &["cluster", "name"]) {
            names.insert(format!("cluster/{n}"));
        }
        for n in pick("dynamic_endpoint_configs", &["endpoint_config", "cluster_name"]) {
            names.insert(format!("endpoint/{n}"));
        }
        for n in pick("dynamic_listeners", &["name"]) {
            names.insert(format!("listener/{n}"));
        }
        for n in pick("dynamic_route_configs", &["route_config", "name"]) {
            names.insert(format!("route/{n}"));
        }
    }
    assert!(
        names.iter().any(|n| n.starts_with("listener/")),
        "Envoy holds listeners: {names:?}"
    );
    names
}

fn other_gateway(port: u16) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "other", "namespace": NS},
        "spec": {"gatewayClassName": "pier", "listeners": [{"name": "http", "protocol": "HTTP", "port": port}]}})
}
