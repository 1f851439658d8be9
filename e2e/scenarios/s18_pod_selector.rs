//! Scenario 18: an XBackend of `type: EndpointSelector` whose `endpointSelector.matchLabels` selects
//! Pods (the v1.7 Core form): the ready Pods' IPs, on `spec.port.number`, are the endpoints. Traffic
//! follows the Pods as their file changes: a ready Pod receives requests, one not ready never does, one
//! that becomes ready starts to, one that becomes unready or starts terminating stops, one that
//! disappears stops, and with no Pod left Envoy answers 503 without reaching anything.

use pier::testkit::http::tally;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// Three upstreams on one port number (a Pod selector serves every Pod on `port.number`), on
/// 127.0.0.2–4. Retries in the unlikely case the port is taken on one of the other addresses.
async fn same_port_trio() -> [Upstream; 3] {
    for _ in 0..20 {
        let a = Upstream::http("pod-a", lo(2)).await;
        let Ok(b) = Upstream::bind("pod-b", (lo(3), a.port()).into(), None).await else {
            continue;
        };
        let Ok(c) = Upstream::bind("pod-c", (lo(4), a.port()).into(), None).await else {
            continue;
        };
        return [a, b, c];
    }
    panic!("no port free on 127.0.0.2, .3 and .4");
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Ready,
    NotReady,
    Terminating,
}

fn pod(upstream: &Upstream, state: State) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": upstream.name, "namespace": NS, "labels": {"app": "web", "tier": "e2e"}},
        "spec": {"containers": [{"name": "app", "image": "example.test/app:1"}]},
        "status": {"phase": "Running", "podIP": upstream.ip(), "podIPs": [{"ip": upstream.ip()}],
            "conditions": [{"type": "Ready", "status": if state == State::NotReady { "False" } else { "True" }}]}});
    if state == State::Terminating {
        pod["metadata"]["deletionTimestamp"] = json!("2026-11-24T00:00:00Z");
    }
    pod
}

fn pod_backend(port: u16) -> Value {
    json!({"apiVersion": "gateway.networking.x-k8s.io/v1alpha1", "kind": "XBackend",
        "metadata": {"name": "pods", "namespace": NS},
        "spec": {"type": "EndpointSelector", "endpointSelector": {"matchLabels": {"app": "web", "tier": "e2e"}},
            "port": {"number": port}}})
}

/// Waits until `/pods` is answered only by `expect` (20 requests in a row).
async fn only(scene: &Scene, expect: &[&str]) {
    let what = format!("/pods answered only by {expect:?}");
    eventually(&what, CONVERGE, || async {
        let t = tally(scene.listener(), HOST, "/pods", 20).await;
        let served: usize = expect.iter().map(|u| t.get(u)).sum();
        let all_seen = expect.iter().all(|u| t.get(u) > 0);
        if served == 20 && all_seen {
            Ok(())
        } else {
            Err(t.to_string())
        }
    })
    .await;
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s18", mode).await;
    let [a, b, c] = same_port_trio().await;
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            pod_backend(a.port()),
            http_route("pods", "gw", vec![rule("/pods", vec![xbackend_ref("pods")])]),
        ],
    );
    scene.write("20-pods.yaml", &[pod(&a, State::Ready), pod(&b, State::NotReady)]);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    only(&scene, &["pod-a"]).await;
    // pod-b becomes ready: both serve.
    scene.write("20-pods.yaml", &[pod(&a, State::Ready), pod(&b, State::Ready)]);
    only(&scene, &["pod-a", "pod-b"]).await;
    // pod-a becomes unready, and pod-c appears ready.
    scene.write(
        "20-pods.yaml",
        &[pod(&a, State::NotReady), pod(&b, State::Ready), pod(&c, State::Ready)],
    );
    only(&scene, &["pod-b", "pod-c"]).await;
    let a_before = a.requests().len();
    // pod-a disappears, pod-b starts terminating: only pod-c.
    scene.write("20-pods.yaml", &[pod(&b, State::Terminating), pod(&c, State::Ready)]);
    only(&scene, &["pod-c"]).await;
    let b_before = b.requests().len();
    // No Pod left: Envoy answers 503 itself.
    scene.write("20-pods.yaml", &[]);
    scene.wait_for_status("/pods", 503).await;
    let c_before = c.requests().len();
    let t = tally(scene.listener(), HOST, "/pods", 10).await;
    assert_eq!(t.get("pod-a") + t.get("pod-b") + t.get("pod-c"), 0, "{t}");
    assert_eq!(a.requests().len(), a_before, "pod-a was served after it became unready");
    assert_eq!(b.requests().len(), b_before, "pod-b was served while terminating");
    assert_eq!(c.requests().len(), c_before, "pod-c was served after it was gone");
}
