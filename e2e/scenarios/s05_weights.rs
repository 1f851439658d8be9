//! Scenario 5: backendRef weights. A 70/30 split lands within tolerance over enough requests, and an invalid
//! backendRef (a Service that does not exist) keeps exactly its weight's share of traffic as HTTP 500 — as
//! Gateway API requires — while the valid ref takes the rest.
//!
//! Tolerance: with n = 500 and p = 0.7 the standard deviation of the observed share is about 2 %; a ±7 %
//! band is more than 3 standard deviations, so a correct proxy fails it with negligible probability while a
//! wrong split (50/50, or dropping the invalid share) cannot pass.

use pier::testkit::http::tally;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{HOST, Scene};

both_modes!(run);

const REQUESTS: usize = 500;
const TOLERANCE: f64 = 0.07;

async fn run(mode: Mode) {
    let mut scene = Scene::new("s05", mode).await;
    let v1 = Upstream::http("echo-v1", lo(2)).await;
    let v2 = Upstream::http("echo-v2", lo(3)).await;
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            service("echo-v1", "http", 80),
            service("echo-v2", "http", 80),
            endpoint_slice("echo-v1-1", "echo-v1", "http", v1.port(), &[(&v1.ip(), true)]),
            endpoint_slice("echo-v2-1", "echo-v2", "http", v2.port(), &[(&v2.ip(), true)]),
            http_route(
                "weights",
                "gw",
                vec![
                    rule(
                        "/split",
                        vec![
                            weighted(service_ref("echo-v1", 80), 70),
                            weighted(service_ref("echo-v2", 80), 30),
                        ],
                    ),
                    rule(
                        "/partial",
                        vec![
                            weighted(service_ref("echo-v1", 80), 3),
                            weighted(service_ref("missing", 80), 1),
                        ],
                    ),
                ],
            ),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    // Both clusters warm before counting, so the split is not skewed by one side still initialising.
    scene.wait_for_upstream("/split", "echo-v1").await;
    scene.wait_for_upstream("/split", "echo-v2").await;

    let split = tally(scene.listener(), HOST, "/split", REQUESTS).await;
    eprintln!("E2E-INFO mode={} weights_70_30 {split}", mode.label());
    assert_eq!(
        split.get("echo-v1") + split.get("echo-v2"),
        REQUESTS,
        "every /split request served: {split}"
    );
    assert!(
        (split.share("echo-v1") - 0.7).abs() <= TOLERANCE,
        "echo-v1 share not ~70%: {split}"
    );

    scene.wait_for_upstream("/partial", "echo-v1").await;
    let partial = tally(scene.listener(), HOST, "/partial", REQUESTS).await;
    eprintln!("E2E-INFO mode={} weights_invalid_ref {partial}", mode.label());
    assert_eq!(
        partial.get("echo-v1") + partial.get("status:500"),
        REQUESTS,
        "only echo-v1 or a 500: {partial}"
    );
    assert!(
        (partial.share("status:500") - 0.25).abs() <= TOLERANCE,
        "the invalid ref's 500 share is not ~25%: {partial}"
    );
    assert_eq!(
        v2.requests().iter().filter(|s| s.path.starts_with("/partial")).count(),
        0
    );
}
