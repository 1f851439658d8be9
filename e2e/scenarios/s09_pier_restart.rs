//! Scenario 9: pier restarts. While pier is down, Envoy keeps serving the last configuration. A new pier on
//! the same directory and address serves content-derived versions, so on reconnect Envoy is handed the
//! same versions and applies nothing new: its resource versions are unchanged, and neither
//! `cluster_manager.cds.update_success` nor `listener_manager.lds.update_success` moves (no churn), nor
//! do the cluster/listener added/modified/removed counters.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pier::testkit::http::tally;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;

use crate::harness::envoy::Envoy;
use crate::harness::manifests::*;
use crate::harness::pier::PierOptions;
use crate::harness::scene::{HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// After reconnecting, how long Envoy is watched for applying anything.
const SETTLE: Duration = Duration::from_secs(2);

/// Counters that move whenever Envoy accepts or applies cluster/listener configuration.
const CHURN: [&str; 10] = [
    "cluster_manager.cds.update_success",
    "listener_manager.lds.update_success",
    "cluster_manager.cds.update_rejected",
    "listener_manager.lds.update_rejected",
    "cluster_manager.cluster_added",
    "cluster_manager.cluster_modified",
    "cluster_manager.cluster_removed",
    "listener_manager.listener_added",
    "listener_manager.listener_modified",
    "listener_manager.listener_removed",
];

async fn churn(envoy: &Envoy) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    for name in CHURN {
        out.insert(name, envoy.stat(name).await);
    }
    out
}

/// The churn counters once they stopped moving (the start-up exchange — every response and ACK — is over).
async fn settled(envoy: &Envoy) -> BTreeMap<&'static str, u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = churn(envoy).await;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = churn(envoy).await;
        if now == last {
            return now;
        }
        assert!(Instant::now() < deadline, "Envoy's xDS counters kept moving: {now:?}");
        last = now;
    }
}

/// Splits counters into (applied: added/modified/removed, accepted: update_success/rejected).
fn split(counters: &BTreeMap<&'static str, u64>) -> (BTreeMap<&'static str, u64>, BTreeMap<&'static str, u64>) {
    counters
        .iter()
        .map(|(k, v)| (*k, *v))
        .partition(|(name, _)| !name.contains(".update_"))
}

async fn connected(envoy: &Envoy, want: u64) {
    eventually(
        &format!("control_plane.connected_state == {want}"),
        Duration::from_secs(30),
        || async {
            let state = envoy.stat("control_plane.connected_state").await;
            if state == want {
                Ok(())
            } else {
                Err(format!("connected_state {state}"))
            }
        },
    )
    .await
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s09", mode).await;
    let up = Upstream::http("steady", lo(2)).await;
    scene.write(
        "00-config.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            service("steady", "http", 80),
            endpoint_slice("steady-1", "steady", "http", up.port(), &[(&up.ip(), true)]),
            http_route("steady", "gw", vec![rule("/", vec![service_ref("steady", 80)])]),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/", "steady").await;
    connected(scene.envoy(), 1).await;
    let baseline = settled(scene.envoy()).await;
    let versions = scene.envoy().active_versions().await;
    let cds_version = scene
        .envoy()
        .stats()
        .await
        .get("cluster_manager.cds.version_text")
        .cloned();
    let xds = scene.pier().xds;

    scene.stop_pier().await;
    connected(scene.envoy(), 0).await;
    let t = tally(scene.listener(), HOST, "/", 10).await;
    assert_eq!(t.get("steady"), 10, "Envoy stopped serving while pier was down: {t}");

    scene
        .start_pier(PierOptions {
            xds_address: Some(xds),
            ..super::loopback_allowed()
        })
        .await;
    connected(scene.envoy(), 1).await;
    tokio::time::sleep(SETTLE).await;

    let after = churn(scene.envoy()).await;
    let (applied, accepted) = split(&after);
    let versions_after = scene.envoy().active_versions().await;
    let cds_version_after = scene
        .envoy()
        .stats()
        .await
        .get("cluster_manager.cds.version_text")
        .cloned();
    eprintln!(
        "E2E-INFO mode={} restart churn before={baseline:?} after={after:?}",
        mode.label()
    );
    assert_eq!(
        versions_after, versions,
        "Envoy's resource versions changed across the pier restart"
    );
    assert_eq!(
        cds_version_after, cds_version,
        "cluster_manager.cds.version_text changed across the restart"
    );
    let (applied_before, accepted_before) = split(&baseline);
    assert_eq!(
        applied, applied_before,
        "Envoy added, modified or removed clusters/listeners after the restart"
    );
    assert_eq!(
        accepted, accepted_before,
        "Envoy accepted CDS/LDS updates after reconnecting (churn)"
    );
    assert_eq!(
        scene.envoy().stat("control_plane.connected_state").await,
        1,
        "Envoy lost the new pier"
    );
    let t = tally(scene.listener(), HOST, "/", 10).await;
    assert_eq!(t.get("steady"), 10, "traffic after the restart: {t}");
}
