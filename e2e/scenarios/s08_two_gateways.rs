//! Scenario 8: one pier, two Gateways, one Envoy each. Every proxy receives only its own Gateway's
//! resources (clusters, listeners, routes, endpoints — checked in its `/config_dump`) and its traffic goes
//! to its own upstream. A third proxy for a Gateway that does not exist yet gets nothing at all (never
//! another Gateway's configuration) until that Gateway is written, and then gets it without a restart.
//! [`deletion`]: deleting a Gateway's file takes its configuration away from its proxy.

use std::time::{Duration, Instant};

use pier::testkit::http;
use pier::testkit::upstream::Upstream;
use pier::testkit::{free_port, lo, local};

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// How long the proxy of a not-yet-existing Gateway is watched for receiving anything.
const ABSENCE_WINDOW: Duration = Duration::from_millis(1500);

fn gateway_docs(gateway_name: &str, port: u16, upstream: &Upstream) -> Vec<serde_json::Value> {
    let backend = format!("for-{gateway_name}");
    vec![
        gateway(gateway_name, port),
        eg_backend_ip(&backend, &upstream.ip(), upstream.port(), &[]),
        http_route(
            &format!("route-{gateway_name}"),
            gateway_name,
            vec![rule("/", vec![backend_ref(EG_GROUP, "Backend", &backend)])],
        ),
    ]
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s08", mode).await;
    let up_a = Upstream::http("upstream-gw-a", lo(2)).await;
    let up_b = Upstream::http("upstream-gw-b", lo(3)).await;
    let up_c = Upstream::http("upstream-gw-c", lo(4)).await;
    let (port_a, port_b, port_c) = (scene.port, free_port(lo(1)), free_port(lo(1)));
    scene.write("00-class.yaml", &[gateway_class()]);
    scene.write("10-gw-a.yaml", &gateway_docs("gw-a", port_a, &up_a));
    scene.write("10-gw-b.yaml", &gateway_docs("gw-b", port_b, &up_b));
    scene.start_pier(super::loopback_allowed()).await;
    let ia = scene.start_envoy("default/gw-a").await;
    let ib = scene.start_envoy("default/gw-b").await;

    scene.wait_for_upstream_at(port_a, "/x", "upstream-gw-a").await;
    scene.wait_for_upstream_at(port_b, "/x", "upstream-gw-b").await;
    for (i, own, other) in [(ia, "gw-a", "gw-b"), (ib, "gw-b", "gw-a")] {
        let envoy = &scene.envoys[i];
        let versions = envoy.active_versions().await;
        for kind in ["cluster/", "listener/", "route/"] {
            assert!(
                versions.keys().any(|k| k.starts_with(kind)),
                "Envoy for {own} has no {kind}*: {versions:?}"
            );
        }
        let dump = envoy.config_dump_text().await;
        assert!(
            dump.contains(&format!("for-{own}")),
            "Envoy for {own} lacks its own Backend's cluster"
        );
        assert!(
            !dump.contains(other),
            "Envoy for {own} received something of {other}: {versions:?}"
        );
    }
    assert!(up_a.requests().iter().all(|s| s.path == "/x") && up_b.requests().iter().all(|s| s.path == "/x"));
    let clients = scene.pier().admin_json("/debug/clients").await.to_string();
    for needle in [
        "default/gw-a",
        "default/gw-b",
        "e2e-default-gw-a-0",
        "e2e-default-gw-b-1",
    ] {
        assert!(
            clients.contains(needle),
            "/debug/clients does not show {needle}: {clients}"
        );
    }

    // A proxy for a Gateway pier does not know yet.
    let ic = scene.spawn_envoy("default/gw-c").await;
    let start = Instant::now();
    while start.elapsed() < ABSENCE_WINDOW {
        let versions = scene.envoys[ic].active_versions().await;
        assert!(
            versions.is_empty(),
            "the proxy of an unknown Gateway received configuration: {versions:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scene.write("10-gw-c.yaml", &gateway_docs("gw-c", port_c, &up_c));
    scene.envoys[ic].wait_live().await;
    scene.wait_for_upstream_at(port_c, "/x", "upstream-gw-c").await;
    let dump = scene.envoys[ic].config_dump_text().await;
    assert!(
        !dump.contains("gw-a") && !dump.contains("gw-b"),
        "gw-c's proxy received another Gateway's resources"
    );
}

/// A Gateway deleted from the directory stops being served by its proxy — its listener goes away, as it
/// would with no pier at all — while a proxy of another Gateway keeps serving. (Kept apart from the main
/// scenario so that each claim fails under its own name.)
mod deletion {
    both_modes!(super::deleted_gateway);
}

async fn deleted_gateway(mode: Mode) {
    let mut scene = Scene::new("s08-deletion", mode).await;
    let up_a = Upstream::http("upstream-gw-a", lo(2)).await;
    let up_c = Upstream::http("upstream-gw-c", lo(4)).await;
    let (port_a, port_c) = (scene.port, free_port(lo(1)));
    scene.write("00-class.yaml", &[gateway_class()]);
    scene.write("10-gw-a.yaml", &gateway_docs("gw-a", port_a, &up_a));
    scene.write("10-gw-c.yaml", &gateway_docs("gw-c", port_c, &up_c));
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw-a").await;
    scene.start_envoy("default/gw-c").await;
    scene.wait_for_upstream_at(port_c, "/x", "upstream-gw-c").await;

    scene.config.remove("10-gw-c.yaml");
    eventually("the deleted Gateway's listener to go away", CONVERGE, || async {
        match http::get(local(port_c), HOST, "/x").await {
            Err(e) => Ok(e),
            Ok(r) => Err(format!("still answered: {} from {:?}", r.status, r.upstream())),
        }
    })
    .await;
    assert!(
        scene.envoys[1]
            .active_versions()
            .await
            .keys()
            .all(|k| !k.starts_with("listener/"))
    );
    scene.wait_for_upstream_at(port_a, "/x", "upstream-gw-a").await;
}
