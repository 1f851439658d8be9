//! Scenario 2: `tls.mode: ClientAndServer`. The upstreams require a client certificate and verify it against
//! the suite's CA. A Backend with its own `clientCertificateRef` presents that certificate (and pins the
//! upstream's SPIFFE ID, a URI SAN, with `subjectAltNames`); one without presents the Gateway's
//! `spec.tls.backend.clientCertificateRef`; a `ServerOnly` Backend presents none, so the upstream refuses
//! the handshake and the request gets a 5xx without reaching the upstream.

use std::time::Duration;

use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};

use crate::harness::manifests::*;
use crate::harness::scene::Scene;
use crate::harness::{Mode, eventually};

both_modes!(run);

const OWN_SPIFFE_ID: &str = "spiffe://e2e.test/ns/default/sa/own";

async fn run(mode: Mode) {
    let mut scene = Scene::new("s02", mode).await;
    let ca = Ca::new("e2e mesh CA");
    let mtls = |name: &str| ServerTls::requiring_client_cert(&ca.server(&[name], &[]), ca.cert_der());
    // This upstream's identity is a SPIFFE ID (a URI SAN), which its Backend pins with subjectAltNames.
    let own_cert = ca.server(&["own.e2e.test"], &[OWN_SPIFFE_ID]);
    let own = Upstream::https(
        "mtls-own-cert",
        lo(2),
        ServerTls::requiring_client_cert(&own_cert, ca.cert_der()),
    )
    .await;
    let gw = Upstream::https("mtls-gateway-cert", lo(3), mtls("gw.e2e.test")).await;
    let none = Upstream::https("mtls-no-cert", lo(4), mtls("none.e2e.test")).await;
    for (name, n) in [("own.e2e.test", 2), ("gw.e2e.test", 3), ("none.e2e.test", 4)] {
        scene.dns.set(name, &[lo(n)]);
    }
    let backend_cert = ca.client("pier-e2e-backend-client");
    let gateway_cert = ca.client("pier-e2e-gateway-client");

    let mut own_tls = backend_tls("ClientAndServer", "own.e2e.test", "mesh-ca");
    own_tls["clientCertificateRef"] = serde_json::json!({"name": "backend-client"});
    own_tls["validation"]["subjectAltNames"] = serde_json::json!([{"type": "URI", "uri": OWN_SPIFFE_ID}]);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway_with_client_cert("gw", scene.port, "gateway-client"),
            ca_config_map("mesh-ca", &ca.cert_pem()),
            tls_secret("backend-client", &backend_cert),
            tls_secret("gateway-client", &gateway_cert),
        ],
    );
    scene.write(
        "10-backends.yaml",
        &[
            xbackend_hostname("own", "own.e2e.test", own.port(), Some(own_tls)),
            xbackend_hostname(
                "gw-cert",
                "gw.e2e.test",
                gw.port(),
                Some(backend_tls("ClientAndServer", "gw.e2e.test", "mesh-ca")),
            ),
            xbackend_hostname(
                "no-cert",
                "none.e2e.test",
                none.port(),
                Some(backend_tls("ServerOnly", "none.e2e.test", "mesh-ca")),
            ),
            http_route(
                "mtls",
                "gw",
                vec![
                    rule("/own", vec![xbackend_ref("own")]),
                    rule("/gateway", vec![xbackend_ref("gw-cert")]),
                    rule("/none", vec![xbackend_ref("no-cert")]),
                ],
            ),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    for (path, upstream, sni, cn) in [
        ("/own", &own, "own.e2e.test", "pier-e2e-backend-client"),
        ("/gateway", &gw, "gw.e2e.test", "pier-e2e-gateway-client"),
    ] {
        scene.wait_for_upstream(path, &upstream.name).await;
        let seen = upstream.requests();
        assert!(!seen.is_empty(), "{path}");
        for s in &seen {
            assert!(s.tls, "{path}: plaintext request {s:?}");
            assert_eq!(s.sni.as_deref(), Some(sni), "{path}: SNI");
            assert_eq!(
                s.client_cn.as_deref(),
                Some(cn),
                "{path}: the client certificate the upstream verified"
            );
        }
        assert_eq!(upstream.plaintext_attempts(), 0);
    }

    let refused = eventually(
        "/none: a 5xx after the upstream refused a certificate-less handshake",
        Duration::from_secs(20),
        || async {
            let r = scene.get("/none").await?;
            let refused = none.handshakes().iter().any(|h| h.error.is_some());
            if r.status >= 500 && r.upstream().is_none() && refused {
                Ok(r)
            } else {
                Err(format!(
                    "status {} from {:?}; handshakes {:?}",
                    r.status,
                    r.upstream(),
                    none.handshakes()
                ))
            }
        },
    )
    .await;
    assert!(refused.status >= 500);
    assert!(
        none.requests().is_empty(),
        "a request without a client certificate was served: {:?}",
        none.requests()
    );
    assert_eq!(none.plaintext_attempts(), 0);
}
