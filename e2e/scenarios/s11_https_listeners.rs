//! Scenario 11d: HTTPRoutes on HTTPS listeners that share a port and differ by hostname (the traffic half of
//! upstream's HTTPRouteHTTPSListener and HTTPRouteHTTPSListenerDetectMisdirectedRequests). Envoy picks the
//! listener by SNI and terminates with the Secret's certificate (verified by the client against the suite's
//! CA); each route is attached to one listener by `sectionName`:
//!
//! - a request whose Host is its SNI reaches that listener's route (exact hostnames and a wildcard);
//! - a request whose Host belongs to another listener on the port than the one its SNI chose gets 421
//!   (Misdirected Request) from Envoy, so the client can open a connection that names the right host;
//! - replacing the Secret's certificate (another CA) is served without a restart, on every listener.

use std::sync::Arc;

use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::Upstream;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// `(listener name, listener hostname, upstream)`.
const LISTENERS: [(&str, &str, &str); 3] = [
    ("a", "a.e2e.test", "up-a"),
    ("b", "b.e2e.test", "up-b"),
    ("wild", "*.wild.e2e.test", "up-wild"),
];

/// One GET with SNI `sni` and Host `host`, trusting only `ca`.
async fn get(scene: &Scene, ca: &Ca, sni: &str, host: &str) -> Result<http::Response, String> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert_der()).map_err(|e| e.to_string())?;
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(scene.listener())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from(sni.to_string()).map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake for {sni}: {e}"))?;
    http::request_over(tls, host, "/page").await
}

fn gateway(port: u16) -> Value {
    let listeners: Vec<Value> = LISTENERS
        .iter()
        .map(|(name, hostname, _)| {
            json!({"name": name, "protocol": "HTTPS", "port": port, "hostname": hostname,
                "tls": {"mode": "Terminate", "certificateRefs": [{"name": "gw-cert"}]}})
        })
        .collect();
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS, "generation": 1},
        "spec": {"gatewayClassName": "pier", "listeners": listeners}})
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s11-https", mode).await;
    let ca = Ca::new("pier e2e gateway CA");
    let leaf = ca.server(&["a.e2e.test", "b.e2e.test", "*.wild.e2e.test"], &[]);
    let mut upstreams = Vec::new();
    let mut docs = vec![gateway_class(), gateway(scene.port), tls_secret("gw-cert", &leaf)];
    for (i, (listener, _, upstream)) in LISTENERS.iter().enumerate() {
        let up = Upstream::http(upstream, lo(2 + i as u8)).await;
        docs.extend(service_at(upstream, &up.ip(), up.port()));
        let mut route = http_route(
            &format!("route-{listener}"),
            "gw",
            vec![rule("/", vec![service_ref(upstream, 80)])],
        );
        route["spec"]["parentRefs"][0]["sectionName"] = json!(listener);
        docs.push(route);
        upstreams.push(up);
    }
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    eventually(
        &format!("s11-https/{}: a.e2e.test answered by up-a", mode.label()),
        CONVERGE,
        || async {
            let r = get(&scene, &ca, "a.e2e.test", "a.e2e.test").await?;
            match r.upstream() {
                Some("up-a") => Ok(()),
                other => Err(format!("status {} from {other:?}", r.status)),
            }
        },
    )
    .await;

    // `(SNI, Host, upstream or the status Envoy answers itself)`.
    let cases = [
        ("a.e2e.test", "a.e2e.test", "up-a"),
        ("b.e2e.test", "b.e2e.test", "up-b"),
        ("x.wild.e2e.test", "x.wild.e2e.test", "up-wild"),
        ("x.wild.e2e.test", "y.wild.e2e.test", "up-wild"),
        ("a.e2e.test", "b.e2e.test", "status:421"),
        ("b.e2e.test", "a.e2e.test", "status:421"),
        ("x.wild.e2e.test", "a.e2e.test", "status:421"),
        ("a.e2e.test", "x.wild.e2e.test", "status:421"),
    ];
    let mut wrong = Vec::new();
    for (sni, host, want) in cases {
        let got = http::outcome(&get(&scene, &ca, sni, host).await);
        if got != want {
            wrong.push(format!("SNI {sni}, Host {host}: want {want}, got {got}"));
        }
    }
    assert!(wrong.is_empty(), "wrong answers:\n{}", wrong.join("\n"));
    for (up, (_, hostname, _)) in upstreams.iter().zip(LISTENERS) {
        let owns = |host: &str| match hostname.strip_prefix('*') {
            Some(suffix) => host.ends_with(suffix),
            None => host == hostname,
        };
        let foreign: Vec<_> = up
            .requests()
            .into_iter()
            .filter(|s| !s.host.as_deref().is_some_and(owns))
            .collect();
        assert!(
            foreign.is_empty(),
            "{} served a host its listener does not own: {foreign:?}",
            up.name
        );
    }

    // Certificate rotation: the Secret now holds a certificate from another CA, and the listeners serve it
    // without a restart; the old CA no longer verifies them.
    let rotated_ca = Ca::new("pier e2e rotated CA");
    let rotated = rotated_ca.server(&["a.e2e.test", "b.e2e.test", "*.wild.e2e.test"], &[]);
    docs[2] = tls_secret("gw-cert", &rotated);
    scene.write("00-gateway.yaml", &docs);
    eventually(
        &format!("s11-https/{}: the rotated certificate served", mode.label()),
        CONVERGE,
        || async {
            let r = get(&scene, &rotated_ca, "b.e2e.test", "b.e2e.test").await?;
            match r.upstream() {
                Some("up-b") => Ok(()),
                other => Err(format!("status {} from {other:?}", r.status)),
            }
        },
    )
    .await;
    for sni in ["a.e2e.test", "x.wild.e2e.test"] {
        let old = get(&scene, &ca, sni, sni).await;
        assert!(old.is_err(), "{sni}: the old certificate is still served: {old:?}");
    }
}
