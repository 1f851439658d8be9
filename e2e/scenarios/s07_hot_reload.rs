//! Scenario 7: hot reload. Editing a Backend's hostname, then its port, in the watched directory moves
//! traffic to the new upstream without restarting pier or Envoy, and without a single failed request on
//! the way (the old cluster serves until the new one is warm: make-before-break). For every edit the suite
//! measures file write → first request served by the new upstream, and file write → Envoy counting the
//! CDS update as applied (`cluster_manager.cds.update_success`), and prints them as `E2E-METRIC` lines;
//! 20 further hostname edits give a median and a worst case.

use std::time::{Duration, Instant};

use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::Value;

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};

both_modes!(run);

/// How many timed hostname edits go into the median / worst figures.
const EDITS: usize = 20;

fn backend(hostname: &str, port: u16) -> Vec<Value> {
    vec![xbackend_hostname("app", hostname, port, None)]
}

/// Two plain upstreams on one port number, on 127.0.0.2 and 127.0.0.3 (so that a hostname edit alone — same
/// port — moves traffic). Retries in the unlikely case the port is taken on the second address.
async fn same_port_pair() -> (Upstream, Upstream) {
    for _ in 0..20 {
        let a = Upstream::http("upstream-a", lo(2)).await;
        if let Ok(b) = Upstream::bind("upstream-b", (lo(3), a.port()).into(), None).await {
            return (a, b);
        }
    }
    panic!("no port free on both 127.0.0.2 and 127.0.0.3");
}

struct Timing {
    /// File write → first response from the new upstream.
    traffic: Duration,
    /// File write → Envoy's CDS update_success counter moving.
    applied: Option<Duration>,
    /// Responses during the switch that no upstream answered (5xx from Envoy, or failures).
    failures: Vec<String>,
}

/// Writes `docs` as `10-backend.yaml` and times the switch to `target` (see [`Timing`]).
async fn timed_edit(scene: &Scene, docs: &[Value], target: &str) -> Timing {
    let envoy = scene.envoy();
    let before = envoy.stat("cluster_manager.cds.update_success").await;
    let start = Instant::now();
    scene.write("10-backend.yaml", docs);
    let traffic = async {
        let mut failures = Vec::new();
        loop {
            assert!(
                start.elapsed() < CONVERGE,
                "traffic did not move to {target} within {CONVERGE:?}"
            );
            match http::get(scene.listener(), HOST, "/app").await {
                Ok(r) if r.upstream() == Some(target) => return (start.elapsed(), failures),
                Ok(r) if r.upstream().is_some() => {}
                Ok(r) => failures.push(format!("status {}: {}", r.status, r.body.trim())),
                Err(e) => failures.push(e),
            }
            // A breather, so the probe does not starve pier and Envoy of the machine's two cores.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    let applied = async {
        while start.elapsed() < CONVERGE {
            if envoy.stat("cluster_manager.cds.update_success").await > before {
                return Some(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        None
    };
    let ((traffic, failures), applied) = tokio::join!(traffic, applied);
    Timing {
        traffic,
        applied,
        failures,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s07", mode).await;
    let (a, b) = same_port_pair().await;
    let c = Upstream::http("upstream-c", lo(3)).await;
    scene.dns.set("a.e2e.test", &[lo(2)]);
    scene.dns.set("b.e2e.test", &[lo(3)]);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            http_route("app", "gw", vec![rule("/app", vec![xbackend_ref("app")])]),
        ],
    );
    scene.write("10-backend.yaml", &backend("a.e2e.test", a.port()));
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/app", "upstream-a").await;

    let label = mode.label();
    for (edit, docs, target) in [
        ("hostname", backend("b.e2e.test", a.port()), "upstream-b"),
        ("port", backend("b.e2e.test", c.port()), "upstream-c"),
    ] {
        let t = timed_edit(&scene, &docs, target).await;
        eprintln!(
            "E2E-METRIC mode={label} edit={edit} reload_to_traffic_ms={} reload_to_envoy_cds_applied_ms={}",
            ms(t.traffic),
            t.applied.map_or("never".to_string(), ms)
        );
        assert!(
            t.failures.is_empty(),
            "{edit} edit: requests failed during the switch: {:?}",
            t.failures
        );
    }
    let served_by_b = b.requests().len();

    let mut traffic = Vec::new();
    let mut applied = Vec::new();
    for i in 0..EDITS {
        let (host, target) = if i % 2 == 0 {
            ("a.e2e.test", "upstream-a")
        } else {
            ("b.e2e.test", "upstream-b")
        };
        let t = timed_edit(&scene, &backend(host, a.port()), target).await;
        assert!(
            t.failures.is_empty(),
            "edit {i}: requests failed during the switch: {:?}",
            t.failures
        );
        traffic.push(t.traffic);
        applied.extend(t.applied);
    }
    traffic.sort();
    applied.sort();
    let median = |v: &[Duration]| v.get(v.len() / 2).copied().unwrap_or_default();
    eprintln!(
        "E2E-METRIC mode={label} edits={EDITS} reload_to_traffic_ms median={} worst={} | \
         reload_to_envoy_cds_applied_ms median={} worst={} (n={})",
        ms(median(&traffic)),
        ms(*traffic.last().unwrap()),
        ms(median(&applied)),
        ms(applied.last().copied().unwrap_or_default()),
        applied.len()
    );
    assert_eq!(
        applied.len(),
        EDITS,
        "some edits never showed up as a CDS update in Envoy's stats"
    );
    assert!(
        b.requests().len() > served_by_b,
        "upstream-b served nothing during the flips"
    );
}
