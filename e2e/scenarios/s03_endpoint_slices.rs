//! Scenario 3: an EndpointSelector XBackend (`selectorRef` → Service) and a plain Service backendRef, both
//! fed from the Service's EndpointSlices. Traffic follows the slices as they are edited: an endpoint added in
//! the file starts receiving requests, an endpoint removed stops, and an endpoint marked not ready never
//! receives any.

use pier::testkit::http::tally;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;

use crate::harness::manifests::*;
use crate::harness::scene::{HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// The slices file: one slice per endpoint (each upstream has its own ephemeral port, and a slice's ports
/// apply to all its endpoints), every slice in one file as an endpoints controller would keep them.
fn slices(endpoints: &[(&Upstream, bool)]) -> Vec<serde_json::Value> {
    endpoints
        .iter()
        .map(|(u, ready)| {
            endpoint_slice(
                &format!("web-{}", u.name),
                "web",
                "http",
                u.port(),
                &[(&u.ip(), *ready)],
            )
        })
        .collect()
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s03", mode).await;
    let a = Upstream::http("pod-a", lo(2)).await;
    let b = Upstream::http("pod-b", lo(3)).await;
    let not_ready = Upstream::http("pod-not-ready", lo(4)).await;

    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            service("web", "http", 80),
            xbackend_selector("web-xb", "web", 80),
            http_route(
                "web",
                "gw",
                vec![
                    rule("/svc", vec![service_ref("web", 80)]),
                    rule("/xb", vec![xbackend_ref("web-xb")]),
                ],
            ),
        ],
    );
    scene.write("20-slices.yaml", &slices(&[(&a, true), (&not_ready, false)]));
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    for path in ["/svc", "/xb"] {
        scene.wait_for_upstream(path, "pod-a").await;
        let t = tally(scene.listener(), HOST, path, 20).await;
        assert_eq!(t.get("pod-a"), 20, "{path} with one ready endpoint: {t}");
    }

    // Endpoint added: both routes spread over a and b.
    scene.write(
        "20-slices.yaml",
        &slices(&[(&a, true), (&b, true), (&not_ready, false)]),
    );
    for path in ["/svc", "/xb"] {
        scene.wait_for_upstream(path, "pod-b").await;
        let t = tally(scene.listener(), HOST, path, 40).await;
        assert!(
            t.get("pod-a") > 0 && t.get("pod-b") > 0,
            "{path} after adding pod-b: {t}"
        );
        assert_eq!(t.get("pod-a") + t.get("pod-b"), 40, "{path}: {t}");
    }

    // Endpoint removed: only b is left.
    scene.write("20-slices.yaml", &slices(&[(&b, true), (&not_ready, false)]));
    for path in ["/svc", "/xb"] {
        eventually(
            &format!("{path}: pod-a no longer receiving"),
            crate::harness::scene::CONVERGE,
            || async {
                let t = tally(scene.listener(), HOST, path, 20).await;
                if t.get("pod-b") == 20 {
                    Ok(())
                } else {
                    Err(t.to_string())
                }
            },
        )
        .await;
    }
    let before = a.requests().len();
    let t = tally(scene.listener(), HOST, "/svc", 20).await;
    assert_eq!(t.get("pod-b"), 20, "{t}");
    assert_eq!(
        a.requests().len(),
        before,
        "the removed endpoint still received requests"
    );
    assert!(
        not_ready.requests().is_empty(),
        "the not-ready endpoint received traffic"
    );
}
