//! Scenario 15: authenticated xDS with real Envoys. pier requires client certificates (every scenario's
//! proxies present their Gateway's, from `pier certs`); here the ones that must get nothing:
//!
//! - an Envoy presenting Gateway `default/gw`'s certificate while its node claims `default/other` gets
//!   PermissionDenied: no listener, never LIVE;
//! - an Envoy presenting no certificate fails the handshake: nothing at all;
//! - an Envoy of `default/gw` whose bootstrap asks SDS for `default/other`'s listener certificate by its
//!   exact name never receives it, while `default/gw`'s own proxy serves traffic beside it.
//!
//! pier's `pier_xds_refused_total{reason}` counts each refusal.

use std::time::Duration;

use pier::testkit::pki::Ca;
use pier::testkit::upstream::Upstream;
use pier::testkit::{free_port, lo};
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::Scene;
use crate::harness::{Mode, eventually};

both_modes!(run);

const WAIT: Duration = Duration::from_secs(20);

async fn run(mode: Mode) {
    let mut scene = Scene::new("s15", mode).await;
    let ca = Ca::new("pier e2e gateway CA");
    let up = Upstream::http("up", lo(2)).await;
    let other_port = free_port(std::net::Ipv4Addr::LOCALHOST);
    let mut docs = vec![gateway_class(), gateway("gw", scene.port), other_gateway(other_port)];
    docs.push(tls_secret("other-cert", &ca.server(&["other.e2e.test"], &[])));
    docs.extend(service_at("up", &up.ip(), up.port()));
    docs.push(http_route("r", "gw", vec![rule("/", vec![service_ref("up", 80)])]));
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/", "up").await;

    // Gateway default/gw's certificate, node.cluster default/other.
    let gw_certs = scene.pier().pki.join("gateways/default.gw");
    let impostor = scene
        .spawn_envoy_with("default/other", |boot| swap_client_cert(boot, &gw_certs), &[])
        .await;
    wait_for_refusal(&scene, "permission-denied").await;
    assert_gets_nothing(&scene, impostor).await;

    // No client certificate at all.
    let anonymous = scene.spawn_envoy_with("default/gw", drop_client_cert, &[]).await;
    wait_for_refusal(&scene, "tls-handshake").await;
    assert_gets_nothing(&scene, anonymous).await;

    // default/gw's own certificate, asking SDS for default/other's secret by its exact name.
    let secret = pier::ir::names::tls_certificate_secret("default", "other-cert");
    let listener_port = free_port(std::net::Ipv4Addr::LOCALHOST);
    let prober = scene
        .spawn_envoy_with("default/gw", |boot| add_sds_listener(boot, &secret, listener_port), &[])
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let dump = scene
        .envoy_at(prober)
        .admin_get("/config_dump?include_eds")
        .await
        .expect("config dump");
    let dump: Value = serde_json::from_str(&dump.body).expect("JSON");
    assert!(
        !dump.to_string().contains("BEGIN"),
        "a certificate reached the proxy that asked for another Gateway's secret"
    );
    let (active, warming) = (
        secrets(&dump, "dynamic_active_secrets"),
        secrets(&dump, "dynamic_warming_secrets"),
    );
    assert!(
        !active.contains(&secret),
        "{secret} was served to default/gw's proxy: {active:?}"
    );
    // The control: the proxy did ask for it, and is still waiting.
    assert!(
        warming.contains(&secret),
        "the proxy never subscribed to {secret}: {warming:?}"
    );
    // ... and default/gw's own proxy still serves.
    let r = scene.get("/").await.expect("a response");
    assert_eq!(r.upstream(), Some("up"));
}

fn other_gateway(port: u16) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "other", "namespace": "default", "generation": 1},
        "spec": {"gatewayClassName": "pier", "listeners": [{"name": "https", "protocol": "HTTPS", "port": port,
            "tls": {"mode": "Terminate", "certificateRefs": [{"name": "other-cert"}]}}]}})
}

/// The xDS cluster's TLS context.
fn xds_tls(boot: &mut Value) -> &mut Value {
    &mut boot["static_resources"]["clusters"][0]["transport_socket"]["typed_config"]["common_tls_context"]
}

fn swap_client_cert(boot: &mut Value, dir: &std::path::Path) {
    let certs = &mut xds_tls(boot)["tls_certificates"][0];
    certs["certificate_chain"]["filename"] = json!(dir.join("tls.crt").display().to_string());
    certs["private_key"]["filename"] = json!(dir.join("tls.key").display().to_string());
    certs["watched_directory"]["path"] = json!(dir.display().to_string());
}

fn drop_client_cert(boot: &mut Value) {
    xds_tls(boot)
        .as_object_mut()
        .expect("TLS context")
        .remove("tls_certificates");
}

/// A static TLS listener whose certificate comes from pier over ADS under `secret`.
fn add_sds_listener(boot: &mut Value, secret: &str, port: u16) {
    let listener = json!({
        "name": "sds-probe",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{
            "transport_socket": {"name": "envoy.transport_sockets.tls", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
                "common_tls_context": {"tls_certificate_sds_secret_configs": [
                    {"name": secret, "sds_config": {"ads": {}, "resource_api_version": "V3"}}
                ]}
            }},
            "filters": [{"name": "envoy.filters.network.tcp_proxy", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                "stat_prefix": "probe", "cluster": "pier_xds"
            }}]
        }]
    });
    let listeners = &mut boot["static_resources"]["listeners"];
    if !listeners.is_array() {
        *listeners = json!([]);
    }
    listeners.as_array_mut().expect("listeners").push(listener);
}

fn secrets(dump: &Value, key: &str) -> Vec<String> {
    let configs = dump["configs"].as_array().cloned().unwrap_or_default();
    configs
        .iter()
        .filter_map(|c| c[key].as_array())
        .flatten()
        .filter_map(|s| s["name"].as_str().map(String::from))
        .collect()
}

async fn wait_for_refusal(scene: &Scene, reason: &str) {
    let series = format!("pier_xds_refused_total{{reason=\"{reason}\"}}");
    eventually(&format!("pier counts a {reason} refusal"), WAIT, || async {
        let metrics = scene.pier().admin_get("/metrics").await?;
        let counted = metrics
            .body
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        if counted >= 1.0 {
            Ok(())
        } else {
            Err(format!("{series} is {counted}"))
        }
    })
    .await;
}

/// The proxy holds no listener from pier and is not LIVE.
async fn assert_gets_nothing(scene: &Scene, index: usize) {
    let envoy = scene.envoy_at(index);
    let dump = envoy.admin_get("/config_dump").await.expect("config dump");
    assert!(
        !dump.body.contains("dynamic_listeners\": [\n    {"),
        "a refused proxy got listeners"
    );
    let dump: Value = serde_json::from_str(&dump.body).expect("JSON");
    let dynamic: Vec<&Value> = dump["configs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["dynamic_listeners"].as_array())
        .flatten()
        .collect();
    assert!(dynamic.is_empty(), "a refused proxy got listeners: {dynamic:?}");
    let ready = envoy.admin_get("/ready").await.expect("/ready");
    assert_ne!(ready.body.trim(), "LIVE", "a refused proxy is LIVE");
}
