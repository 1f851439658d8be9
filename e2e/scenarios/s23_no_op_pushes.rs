//! Scenario 23: an EndpointSlice rewrite that changes nothing Envoy sees pushes nothing. Controllers
//! rewrite slices all the time (a label, a resourceVersion, endpoints in another order, a pod that is
//! not ready yet); Envoy Gateway users lose proxies to the pushes that follow (envoyproxy/gateway#5344).
//! Here each such rewrite is read by pier (its source generation moves) and sends no xDS response to
//! a real Envoy, whose own update counters stay put; then a real change — an endpoint removed — is one
//! push of the load assignment, and traffic follows it.

use pier::testkit::http::tally;
use pier::testkit::upstream::Upstream;
use pier::testkit::{free_port, lo};
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

const CLUSTER: &str = "service/default/web/80";

/// EndpointSlices of Service `web`: each a name and its endpoints (all upstreams share one port), with
/// `extra` merged into every slice's metadata.
fn slices(port: u16, groups: &[(&str, &[(&Upstream, bool)])], extra: &Value) -> Vec<Value> {
    groups
        .iter()
        .map(|(name, endpoints)| {
            let ips: Vec<(String, bool)> = endpoints.iter().map(|(u, ready)| (u.ip(), *ready)).collect();
            let ips: Vec<(&str, bool)> = ips.iter().map(|(ip, r)| (ip.as_str(), *r)).collect();
            let mut s = endpoint_slice(name, "web", "http", port, &ips);
            for (k, v) in extra.as_object().into_iter().flatten() {
                match (k.as_str(), v) {
                    ("labels", Value::Object(labels)) => {
                        for (lk, lv) in labels {
                            s["metadata"]["labels"][lk] = lv.clone();
                        }
                    }
                    _ => s["metadata"][k] = v.clone(),
                }
            }
            s
        })
        .collect()
}

/// Responses pier has sent, every type and stream together.
async fn pushes(scene: &Scene) -> u64 {
    let metrics = scene.pier().admin_get("/metrics").await.expect("pier's /metrics");
    metrics
        .body
        .lines()
        .filter(|l| l.starts_with("pier_xds_pushes_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Envoy's count of xDS updates it applied or tried: CDS, and the cluster's EDS.
async fn envoy_updates(scene: &Scene) -> (u64, u64) {
    let stats = scene.envoy().stats().await;
    let n = |name: &str| stats.get(name).and_then(Value::as_u64).unwrap_or(0);
    (
        n("cluster_manager.cds.update_attempt"),
        n(&format!("cluster.{CLUSTER}.update_attempt")),
    )
}

/// Writes the slices file and waits until pier has read it (its source generation moved). A file
/// rewritten with the same bytes moves nothing, not even the generation (the directory source compares
/// contents): `same` says so, and the scenario waits a while instead.
async fn rewrite(scene: &Scene, docs: &[Value], same: bool) {
    let before = scene.pier().admin_json("/readyz").await["generation"]
        .as_u64()
        .unwrap_or(0);
    scene.write("20-slices.yaml", docs);
    if same {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let now = scene.pier().admin_json("/readyz").await["generation"]
            .as_u64()
            .unwrap_or(0);
        assert_eq!(now, before, "the same bytes are not a new generation");
        return;
    }
    eventually("pier to read the rewrite", CONVERGE, || async {
        let now = scene.pier().admin_json("/readyz").await["generation"]
            .as_u64()
            .unwrap_or(0);
        if now > before {
            Ok(())
        } else {
            Err(format!("generation {now}"))
        }
    })
    .await;
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s23", mode).await;
    // One port for every pod, so one slice can hold them all (a slice's ports apply to its endpoints).
    let port = free_port(lo(2));
    let up = |name: &'static str, n: u8| async move {
        Upstream::bind(name, std::net::SocketAddr::from((lo(n), port)), None)
            .await
            .expect("binding an upstream")
    };
    let (a, b, c) = (up("pod-a", 2).await, up("pod-b", 3).await, up("pod-c", 4).await);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            service("web", "http", 80),
            http_route("web", "gw", vec![rule("/svc", vec![service_ref("web", 80)])]),
        ],
    );
    let plain = json!({});
    let both: &[(&Upstream, bool)] = &[(&a, true), (&b, true)];
    scene.write("20-slices.yaml", &slices(port, &[("web-1", both)], &plain));
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/svc", "pod-a").await;
    scene.wait_for_upstream("/svc", "pod-b").await;
    // Let the start-up pushes settle (make-before-break releases come after the last ACK).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (pushed, envoy) = (pushes(&scene).await, envoy_updates(&scene).await);

    let relabelled = json!({"labels": {"app.kubernetes.io/version": "2"}, "annotations": {"touched": "yes"},
        "resourceVersion": "4242", "generation": 7});
    let reordered: &[(&Upstream, bool)] = &[(&b, true), (&a, true)];
    let with_unready: &[(&Upstream, bool)] = &[(&b, true), (&c, false), (&a, true)];
    let only_a: &[(&Upstream, bool)] = &[(&a, true)];
    let only_b: &[(&Upstream, bool)] = &[(&b, true)];
    // (what, the file, whether pier's model changes at all: a file with the same objects is not a new
    // generation, so nothing is translated).
    let rewrites = [
        ("the same file again", slices(port, &[("web-1", both)], &plain), false),
        (
            "labels, annotations, resourceVersion",
            slices(port, &[("web-1", both)], &relabelled),
            true,
        ),
        (
            "endpoints in another order",
            slices(port, &[("web-1", reordered)], &relabelled),
            true,
        ),
        (
            "a pod that is not ready yet",
            slices(port, &[("web-1", with_unready)], &relabelled),
            true,
        ),
        (
            "split over two slices",
            slices(port, &[("web-1", only_a), ("web-2", only_b)], &plain),
            true,
        ),
        (
            "the slices in the other order",
            slices(port, &[("web-2", only_b), ("web-1", only_a)], &plain),
            false,
        ),
    ];
    for (what, docs, new_model) in rewrites {
        rewrite(&scene, &docs, !new_model).await;
        // Anything pier sends goes out within milliseconds of the read; give it a hundred times that.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(pushes(&scene).await, pushed, "{what}: pier pushed something");
        assert_eq!(envoy_updates(&scene).await, envoy, "{what}: Envoy saw an update");
    }

    // A real change: pod-b goes. One load assignment is pushed, and traffic leaves pod-b.
    rewrite(&scene, &slices(port, &[("web-1", only_a)], &plain), false).await;
    eventually("pod-b no longer receiving", CONVERGE, || async {
        let t = tally(scene.listener(), HOST, "/svc", 20).await;
        if t.get("pod-a") == 20 {
            Ok(())
        } else {
            Err(t.to_string())
        }
    })
    .await;
    assert_eq!(pushes(&scene).await, pushed + 1, "one load assignment");
    let (cds, eds) = envoy_updates(&scene).await;
    assert_eq!(
        (cds, eds),
        (envoy.0, envoy.1 + 1),
        "Envoy applied one EDS update and no CDS"
    );
    assert!(c.requests().is_empty(), "the pod that was never ready got traffic");
}
