//! Scenario 12b: GRPCRoute and HTTPRoute on an HTTPS listener. Envoy terminates TLS with the certificate of a
//! `kubernetes.io/tls` Secret (the listener's `certificateRefs`), which the client verifies against the
//! suite's CA for the name it asked for (SNI):
//!
//! - a gRPC client negotiates `h2` by ALPN (no prior knowledge over TLS) and its calls reach the GRPCRoute's
//!   upstream over HTTP/2 (the Service's cleartext twin cluster); a call no rule matches gets `grpc-status: 12`;
//! - an HTTP/1.1 client (no ALPN) on another hostname of the same listener reaches the HTTPRoute's upstream.

use std::sync::Arc;

use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::Upstream;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use serde_json::json;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::s12_grpc::{EMPTY_FRAME, call_over};
use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

const WEB_HOST: &str = "web.e2e.test";

/// A TLS connection to Envoy's listener for `server_name`, trusting only `ca`, offering `alpn`.
async fn connect(scene: &Scene, ca: &Ca, server_name: &str, alpn: &[&[u8]]) -> Result<TlsStream<TcpStream>, String> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert_der()).map_err(|e| e.to_string())?;
    let mut config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(scene.listener())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from(server_name.to_string()).map_err(|e| e.to_string())?;
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake for {server_name}: {e}"))
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s12-tls", mode).await;
    let ca = Ca::new("pier e2e gateway CA");
    let leaf = ca.server(&[HOST, WEB_HOST], &[]);
    let grpc = Upstream::http("grpc-tls", lo(2)).await;
    let web = Upstream::http("web-tls", lo(3)).await;
    let gateway = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS, "generation": 1},
        "spec": {"gatewayClassName": "pier", "listeners": [{"name": "https", "protocol": "HTTPS",
            "port": scene.port, "tls": {"mode": "Terminate", "certificateRefs": [{"name": "gw-cert"}]}}]}});
    let mut grpc_route = grpc_route(
        "grpc",
        "gw",
        vec![
            json!({"matches": [{"method": {"type": "Exact", "service": "pkg.Svc", "method": "Method"}}],
            "backendRefs": [service_ref("grpc-tls", 80)]}),
        ],
    );
    grpc_route["spec"]["hostnames"] = json!([HOST]);
    let mut web_route = http_route("web", "gw", vec![rule("/", vec![service_ref("web-tls", 80)])]);
    web_route["spec"]["hostnames"] = json!([WEB_HOST]);
    let mut docs = vec![
        gateway_class(),
        gateway,
        tls_secret("gw-cert", &leaf),
        grpc_route,
        web_route,
    ];
    for up in [&grpc, &web] {
        docs.extend(service_at(&up.name, &up.ip(), up.port()));
    }
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    let answer = eventually(
        &format!(
            "s12-tls/{}: /pkg.Svc/Method over TLS answered by grpc-tls",
            mode.label()
        ),
        CONVERGE,
        || async {
            let tls = connect(&scene, &ca, HOST, &[b"h2"]).await?;
            let alpn = tls
                .get_ref()
                .1
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned());
            if alpn.as_deref() != Some("h2") {
                return Err(format!("ALPN negotiated {alpn:?}, not h2"));
            }
            let a = call_over(tls, "/pkg.Svc/Method", &[]).await?;
            match a.upstream() {
                Some("grpc-tls") => Ok(a),
                other => Err(format!("status {} from {other:?}: {a:?}", a.status)),
            }
        },
    )
    .await;
    assert_eq!(answer.status, 200);
    let seen = grpc.requests();
    let last = seen.last().expect("grpc-tls saw the call");
    assert_eq!(
        (last.version.as_str(), last.path.as_str(), last.body_len, last.tls),
        ("HTTP/2.0", "/pkg.Svc/Method", EMPTY_FRAME.len(), false),
        "what grpc-tls saw"
    );

    let tls = connect(&scene, &ca, HOST, &[b"h2"]).await.unwrap();
    let a = call_over(tls, "/pkg.Svc/Unknown", &[]).await.unwrap();
    assert_eq!(
        (a.status, a.header("grpc-status"), a.upstream()),
        (200, Some("12"), None),
        "{a:?}"
    );

    let tls = connect(&scene, &ca, WEB_HOST, &[]).await.unwrap();
    let r = http::request_over(tls, WEB_HOST, "/page").await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("web-tls")), "{r:?}");
    let seen = web.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].version.as_str(), seen[0].path.as_str()), ("HTTP/1.1", "/page"));
}
