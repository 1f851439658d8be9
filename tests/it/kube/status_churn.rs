//! Status under churn, as GitOps tools make it: 300 HTTPRoutes on one Gateway, one changed every 100 ms
//! for a minute. Within 5 s of the last change every route's status is current (its conditions at the
//! route's generation), and writes stay within the writer's rate throughout, each route written about
//! as often as it changed (envoyproxy/gateway#9536 is routes whose status stays empty here).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{GW_GROUP, Pier, base_model, settings, wait_for};

const ROUTES: usize = 300;
const CHURN: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);

fn route(i: usize, version: usize) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r{i}, namespace: default}}\n\
         spec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /r{i}/v{version}}}}}]\n    backendRefs: [{{name: a, port: 80}}]\n"
    )
}

/// Routes whose status is not at their generation, or not Accepted.
fn stale(api: &FakeApiServer) -> Vec<String> {
    (0..ROUTES)
        .filter(|i| {
            let Some(r) = api.get(GW_GROUP, "httproutes", "default", &format!("r{i}")) else {
                return true;
            };
            let generation = r["metadata"]["generation"].as_i64();
            let conditions: Vec<&Value> = r["status"]["parents"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| p["conditions"].as_array().into_iter().flatten())
                .collect();
            let accepted = conditions
                .iter()
                .any(|c| c["type"] == "Accepted" && c["status"] == "True");
            !accepted
                || conditions
                    .iter()
                    .any(|c| c["observedGeneration"].as_i64() != generation)
        })
        .map(|i| format!("r{i}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_status_is_current_within_5s_of_a_minute_of_churn() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    for i in 0..ROUTES {
        api.apply_yaml(&route(i, 0));
    }
    let cfg = settings(&api, "a", &[]);
    let rate = cfg.status_writes_per_second as usize;
    let pier = Pier::start(cfg, Duration::from_millis(30)).await;
    wait_for("every route's first status", || stale(&api).is_empty().then_some(())).await;

    let start = api.requests().len();
    let began = Instant::now();
    let mut changes: BTreeMap<String, usize> = BTreeMap::new();
    let mut n = 0;
    while began.elapsed() < CHURN {
        // A stride coprime with 300 visits every route, in an order unlike the writer's.
        let i = (n * 7) % ROUTES;
        n += 1;
        *changes.entry(format!("r{i}")).or_default() += 1;
        api.apply_yaml(&route(i, n));
        tokio::time::sleep(EVERY).await;
    }
    let stopped = Instant::now();
    let current = loop {
        let left = stale(&api);
        if left.is_empty() {
            break stopped.elapsed();
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(5),
            "{} routes still stale 5 s after the churn: {:?}",
            left.len(),
            &left[..left.len().min(10)]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let writes: Vec<_> = api.requests()[start..]
        .iter()
        .filter(|r| r.method == "PUT")
        .cloned()
        .collect();
    // The rate, over every 1 s window.
    let peak = writes
        .iter()
        .map(|w| {
            writes
                .iter()
                .filter(|x| x.at >= w.at && x.at < w.at + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(peak <= rate + 1, "{peak} status writes in one second (limit {rate}/s)");
    let mut per_route: BTreeMap<String, usize> = BTreeMap::new();
    for w in &writes {
        if let Some(name) = w.path.strip_suffix("/status").and_then(|p| p.rsplit('/').next()) {
            *per_route.entry(name.to_string()).or_default() += 1;
        }
    }
    for (name, count) in &per_route {
        let changed = changes.get(name).copied().unwrap_or(0);
        assert!(*count <= changed + 1, "{name}: {count} writes for {changed} changes");
    }
    eprintln!(
        "{n} changes in {CHURN:?}: {} status writes, peak {peak}/s, every status current {current:?} after the churn",
        writes.len()
    );
    pier.stop().await;
}
