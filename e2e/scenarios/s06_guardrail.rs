//! Scenario 6: a guardrail refusal under the default rules (this pier runs *without* `--allow-loopback`).
//! Envoy Gateway Backends whose `ip` endpoint is a loopback address, plainly or IPv4-mapped
//! (`::ffff:127.0.0.2`, which an IPv6 socket reaches as 127.0.0.2), and XBackends whose hostnames are
//! `localhost`, `localhost.localdomain` and `kubernetes.default` (all three answered by the test's DNS with
//! the loopback target) are refused: requests routed to them get 500 (the invalid backendRef's share), the
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
    for name in ["localhost", "localhost.localdomain", "kubernetes.default"] {
        scene.dns.set(name, &[lo(2)]);
    }
    let mapped = format!("::ffff:{}", target.ip());
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            eg_backend_ip("loopback-ip", &target.ip(), target.port(), &[]),
            eg_backend_ip("mapped-ip", &mapped, target.port(), &[]),
            xbackend_hostname("loopback-name", "localhost", target.port(), None),
            xbackend_hostname("localdomain", "localhost.localdomain", target.port(), None),
            xbackend_hostname("short-service", "kubernetes.default", target.port(), None),
            http_route(
                "guarded",
                "gw",
                vec![
                    rule("/ip", vec![backend_ref(EG_GROUP, "Backend", "loopback-ip")]),
                    rule("/mapped", vec![backend_ref(EG_GROUP, "Backend", "mapped-ip")]),
                    rule("/name", vec![xbackend_ref("loopback-name")]),
                    rule("/localdomain", vec![xbackend_ref("localdomain")]),
                    rule("/short", vec![xbackend_ref("short-service")]),
                ],
            ),
        ],
    );
    scene.start_pier(PierOptions::default()).await;
    scene.start_envoy("default/gw").await;

    for path in ["/ip", "/mapped", "/name", "/localdomain", "/short"] {
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
    for refused in [&mapped, "localhost", "localhost.localdomain", "kubernetes.default"] {
        assert!(
            !dump.contains(&format!("\"{refused}\"")),
            "the refused destination {refused} is in Envoy's configuration"
        );
    }
    let status = scene.pier().admin_json("/debug/status").await.to_string();
    assert!(
        status.contains("DestinationNotAllowed"),
        "pier's status does not name the refusal: {status}"
    );
    for rule in [
        "rule loopback",
        "IPv4-mapped form of 127.0.0.2",
        "rule cluster-local-hostname",
    ] {
        assert!(status.contains(rule), "pier's status does not say {rule:?}: {status}");
    }
}
