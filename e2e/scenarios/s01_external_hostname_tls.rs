//! Scenario 1: an ExternalHostname XBackend with `tls.mode: ServerOnly`. Envoy resolves the hostname itself
//! (STRICT_DNS, through the suite's DNS responder), connects over TLS with the expected SNI, verifies the
//! upstream against the Backend's CA, and the request succeeds. With the wrong CA, and with a certificate
//! whose SANs do not match, the request gets a 5xx: Envoy attempted TLS (the upstream saw the handshake,
//! with the SNI) and failed verification, no request reached the upstream, and nothing arrived in plaintext.

use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::Scene;

both_modes!(run);

async fn run(mode: Mode) {
    let mut scene = Scene::new("s01", mode).await;
    let ca = Ca::new("e2e trusted CA");
    let unrelated = Ca::new("e2e unrelated CA");
    let ok = Upstream::https("tls-ok", lo(2), ServerTls::new(&ca.server(&["api.e2e.test"], &[]))).await;
    let wrong_ca = Upstream::https(
        "tls-wrong-ca",
        lo(3),
        ServerTls::new(&ca.server(&["wrongca.e2e.test"], &[])),
    )
    .await;
    let san = Upstream::https("tls-san", lo(4), ServerTls::new(&ca.server(&["other.e2e.test"], &[]))).await;
    scene.dns.set("api.e2e.test", &[lo(2)]);
    scene.dns.set("wrongca.e2e.test", &[lo(3)]);
    scene.dns.set("san.e2e.test", &[lo(4)]);

    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            ca_config_map("trusted-ca", &ca.cert_pem()),
            ca_config_map("unrelated-ca", &unrelated.cert_pem()),
        ],
    );
    scene.write(
        "10-backends.yaml",
        &[
            xbackend_hostname(
                "api",
                "api.e2e.test",
                ok.port(),
                Some(backend_tls("ServerOnly", "api.e2e.test", "trusted-ca")),
            ),
            xbackend_hostname(
                "wrong-ca",
                "wrongca.e2e.test",
                wrong_ca.port(),
                Some(backend_tls("ServerOnly", "wrongca.e2e.test", "unrelated-ca")),
            ),
            // The name resolves to the upstream, but its certificate is for other.e2e.test only.
            xbackend_hostname(
                "san-mismatch",
                "san.e2e.test",
                san.port(),
                Some(backend_tls("ServerOnly", "san.e2e.test", "trusted-ca")),
            ),
            http_route(
                "tls",
                "gw",
                vec![
                    rule("/ok", vec![xbackend_ref("api")]),
                    rule("/wrong-ca", vec![xbackend_ref("wrong-ca")]),
                    rule("/san", vec![xbackend_ref("san-mismatch")]),
                ],
            ),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    scene.wait_for_upstream("/ok", "tls-ok").await;
    let seen = ok.requests();
    assert!(!seen.is_empty());
    for s in &seen {
        assert!(s.tls, "request arrived in plaintext: {s:?}");
        assert_eq!(s.sni.as_deref(), Some("api.e2e.test"), "SNI");
        assert_eq!(s.client_cn, None, "ServerOnly presents no client certificate");
        assert_eq!(s.path, "/ok");
        assert_eq!(
            s.version, "HTTP/2.0",
            "protocol unset over TLS: ALPN offers h2, which the upstream picks"
        );
    }
    // Envoy resolved the name itself, through the suite's responder, into a DNS cluster holding the
    // upstream's address.
    assert!(
        scene.dns.queries("api.e2e.test") > 0,
        "Envoy never asked the DNS responder for api.e2e.test"
    );
    let clusters = scene.envoy().clusters().await;
    let host_line = format!("::127.0.0.2:{}::hostname::api.e2e.test", ok.port());
    assert!(
        clusters.contains(&host_line),
        "no resolved host {host_line} in /clusters:\n{clusters}"
    );
    let dump = scene
        .envoy()
        .config_dump("resource=dynamic_active_clusters")
        .await
        .to_string();
    assert!(
        dump.contains("envoy.clusters.dns") || dump.contains("\"STRICT_DNS\""),
        "the Backend's cluster is not a DNS cluster: {dump}"
    );

    for (path, upstream, name) in [
        ("/wrong-ca", &wrong_ca, "wrongca.e2e.test"),
        ("/san", &san, "san.e2e.test"),
    ] {
        scene.refused_at_the_handshake(path, upstream, name).await;
    }
    let envoy = scene.envoy();
    assert!(
        envoy.stat_sum(&["wrong-ca", "ssl.fail_verify_error"]).await > 0,
        "Envoy did not count a CA failure"
    );
    assert!(
        envoy.stat_sum(&["san-mismatch", "ssl.fail_verify_san"]).await > 0,
        "Envoy did not count a SAN failure"
    );
}
