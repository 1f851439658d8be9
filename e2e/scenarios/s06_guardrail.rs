//! Scenario 6: a guardrail refusal under the default rules (this pier runs *without* `--allow-loopback`).
//! An Envoy Gateway Backend whose `ip` endpoint is a loopback address, and an XBackend whose hostname is
//! `localhost`, are refused: requests routed to them get 500 (the invalid backendRef's share), the
//! upstream listening at the refused address receives nothing — not even a TCP connection — the address
//! appears nowhere in Envoy's configuration, and pier's status names the refusal.
//!
//! Why loopback rather than e.g. 169.254.169.254: if the guardrail were broken, Envoy would connect to
//! the refused address, and only a loopback address keeps that failure on this machine (and observable).

use pier::testkit::lo;
use pier::testkit::upstream::Upstream;

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::pier::PierOptions;
use crate::harness::scene::Scene;

both_modes!(run);

async fn run(mode: Mode) {
    let mut scene = Scene::new("s06", mode).await;
    let target = Upstream::http("refused-target", lo(2)).await;
    scene.dns.set("localhost", &[lo(2)]);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            eg_backend_ip("loopback-ip", &target.ip(), target.port(), &[]),
            xbackend_hostname("loopback-name", "localhost", target.port(), None),
            http_route(
                "guarded",
                "gw",
                vec![
                    rule("/ip", vec![backend_ref(EG_GROUP, "Backend", "loopback-ip")]),
                    rule("/name", vec![xbackend_ref("loopback-name")]),
                ],
            ),
        ],
    );
    scene.start_pier(PierOptions::default()).await;
    scene.start_envoy("default/gw").await;

    for path in ["/ip", "/name"] {
        scene.wait_for_status(path, 500).await;
        for _ in 0..10 {
            let r = scene.get(path).await.expect("a response");
            assert_eq!((r.status, r.upstream()), (500, None), "{path}: {r:?}");
        }
    }
    assert_eq!(target.connections(), 0, "the refused upstream was connected to");
    assert!(target.requests().is_empty());
    let dump = scene.envoy().config_dump_text().await;
    let address = format!("\"{}\"", target.ip());
    assert!(
        !dump.contains(&address),
        "the refused address {address} is in Envoy's configuration"
    );
    assert!(
        !dump.contains("\"localhost\""),
        "the refused hostname is in Envoy's configuration"
    );
    let status = scene.pier().admin_json("/debug/status").await.to_string();
    assert!(
        status.contains("DestinationNotAllowed"),
        "pier's status does not name the refusal: {status}"
    );
    assert!(
        status.contains("loopback"),
        "pier's status does not name the loopback rule: {status}"
    );
}
