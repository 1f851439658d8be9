//! Scenario 19: an XBackend's `spec.protocol` on the wire (the traffic half of the Backend protocol
//! features no upstream conformance test has yet). Each upstream records the HTTP version and whether
//! the request came over TLS:
//!
//! - `HTTP2` over TLS: HTTP/2 (ALPN `h2`);
//! - `HTTP11` over TLS: HTTP/1.1 (ALPN `http/1.1` only);
//! - `HTTP` (unset) over TLS: ALPN offers both; the upstream, which prefers `h2`, gets HTTP/2;
//! - `H2C`: HTTP/2 with prior knowledge, in cleartext;
//! - `WSS`: a WebSocket upgrade through Envoy reaches the upstream over TLS as an HTTP/1.1 upgrade and
//!   echoes bytes back.

use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};
use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{HOST, Scene};

both_modes!(run);

/// A v1.7-shape ExternalHostname XBackend speaking `protocol`, over TLS (trusting `trusted-ca`) when
/// `tls` is set.
fn backend(name: &str, upstream: &Upstream, protocol: Option<&str>, tls: bool) -> Value {
    let hostname = format!("{name}.e2e.test");
    let mut spec = json!({"type": "ExternalHostname", "externalHostname": {"hostname": hostname},
        "port": {"number": upstream.port()}});
    if let Some(p) = protocol {
        spec["protocol"] = json!(p);
    }
    if tls {
        spec["tls"] = backend_tls("ServerOnly", &hostname, "trusted-ca");
    }
    json!({"apiVersion": format!("{XBACKEND_GROUP}/v1alpha1"), "kind": "XBackend",
        "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

/// What `upstream` saw for `path`: (HTTP version, over TLS).
fn seen(upstream: &Upstream, path: &str) -> (String, bool) {
    let requests = upstream.requests();
    let r = requests
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("{path} never reached {}: {requests:?}", upstream.name));
    (r.version.clone(), r.tls)
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s19", mode).await;
    let ca = Ca::new("e2e protocols CA");
    let tls = |name: &str| ServerTls::new(&ca.server(&[&format!("{name}.e2e.test")], &[]));
    let h2 = Upstream::https("h2", lo(2), tls("h2")).await;
    let h11 = Upstream::https("h11", lo(3), tls("h11")).await;
    let auto = Upstream::https("auto", lo(4), tls("auto")).await;
    let h2c = Upstream::http("h2c", lo(5)).await;
    let wss = Upstream::https("wss", lo(6), tls("wss")).await;
    for (name, ip) in [("h2", 2), ("h11", 3), ("auto", 4), ("h2c", 5), ("wss", 6)] {
        scene.dns.set(&format!("{name}.e2e.test"), &[lo(ip)]);
    }
    let routes: Vec<Value> = ["h2", "h11", "auto", "h2c", "wss"]
        .iter()
        .map(|n| rule(&format!("/{n}"), vec![xbackend_ref(n)]))
        .collect();
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            ca_config_map("trusted-ca", &ca.cert_pem()),
            backend("h2", &h2, Some("HTTP2"), true),
            backend("h11", &h11, Some("HTTP11"), true),
            backend("auto", &auto, None, true),
            backend("h2c", &h2c, Some("H2C"), false),
            backend("wss", &wss, Some("WSS"), true),
            http_route("protocols", "gw", routes),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    for (path, upstream, version, over_tls) in [
        ("/h2", &h2, "HTTP/2.0", true),
        ("/h11", &h11, "HTTP/1.1", true),
        ("/auto", &auto, "HTTP/2.0", true),
        ("/h2c", &h2c, "HTTP/2.0", false),
    ] {
        scene.wait_for_upstream(path, &upstream.name).await;
        assert_eq!(seen(upstream, path), (version.to_string(), over_tls), "{path}");
        assert_eq!(
            upstream.plaintext_attempts(),
            0,
            "{path}: nothing in plaintext to a TLS port"
        );
    }

    scene.wait_for_upstream("/wss", "wss").await;
    let payload = b"bytes over a WebSocket to a WSS backend";
    let (head, echoed) = http::upgrade_echo(scene.listener(), HOST, "/wss/socket", payload)
        .await
        .unwrap_or_else(|e| panic!("/wss/socket: {e}"));
    assert_eq!((head.status, head.upstream()), (101, Some("wss")), "{head:?}");
    assert_eq!(echoed, payload, "the echo");
    let requests = wss.requests();
    let upgrade = requests
        .iter()
        .find(|r| r.path == "/wss/socket")
        .unwrap_or_else(|| panic!("the upgrade never reached wss: {requests:?}"));
    assert_eq!(
        (upgrade.version.as_str(), upgrade.tls, upgrade.header("upgrade")),
        ("HTTP/1.1", true, Some("websocket")),
        "what the WSS upstream saw"
    );
}
