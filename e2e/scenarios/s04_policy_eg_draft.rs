//! Scenario 4: three more ways to reach an upstream, each carrying real traffic — a BackendTLSPolicy
//! re-encrypting to a Service (SNI and CA from the policy), an Envoy Gateway Backend with an `ip` endpoint
//! spoken to over h2c (`appProtocols`), and a Backend in the earlier draft shape (`spec.destination`, FQDN
//! with TLS), which also carries `Deprecated`/`DraftShape` in the status pier reports.

use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};
use serde_json::json;

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::Scene;

both_modes!(run);

async fn run(mode: Mode) {
    let mut scene = Scene::new("s04", mode).await;
    let ca = Ca::new("e2e service CA");
    let billing = Upstream::https(
        "billing-pod",
        lo(2),
        ServerTls::new(&ca.server(&["billing.e2e.test"], &[])),
    )
    .await;
    let legacy = Upstream::http("eg-legacy", lo(3)).await;
    let draft = Upstream::https(
        "draft-weather",
        lo(4),
        ServerTls::new(&ca.server(&["weather.e2e.test"], &[])),
    )
    .await;
    scene.dns.set("weather.e2e.test", &[lo(4)]);

    let policy = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
        "metadata": {"name": "billing-tls", "namespace": NS, "generation": 1},
        "spec": {
            "targetRefs": [{"group": "", "kind": "Service", "name": "billing", "sectionName": "https"}],
            "validation": {"hostname": "billing.e2e.test",
                "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "service-ca"}]}
        }
    });
    let draft_ca = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "weather-ca", "namespace": NS}, "stringData": {"root.pem": ca.cert_pem()}});
    let draft_backend = json!({
        "apiVersion": format!("{BACKEND_GROUP}/v1alpha1"), "kind": "Backend",
        "metadata": {"name": "weather", "namespace": NS, "generation": 1},
        "spec": {"destination": {
            "type": "FQDN",
            "fqdn": {"hostname": "weather.e2e.test", "tls": {"serverName": "weather.e2e.test",
                "caCertificates": [{"secretRef": {"name": "weather-ca"}, "key": "root.pem"}]}},
            "ports": [{"name": "https", "port": draft.port(), "protocol": "HTTPS"}]
        }}
    });
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            ca_config_map("service-ca", &ca.cert_pem()),
        ],
    );
    scene.write(
        "10-backends.yaml",
        &[
            service("billing", "https", 443),
            endpoint_slice(
                "billing-1",
                "billing",
                "https",
                billing.port(),
                &[(&billing.ip(), true)],
            ),
            policy,
            eg_backend_ip("legacy", &legacy.ip(), legacy.port(), &["gateway.envoyproxy.io/h2c"]),
            draft_ca,
            draft_backend,
            http_route(
                "mixed",
                "gw",
                vec![
                    rule("/billing", vec![service_ref("billing", 443)]),
                    rule("/legacy", vec![backend_ref(EG_GROUP, "Backend", "legacy")]),
                    rule("/weather", vec![backend_ref(BACKEND_GROUP, "Backend", "weather")]),
                ],
            ),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    scene.wait_for_upstream("/billing", "billing-pod").await;
    for s in billing.requests() {
        assert!(s.tls, "the policy's Service was reached in plaintext: {s:?}");
        assert_eq!(
            s.sni.as_deref(),
            Some("billing.e2e.test"),
            "SNI from the policy's validation.hostname"
        );
    }
    assert_eq!(billing.plaintext_attempts(), 0);

    scene.wait_for_upstream("/legacy", "eg-legacy").await;
    for s in legacy.requests() {
        assert!(!s.tls);
        assert_eq!(
            s.version, "HTTP/2.0",
            "appProtocols gateway.envoyproxy.io/h2c means HTTP/2 in cleartext"
        );
    }

    scene.wait_for_upstream("/weather", "draft-weather").await;
    for s in draft.requests() {
        assert!(s.tls, "the draft Backend's HTTPS port was reached in plaintext: {s:?}");
        assert_eq!(
            s.sni.as_deref(),
            Some("weather.e2e.test"),
            "SNI from fqdn.tls.serverName"
        );
    }
    assert_eq!(draft.plaintext_attempts(), 0);
    let status = scene.pier().admin_json("/debug/status").await.to_string();
    assert!(
        status.contains("DraftShape"),
        "the draft Backend is not marked Deprecated/DraftShape: {status}"
    );
}
