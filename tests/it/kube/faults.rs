//! A sick API server, the ways production shows one: 429 with `Retry-After`, 500s, 410 Gone in the
//! middle of a watch, cut watches, slow lists, and the whole server down for a minute. Through each,
//! pier keeps serving the last good model and pushes nothing already served; its status writes pause
//! rather than storm; and a list that fails during the initial sync never publishes a Gateway without
//! its routes.

use std::time::{Duration, Instant};

use crate::fake_apiserver::FakeApiServer;
use crate::fake_apiserver::faults::Scope;
use crate::kube_support::ads::Proxy;
use crate::kube_support::{GW, GW_GROUP, Pier, WAIT, base_model, service, settings, wait_for};

const QUIET: Duration = Duration::from_millis(30);

/// The base model's route, sending /a to Service `backend`.
fn route_to(backend: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: route, namespace: default}}\n\
         spec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /a}}}}]\n    backendRefs: [{{name: {backend}, port: 80}}]\n"
    )
}

/// The route's status names `backend` resolved (or not) at the route's generation.
fn route_status_current(api: &FakeApiServer) -> Option<()> {
    let r = api.get(GW_GROUP, "httproutes", "default", "route")?;
    let generation = r["metadata"]["generation"].as_i64()?;
    let parents = r["status"]["parents"].as_array()?;
    parents
        .iter()
        .flat_map(|p| p["conditions"].as_array().into_iter().flatten())
        .all(|c| c["observedGeneration"].as_i64() == Some(generation))
        .then_some(())
        .filter(|_| !parents.is_empty())
}

/// Nothing reaches the proxy for `window`: the fault re-pushed nothing.
async fn nothing_pushed(proxy: &mut Proxy, window: Duration, during: &str) {
    if let Some(r) = proxy.try_recv(window).await {
        panic!("{during}: a push of version {} with nothing changed", r.version_info);
    }
}

/// Changes the route to `backend` and waits for the proxy to receive its cluster.
async fn change_reaches_the_proxy(api: &FakeApiServer, proxy: &mut Proxy, backend: &str) -> Duration {
    let started = Instant::now();
    api.apply_yaml(&route_to(backend));
    let want = format!("service/default/{backend}/80");
    loop {
        let r = proxy.recv().await;
        proxy.ack().await;
        if String::from_utf8_lossy(&prost::Message::encode_to_vec(&r)).contains(&want) {
            return started.elapsed();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_429s_500s_gone_watches_slow_lists_and_an_outage_the_last_good_model_stays() {
    let mut api = FakeApiServer::start(&[]).await;
    let mut world = base_model();
    for (i, s) in ["d", "e", "f"].iter().enumerate() {
        world += &service(s, &format!("10.0.1.{i}"));
    }
    api.apply_yaml(&world);
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("the base model", |d| d.contains("service/default/a/80"))
        .await;
    let mut proxy = Proxy::clusters(pier.xds, GW).await;
    proxy.recv().await;
    proxy.ack().await;
    wait_for("the route's status", || route_status_current(&api)).await;
    let served = pier.dump().await;

    // 429 with Retry-After on every request while every watch is cut and must re-list.
    api.fail(429, Some(1), Duration::from_secs(3), &[], Scope::All);
    api.drop_watches();
    nothing_pushed(&mut proxy, Duration::from_millis(3500), "429s").await;
    assert!(api.faulted() > 0, "the fault was met");
    assert_eq!(pier.dump().await, served, "the last good model is served throughout");
    let t429 = change_reaches_the_proxy(&api, &mut proxy, "b").await;

    // 500s, with every watch ended by 410 Gone (history compacted): a full re-list.
    let before = api.faulted();
    api.fail(500, None, Duration::from_secs(3), &[], Scope::All);
    api.expire_watches();
    nothing_pushed(&mut proxy, Duration::from_millis(3500), "500s and 410 Gone").await;
    assert!(api.faulted() > before);
    let t500 = change_reaches_the_proxy(&api, &mut proxy, "c").await;

    // Lists that take 2 s, with the watches cut.
    api.slow_lists(Duration::from_secs(2));
    api.drop_watches();
    nothing_pushed(&mut proxy, Duration::from_millis(2500), "slow lists").await;
    api.slow_lists(Duration::ZERO);
    let tslow = change_reaches_the_proxy(&api, &mut proxy, "d").await;
    wait_for("the route's status after the faults", || route_status_current(&api)).await;

    // The whole server down for 60 s.
    let served = pier.dump().await;
    api.go_down().await;
    nothing_pushed(&mut proxy, Duration::from_secs(60), "the outage").await;
    assert_eq!(
        pier.dump().await,
        served,
        "the last good model is served through the outage"
    );
    assert!(
        pier.ready().await,
        "a replica that serves its last good model stays ready"
    );
    let back = api.requests().len();
    api.come_back().await;
    let tback = change_reaches_the_proxy(&api, &mut proxy, "e").await;
    wait_for("the route's status after the outage", || route_status_current(&api)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after: Vec<_> = api.requests().split_off(back);
    let writes = after.iter().filter(|r| r.method == "PUT").count();
    // One change to write (the route's) and the Gateway's resolved refs; no storm of retries.
    assert!(
        writes <= 4,
        "{writes} status writes after the server returned: {after:?}"
    );
    assert!(
        after.len() < 80,
        "{} requests in the first seconds back: {after:?}",
        after.len()
    );
    eprintln!("change after: 429s {t429:?}, 500s+410 {t500:?}, slow lists {tslow:?}, 60 s outage {tback:?}");
    pier.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_list_that_keeps_failing_at_start_publishes_no_gateway_without_its_routes() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    // Longer than a kind may fail before pier serves without it (10 s).
    let fault = Duration::from_secs(13);
    api.fail(500, None, fault, &["httproutes"], Scope::Lists);
    let started = Instant::now();
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    let mut named = false;
    while started.elapsed() < fault - Duration::from_secs(1) {
        let (code, body) = pier.get("/readyz").await;
        assert_eq!(code, 503, "not ready while HTTPRoutes cannot be listed: {body}");
        assert_eq!(body["generation"], 0, "nothing published: {body}");
        named |= body["unavailable_kinds"].to_string().contains("HTTPRoute");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(named, "/readyz names the kind it waits for");
    pier.wait_dump("the Gateway with its route", |d| d.contains("service/default/a/80"))
        .await;
    pier.stop().await;
}

/// Status writes to 30 routes fail with 500 for 5 s: the writer pauses and backs off instead of
/// trying each route, and writes them all once the server answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_back_off_while_the_server_fails_them() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    wait_for("the route's status", || route_status_current(&api)).await;
    let fault = Duration::from_secs(5);
    api.fail(500, None, fault, &["httproutes"], Scope::Named);
    let routes: String = (0..30)
        .map(|i| route_to("b").replace("name: route,", &format!("name: r{i},")))
        .collect::<Vec<_>>()
        .join("---\n");
    api.apply_yaml(&routes);
    tokio::time::sleep(fault).await;
    let failed = api.faulted();
    assert!(
        (1..=8).contains(&failed),
        "{failed} status requests in 5 s of 500s for 30 routes: the writer backs off"
    );
    let deadline = tokio::time::Instant::now() + WAIT + Duration::from_secs(30);
    for i in 0..30 {
        loop {
            let r = api.get(GW_GROUP, "httproutes", "default", &format!("r{i}")).unwrap();
            if r["status"]["parents"].is_array() {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "r{i} has no status");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    pier.stop().await;
}
