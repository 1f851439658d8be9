//! Scenario 11e: a cross-namespace backendRef lives and dies with its ReferenceGrant, through ADS. An
//! HTTPRoute in `default` forwards to a Service in `other`:
//!
//! - with a ReferenceGrant in `other` (from HTTPRoute in `default`, to that Service by name) the upstream
//!   answers;
//! - the same kind of ref to a Service the grant does not name gets 500 (Gateway API's share for an invalid
//!   backendRef; here all of it), and never reaches that Service's upstream;
//! - removing the grant's file revokes the access: the granted path turns into 500 too; restoring the file
//!   restores the traffic.

use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::Scene;

both_modes!(run);

const OTHER: &str = "other";

/// `object` moved to namespace `other`.
fn in_other(mut object: Value) -> Value {
    object["metadata"]["namespace"] = json!(OTHER);
    object
}

fn grant() -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
        "metadata": {"name": "routes-to-granted", "namespace": OTHER},
        "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": NS}],
            "to": [{"group": "", "kind": "Service", "name": "granted"}]}})
}

fn cross_ref(name: &str) -> Value {
    json!({"name": name, "namespace": OTHER, "port": 80})
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s11-grant", mode).await;
    let granted = Upstream::http("granted", lo(2)).await;
    let ungranted = Upstream::http("ungranted", lo(3)).await;
    let mut docs = vec![gateway_class(), gateway("gw", scene.port)];
    for up in [&granted, &ungranted] {
        docs.extend(service_at(&up.name, &up.ip(), up.port()).map(in_other));
    }
    docs.push(http_route(
        "cross",
        "gw",
        vec![
            rule("/granted", vec![cross_ref("granted")]),
            rule("/ungranted", vec![cross_ref("ungranted")]),
        ],
    ));
    scene.write("00-base.yaml", &docs);
    scene.write("10-grant.yaml", &[grant()]);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    scene.wait_for_upstream("/granted", "granted").await;
    let r = scene.get("/ungranted").await.unwrap();
    assert_eq!((r.status, r.upstream()), (500, None), "a ref without a grant: {r:?}");

    // Revoked: the next configuration drops the access.
    scene.config.remove("10-grant.yaml");
    scene.wait_for_status("/granted", 500).await;
    let served = granted.requests().len();
    let r = scene.get("/granted").await.unwrap();
    assert_eq!((r.status, r.upstream()), (500, None), "{r:?}");
    assert_eq!(
        granted.requests().len(),
        served,
        "a revoked ref still reached its Service"
    );

    // Granted again.
    scene.write("10-grant.yaml", &[grant()]);
    scene.wait_for_upstream("/granted", "granted").await;
    assert!(
        ungranted.requests().is_empty(),
        "the Service no grant names received traffic: {:?}",
        ungranted.requests()
    );
}
