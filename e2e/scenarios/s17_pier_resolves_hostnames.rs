//! Scenario 17: DNS-rebinding-safe resolution (`--resolve-hostnames pier`). Loopback is allowed and one
//! loopback address, 127.0.0.6, is put in a denied CIDR to stand for a forbidden range (metadata, the Pod
//! network): an upstream listens there, on the same port and with the same certificate as the allowed
//! upstream at 127.0.0.5, so any request that reached it would succeed — the test can fail.
//!
//! - a name the test's DNS answers with the denied address gets no traffic (503, the cluster has no
//!   endpoint) and its Backend's status names the dropped address and the rule;
//! - a name answered with the allowed address works over TLS, with SNI and the certificate check still
//!   on the hostname although Envoy is handed an address;
//! - a rebinding name (allowed, then re-pointed at the denied address) is cut off once pier looks it up
//!   again — at its TTL (the responder's is 1 s, and `--dns-min-ttl 1s` lets pier honour it);
//! - through all of it the denied upstream sees no connection at all, and its address is nowhere in
//!   Envoy's configuration.
//!
//! The default (`envoy` mode, [`default_mode_is_strict_dns`]) is unchanged: Envoy gets a STRICT_DNS
//! cluster and resolves the name itself — and so follows a rebinding name to the denied address, which
//! is the gap this mode closes (docs/security.md).

use std::net::SocketAddr;
use std::time::Instant;

use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};

use crate::harness::manifests::*;
use crate::harness::pier::PierOptions;
use crate::harness::scene::{CONVERGE, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

const NAMES: [&str; 3] = ["api.e2e.test", "denied.e2e.test", "rebind.e2e.test"];

/// The allowed upstream (127.0.0.5) and the one in the denied range (127.0.0.6, same port), both
/// with a certificate for every test name.
async fn upstreams(ca: &Ca) -> (Upstream, Upstream) {
    let tls = || ServerTls::new(&ca.server(&NAMES, &[]));
    let allowed = Upstream::https("allowed", lo(5), tls()).await;
    let denied = Upstream::bind("denied", SocketAddr::from((lo(6), allowed.port())), Some(tls()))
        .await
        .expect("binding the denied upstream");
    (allowed, denied)
}

fn write_config(scene: &Scene, port: u16, ca: &Ca) {
    let backend = |name: &str, host: &str| {
        xbackend_hostname(name, host, port, Some(backend_tls("ServerOnly", host, "trusted-ca")))
    };
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            ca_config_map("trusted-ca", &ca.cert_pem()),
            backend("api", "api.e2e.test"),
            backend("denied", "denied.e2e.test"),
            backend("rebind", "rebind.e2e.test"),
            http_route(
                "egress",
                "gw",
                vec![
                    rule("/api", vec![xbackend_ref("api")]),
                    rule("/denied", vec![xbackend_ref("denied")]),
                    rule("/rebind", vec![xbackend_ref("rebind")]),
                ],
            ),
        ],
    );
}

fn options(resolve: &str) -> PierOptions {
    let args = [
        "--resolve-hostnames",
        resolve,
        "--deny-cidr",
        "127.0.0.6/32",
        "--dns-min-ttl",
        "1s",
    ];
    PierOptions {
        allow_loopback: true,
        extra_args: args.iter().map(ToString::to_string).collect(),
        ..PierOptions::default()
    }
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s17", mode).await;
    let ca = Ca::new("e2e trusted CA");
    let (allowed, denied) = upstreams(&ca).await;
    scene.dns.set("api.e2e.test", &[lo(5)]);
    scene.dns.set("denied.e2e.test", &[lo(6)]);
    scene.dns.set("rebind.e2e.test", &[lo(5)]);
    write_config(&scene, allowed.port(), &ca);
    scene.start_pier(options("pier")).await;
    scene.start_envoy("default/gw").await;

    // (b) The allowed answer works, over TLS verified for the hostname.
    scene.wait_for_upstream("/api", "allowed").await;
    let seen = allowed.requests();
    let api = seen
        .iter()
        .find(|s| s.path == "/api")
        .expect("the allowed upstream saw /api");
    assert_eq!(api.sni.as_deref(), Some("api.e2e.test"), "SNI is the hostname");
    let dump = scene.envoy().config_dump_text().await;
    assert!(dump.contains("\"127.0.0.5\""), "the allowed answer is an EDS endpoint");
    assert!(
        !dump.contains("envoy.clusters.dns"),
        "no STRICT_DNS cluster in pier mode"
    );

    // (a) The denied answer gets no traffic: the cluster has no endpoint.
    for _ in 0..5 {
        let r = scene.get("/denied").await.expect("a response");
        assert_eq!((r.status, r.upstream()), (503, None), "{r:?}");
    }
    let status = scene.pier().admin_json("/debug/status").await.to_string();
    for said in [
        "NoAllowedAddress",
        "dropped 127.0.0.6 (rule denied-cidr)",
        "api.e2e.test resolved to 127.0.0.5",
    ] {
        assert!(status.contains(said), "pier's status does not say {said:?}: {status}");
    }

    // (c) Rebinding: allowed, then re-pointed at the denied address.
    scene.wait_for_upstream("/rebind", "allowed").await;
    scene.dns.set("rebind.e2e.test", &[lo(6)]);
    let repointed = Instant::now();
    scene.wait_for_status("/rebind", 503).await;
    eprintln!(
        "s17/{}: rebinding cut off {:?} after the re-point",
        mode.label(),
        repointed.elapsed()
    );
    for _ in 0..5 {
        let r = scene.get("/rebind").await.expect("a response");
        assert_eq!((r.status, r.upstream()), (503, None), "{r:?}");
    }

    assert_eq!(denied.connections(), 0, "the denied upstream was connected to");
    let dump = scene.envoy().config_dump_text().await;
    assert!(
        !dump.contains("\"127.0.0.6\""),
        "the denied address is in Envoy's configuration"
    );
    let metrics = scene.pier().admin_get("/metrics").await.expect("metrics").body;
    for line in [
        "pier_dns_answers_dropped_total{rule=\"denied-cidr\"}",
        "pier_dns_answer_info{name=\"rebind.e2e.test\",address=\"127.0.0.6\",verdict=\"denied-cidr\"} 1",
    ] {
        assert!(metrics.contains(line), "/metrics has no {line:?}:\n{metrics}");
    }
}

/// Without the option, nothing changes: Envoy resolves the names (STRICT_DNS) — and follows a rebinding
/// name to the denied address, because pier never sees the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_mode_is_strict_dns() {
    if crate::harness::envoy::skipped() {
        return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
    }
    let mut scene = Scene::new("s17-default", Mode::Sotw).await;
    let ca = Ca::new("e2e trusted CA");
    let (allowed, denied) = upstreams(&ca).await;
    scene.dns.set("api.e2e.test", &[lo(5)]);
    scene.dns.set("denied.e2e.test", &[lo(6)]);
    scene.dns.set("rebind.e2e.test", &[lo(5)]);
    write_config(&scene, allowed.port(), &ca);
    scene.start_pier(options("envoy")).await;
    scene.start_envoy("default/gw").await;

    scene.wait_for_upstream("/api", "allowed").await;
    let dump = scene.envoy().config_dump_text().await;
    assert!(dump.contains("envoy.clusters.dns"), "the default is STRICT_DNS");
    scene.wait_for_upstream("/rebind", "allowed").await;
    scene.dns.set("rebind.e2e.test", &[lo(6)]);
    eventually(
        "Envoy follows the rebinding name to the denied address",
        CONVERGE,
        || async {
            let r = scene.get("/rebind").await?;
            match r.upstream() {
                Some("denied") => Ok(()),
                other => Err(format!("status {} from {other:?}", r.status)),
            }
        },
    )
    .await;
    assert!(denied.connections() > 0);
}
