//! Scenario 19: an XBackend's `spec.protocol` on the wire (the traffic half of the Backend protocol
//! features no upstream conformance test has yet). Each upstream records the HTTP version and whether
//! the request came over TLS:
//!
//! - `HTTP2` over TLS: HTTP/2 (ALPN `h2`);
//! - `HTTP11` over TLS: HTTP/1.1 (ALPN `http/1.1` only);
//! - `HTTP` (unset) over TLS: ALPN offers both; the upstream, which prefers `h2`, gets HTTP/2;
//! - `H2C`: HTTP/2 with prior knowledge, in cleartext;
//! - `WSS`: a WebSocket upgrade through Envoy reaches the upstream over TLS as an HTTP/1.1 upgrade and
//!   echoes bytes back;
//! - `GRPC` over TLS: a gRPC call through a GRPCRoute reaches the upstream as HTTP/2 over TLS.

use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};
use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};

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

/// The HTTPRoute's hostname (the GRPCRoute has [`HOST`]).
const WEB: &str = "web.e2e.test";

/// Polls `path` on [`WEB`] until `upstream` answers.
async fn wait_for(scene: &Scene, path: &str, upstream: &str) {
    let what = format!("GET {path} answered by {upstream}");
    crate::harness::eventually(&what, CONVERGE, || async {
        let r = http::get(scene.listener(), WEB, path).await?;
        match r.upstream() {
            Some(u) if u == upstream => Ok(()),
            other => Err(format!("status {} from {other:?}", r.status)),
        }
    })
    .await;
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
    let grpc = Upstream::https("grpc", lo(7), tls("grpc")).await;
    for (name, ip) in [("h2", 2), ("h11", 3), ("auto", 4), ("h2c", 5), ("wss", 6), ("grpc", 7)] {
        scene.dns.set(&format!("{name}.e2e.test"), &[lo(ip)]);
    }
    let routes: Vec<Value> = ["h2", "h11", "auto", "h2c", "wss"]
        .iter()
        .map(|n| rule(&format!("/{n}"), vec![xbackend_ref(n)]))
        .collect();
    // HTTPRoutes and GRPCRoutes may not share a hostname: the HTTP traffic has its own.
    let mut web_route = http_route("protocols", "gw", routes);
    web_route["spec"]["hostnames"] = json!([WEB]);
    let mut grpc_rt = grpc_route("grpc", "gw", vec![json!({"backendRefs": [xbackend_ref("grpc")]})]);
    grpc_rt["spec"]["hostnames"] = json!([HOST]);
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
            backend("grpc", &grpc, Some("GRPC"), true),
            web_route,
            grpc_rt,
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
        wait_for(&scene, path, &upstream.name).await;
        assert_eq!(seen(upstream, path), (version.to_string(), over_tls), "{path}");
        assert_eq!(
            upstream.plaintext_attempts(),
            0,
            "{path}: nothing in plaintext to a TLS port"
        );
    }

    wait_for(&scene, "/wss", "wss").await;
    let payload = b"bytes over a WebSocket to a WSS backend";
    let (head, echoed) = http::upgrade_echo(scene.listener(), WEB, "/wss/socket", payload)
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

    let path = "/pkg.Svc/Method";
    let answer = crate::harness::eventually("a gRPC call answered by the GRPC backend", CONVERGE, || async {
        let a = super::s12_grpc::call(scene.listener(), path).await?;
        if a.upstream() == Some("grpc") {
            Ok(a)
        } else {
            Err(format!("{a:?}"))
        }
    })
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let requests = grpc.requests();
    let call = requests
        .iter()
        .find(|r| r.path == path)
        .expect("the call reached the upstream");
    assert_eq!(
        (call.version.as_str(), call.tls, call.header("content-type")),
        ("HTTP/2.0", true, Some("application/grpc")),
        "what the GRPC upstream saw"
    );
}
