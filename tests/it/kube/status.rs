//! Status write-back, Envoy rejections on Gateway status, leader election between two pier instances,
//! and the change-to-ADS latency; all against the in-process fake API server.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::ads::Proxy;
use crate::kube_support::{GW, GW_GROUP, Pier, base_model, service, settings, wait_for};

const ME: &str = "pier.dev/gateway-controller";
const QUIET: Duration = Duration::from_millis(30);

fn route(api: &FakeApiServer) -> Value {
    api.get(GW_GROUP, "httproutes", "default", "route").unwrap()
}

fn parent<'a>(status: &'a Value, controller: &str) -> Option<&'a Value> {
    status["status"]["parents"]
        .as_array()?
        .iter()
        .find(|p| p["controllerName"] == controller)
}

fn other_entry(message: &str) -> Value {
    json!({"controllerName": "example.com/other", "parentRef": {"name": "elsewhere"},
           "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": message,
                           "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 1}]})
}

/// Status is written; another controller's entries survive (also across a 409 conflict); a write that
/// would change nothing is not sent; lastTransitionTime moves only with a condition's status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_merges_other_controllers_retries_conflicts_and_skips_noops() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let mut r = route(&api);
    r["status"] = json!({"parents": [other_entry("theirs")]});
    api.apply(r);
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;

    let written = wait_for("pier's route parent", || parent(&route(&api), ME).cloned()).await;
    let accepted = &written["conditions"][0];
    assert_eq!(accepted["type"], "Accepted");
    let t0 = accepted["lastTransitionTime"].as_str().unwrap().to_string();
    assert_eq!(parent(&route(&api), "example.com/other"), Some(&other_entry("theirs")));
    let gw = wait_for("Gateway status", || {
        api.get(GW_GROUP, "gateways", "default", "gw")
            .filter(|g| g["status"]["listeners"][0]["attachedRoutes"] == 1)
    })
    .await;
    let conds = gw["status"]["conditions"].to_string();
    assert!(
        conds.contains("\"Programmed\"") && conds.contains("pier.dev/EnvoyRejected"),
        "{conds}"
    );
    wait_for("GatewayClass status", || {
        api.get(GW_GROUP, "gatewayclasses", "", "pier")
            .filter(|c| c["status"]["conditions"][0]["status"] == "True")
    })
    .await;

    // Nothing changes: no more status writes, and no reads either.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let puts = api.count("PUT", "/status");
    let gets = api
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/httproutes/"))
        .count();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(api.count("PUT", "/status"), puts, "no-op writes are skipped");
    let gets_after = api
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/httproutes/"))
        .count();
    assert_eq!(gets_after, gets, "an unchanged status is not even read again");

    // The route now points at a missing Service: ResolvedRefs flips, Accepted keeps its time. Another
    // controller writes in between (409), and its newer entry survives pier's retry.
    api.interfere_next_status_write(
        GW_GROUP,
        "httproutes",
        "default",
        "route",
        Box::new(|obj: &mut Value| obj["status"]["parents"][0] = other_entry("theirs, updated")),
    );
    let mut r = route(&api);
    r["spec"]["rules"][0]["backendRefs"][0]["name"] = json!("missing");
    api.apply(r);
    let mine = wait_for("ResolvedRefs=False", || {
        parent(&route(&api), ME)
            .filter(|p| {
                p["conditions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["type"] == "ResolvedRefs" && c["status"] == "False")
            })
            .cloned()
    })
    .await;
    assert_eq!(
        mine["conditions"][0]["lastTransitionTime"], t0,
        "Accepted did not change, nor did its time"
    );
    assert_eq!(mine["conditions"][0]["observedGeneration"], 2);
    assert_eq!(
        parent(&route(&api), "example.com/other"),
        Some(&other_entry("theirs, updated")),
        "the conflicting write was re-read and merged"
    );
    pier.stop().await;
    api.shutdown().await;
}

/// A NACK from a Gateway's Envoy shows on that Gateway's status, and clears on the next ACK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envoy_rejection_appears_on_gateway_status() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("base model", |d| d.contains("service/default/a/80"))
        .await;
    let mut proxy = Proxy::clusters(pier.xds, GW).await;
    let first = proxy.recv().await;
    proxy.ack().await;
    api.apply_yaml(&service("a", "10.0.0.5"));
    api.apply_yaml(&base_model().replace("{name: a, port: 80}", "{name: b, port: 80}"));
    proxy.recv().await;
    proxy
        .nack(&first.version_info, "cluster 'service/default/b/80': invalid upstream")
        .await;
    let rejected = |gw: Value| {
        gw["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "pier.dev/EnvoyRejected")
            .cloned()
    };
    let c = wait_for("rejection on the Gateway", || {
        rejected(api.get(GW_GROUP, "gateways", "default", "gw")?).filter(|c| c["status"] == "True")
    })
    .await;
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("envoy.config.cluster.v3.Cluster")
            && message.contains("service/default/b/80': invalid upstream"),
        "{message}"
    );

    api.apply_yaml(&base_model().replace("{name: a, port: 80}", "{name: c, port: 80}"));
    proxy.recv().await;
    proxy.ack().await;
    wait_for("rejection cleared", || {
        rejected(api.get(GW_GROUP, "gateways", "default", "gw")?).filter(|c| c["status"] == "False")
    })
    .await;
    pier.stop().await;
    api.shutdown().await;
}

/// Status writes are spaced to the configured rate, and counted on `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_are_rate_limited_and_counted() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    for i in 0..5 {
        api.apply_yaml(
            &base_model()
                .split("---\n")
                .nth(2)
                .unwrap()
                .replace("name: route,", &format!("name: r{i},")),
        );
    }
    let mut s = settings(&api, "a", &[]);
    s.status_writes_per_second = 4;
    let pier = Pier::start(s, QUIET).await;
    wait_for("every route's status", || {
        (0..5)
            .all(|i| {
                api.get(GW_GROUP, "httproutes", "default", &format!("r{i}"))
                    .is_some_and(|r| r["status"]["parents"].is_array())
            })
            .then_some(())
    })
    .await;
    let puts: Vec<Instant> = api
        .requests()
        .iter()
        .filter(|r| r.method == "PUT")
        .map(|r| r.at)
        .collect();
    assert!(puts.len() >= 6, "{} writes", puts.len());
    let min_gap = puts.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(
        min_gap >= Duration::from_millis(240),
        "writes 250 ms apart at 4/s, closest two were {min_gap:?}"
    );
    let metrics = pier::testkit::http::get(pier.admin, &pier.admin.to_string(), "/metrics")
        .await
        .unwrap()
        .body;
    assert!(
        metrics.contains("pier_status_writes_total{outcome=\"written\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("pier_status_leader 1"), "{metrics}");
    pier.stop().await;
    api.shutdown().await;
}

fn holder(api: &FakeApiServer) -> Option<String> {
    let lease = api.get("coordination.k8s.io", "leases", "pier-system", "pier-status-writer")?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_string)
}

/// Two replicas: both serve the same versions, only the Lease holder writes status, and when it stops
/// the other takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_writes_and_the_other_takes_over() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let a = Pier::start(settings(&api, "a", &[]), QUIET).await;
    wait_for("a leads", || holder(&api).filter(|h| h == "a")).await;
    let b = Pier::start(settings(&api, "b", &[]), QUIET).await;
    wait_for("route status", || parent(&route(&api), ME).cloned()).await;
    b.wait_dump("b serves", |d| d.contains("service/default/a/80")).await;
    assert_eq!(
        a.dump().await,
        b.dump().await,
        "both replicas serve identical resources"
    );
    let va = a.get("/debug/config_dump?gateway=default/gw").await.1["versions"].clone();
    let vb = b.get("/debug/config_dump?gateway=default/gw").await.1["versions"].clone();
    assert_eq!(
        va, vb,
        "and identical versions, so a reconnecting Envoy re-applies nothing"
    );

    let writers = |api: &FakeApiServer| -> Vec<String> {
        let mut w: Vec<String> = api
            .requests()
            .iter()
            .filter(|r| r.method == "PUT")
            .map(|r| r.client.clone())
            .collect();
        w.dedup();
        w
    };
    api.apply_yaml(&base_model().replace("{name: a, port: 80}", "{name: missing, port: 80}"));
    wait_for("a writes the change", || {
        parent(&route(&api), ME)
            .filter(|p| p.to_string().contains("BackendNotFound"))
            .cloned()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(writers(&api), ["a"], "only the leader writes status");

    a.stop().await;
    wait_for("b takes over", || holder(&api).filter(|h| h == "b")).await;
    api.apply_yaml(&base_model());
    wait_for("b writes the next change", || {
        parent(&route(&api), ME)
            .filter(|p| !p.to_string().contains("BackendNotFound"))
            .cloned()
    })
    .await;
    assert_eq!(writers(&api), ["a", "b"]);
    b.stop().await;
    assert_eq!(holder(&api), None, "the last leader released the Lease on shutdown");
    api.shutdown().await;
}

/// Prints how long an object change in the API server takes to reach an ADS stream as a new version
/// (run with `--nocapture`). Not a timed assertion: CI machines vary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_to_ads_latency() {
    for quiet_ms in [100u64, 5] {
        let api = FakeApiServer::start(&[]).await;
        api.apply_yaml(&base_model());
        // A new Service per change: each change adds a cluster, which goes out at once (removals wait
        // for the proxy to leave the old one, and this proxy does not take routes).
        for i in 0..20 {
            api.apply_yaml(&service(&format!("s{i}"), &format!("10.1.0.{i}")));
        }
        let pier = Pier::start(settings(&api, "a", &[]), Duration::from_millis(quiet_ms)).await;
        pier.wait_dump("base model", |d| d.contains("service/default/a/80"))
            .await;
        let mut proxy = Proxy::clusters(pier.xds, GW).await;
        proxy.recv().await;
        proxy.ack().await;
        let mut samples = Vec::new();
        for i in 0..20 {
            let backend = format!("s{i}");
            let started = Instant::now();
            api.apply_yaml(&base_model().replace("{name: a, port: 80}", &format!("{{name: {backend}, port: 80}}")));
            // Responses that only remove an older cluster may come first; the new version is the one
            // carrying the new cluster.
            loop {
                let resp = proxy.recv().await;
                let names: Vec<String> = resp
                    .resources
                    .iter()
                    .map(|any| {
                        <envoy_types::pb::envoy::config::cluster::v3::Cluster as prost::Message>::decode(
                            any.value.as_slice(),
                        )
                        .unwrap()
                        .name
                    })
                    .collect();
                proxy.ack().await;
                if names.contains(&format!("service/default/{backend}/80")) {
                    samples.push(started.elapsed());
                    break;
                }
            }
        }
        samples.sort();
        println!(
            "change → ADS (debounce quiet {quiet_ms} ms, 20 changes): min {:?}, median {:?}, max {:?}",
            samples[0],
            samples[samples.len() / 2],
            samples[samples.len() - 1]
        );
        pier.stop().await;
        api.shutdown().await;
    }
}

/// XBackend and GEP-4488 Backend status goes out as v1.7's `status.ancestors`, which the fake API server
/// keeps only because its schema has it (it prunes to the CRD's structural schema, as a cluster does:
/// the v1.6 shape `status.parents` with `ancestorRef` entries is refused there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_status_is_written_in_the_v17_shape() {
    let api = FakeApiServer::start(&[]).await;
    let backends = "---\napiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: ext, namespace: default}\n\
                    spec: {type: ExternalHostname, externalHostname: {hostname: api.example.com}, port: {number: 443}}\n---\n\
                    apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: Backend\nmetadata: {name: gep, namespace: default}\n\
                    spec: {type: ExternalHostname, externalHostname: {hostname: gep.example.com}, port: {number: 443}}\n---\n\
                    apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: ext, namespace: default}\n\
                    spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /ext}}]\n    \
                    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: ext}, {group: gateway.networking.k8s.io, kind: Backend, name: gep}]\n";
    api.apply_yaml(&(base_model() + backends));
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    for (group, name) in [("gateway.networking.x-k8s.io", "ext"), (GW_GROUP, "gep")] {
        let written = wait_for("the Backend's status", || {
            let b = api.get(
                group,
                if group == GW_GROUP { "backends" } else { "xbackends" },
                "default",
                name,
            )?;
            (b["status"]["ancestors"][0]["controllerName"] == ME).then_some(b)
        })
        .await;
        let entry = &written["status"]["ancestors"][0];
        assert_eq!(entry["ancestorRef"]["name"], "gw", "{written}");
        assert_eq!(entry["conditions"][0]["type"], "Accepted", "{written}");
        assert!(written["status"].get("parents").is_none(), "{written}");
    }
    pier.stop().await;
}
