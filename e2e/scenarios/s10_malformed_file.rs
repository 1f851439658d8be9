//! Scenario 10: a malformed file leaves traffic untouched. The Backend's file is rewritten to point at a new
//! upstream, but broken — first with a field pier's Backend schema rejects, then with a YAML syntax error.
//! Each time pier reports the error (naming the file) in `/debug/status` and `/readyz` while staying ready,
//! Envoy is sent nothing (no CDS/LDS update, no rejection), and every request still goes to the old
//! upstream. Fixing the file applies the fix: traffic moves to the new upstream and the error clears.

use std::time::{Duration, Instant};

use pier::testkit::http::tally;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::Value;

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// How long traffic is watched for staying on the old upstream after a broken write.
const HOLD: Duration = Duration::from_millis(1500);

const FILE: &str = "10-backend.yaml";

async fn source_error(scene: &Scene) -> Value {
    scene.pier().admin_json("/debug/status").await["source_error"].clone()
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s10", mode).await;
    let old = Upstream::http("old-upstream", lo(2)).await;
    let new = Upstream::http("new-upstream", lo(3)).await;
    scene.dns.set("old.e2e.test", &[lo(2)]);
    scene.dns.set("new.e2e.test", &[lo(3)]);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            http_route("app", "gw", vec![rule("/", vec![xbackend_ref("app")])]),
        ],
    );
    scene.write(FILE, &[xbackend_hostname("app", "old.e2e.test", old.port(), None)]);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/", "old-upstream").await;
    assert!(source_error(&scene).await.is_null());

    let envoy = scene.envoy();
    let counters = [
        "cluster_manager.cds.update_success",
        "listener_manager.lds.update_success",
    ];
    let mut schema_error = xbackend_hostname("app", "new.e2e.test", new.port(), None);
    schema_error["spec"]["tls"] = serde_json::json!({"mode": "Sometimes"});
    let broken = [
        ("schema error", yaml(&[schema_error])),
        (
            "YAML syntax error",
            format!(
                "{}\nspec: [unclosed\n",
                yaml(&[xbackend_hostname("app", "new.e2e.test", new.port(), None)])
            ),
        ),
    ];
    for (what, text) in broken {
        let before: Vec<u64> = counters_now(envoy, &counters).await;
        scene.config.write(FILE, &text);
        let error = eventually(&format!("pier to report the {what}"), CONVERGE, || async {
            match source_error(&scene).await {
                Value::String(e) => Ok(e),
                other => Err(format!("source_error {other}")),
            }
        })
        .await;
        assert!(error.contains(FILE), "the {what} does not name the file: {error}");
        let ready = scene.pier().admin_get("/readyz").await.expect("/readyz");
        assert_eq!(
            ready.status, 200,
            "pier stopped being ready over a bad file: {}",
            ready.body
        );
        assert!(
            ready.body.contains(FILE),
            "/readyz does not show the {what}: {}",
            ready.body
        );

        let start = Instant::now();
        while start.elapsed() < HOLD {
            let t = tally(scene.listener(), HOST, "/", 4).await;
            assert_eq!(t.get("old-upstream"), 4, "traffic moved after a {what}: {t}");
        }
        assert!(
            new.requests().is_empty(),
            "the new upstream was reached through a broken file"
        );
        assert_eq!(
            counters_now(envoy, &counters).await,
            before,
            "Envoy was sent an update after a {what}"
        );
        assert_eq!(envoy.stat("cluster_manager.cds.update_rejected").await, 0);
    }

    scene.write(FILE, &[xbackend_hostname("app", "new.e2e.test", new.port(), None)]);
    scene.wait_for_upstream("/", "new-upstream").await;
    eventually("the source error to clear", CONVERGE, || async {
        let e = source_error(&scene).await;
        if e.is_null() { Ok(()) } else { Err(e.to_string()) }
    })
    .await;
    let t = tally(scene.listener(), HOST, "/", 10).await;
    assert_eq!(t.get("new-upstream"), 10, "{t}");
}

/// The current values of `names`.
async fn counters_now(envoy: &crate::harness::envoy::Envoy, names: &[&str]) -> Vec<u64> {
    let mut out = Vec::new();
    for name in names {
        out.push(envoy.stat(name).await);
    }
    out
}
