//! The leader killed outright (SIGKILL: no Lease release, no goodbye), with the real `pier serve
//! --kubernetes` binary as two child processes against the fake API server: the other replica writes
//! status within the Lease duration plus its grace (15 s + 5 s, the production defaults), and the two
//! never both write.

use std::time::{Duration, Instant};

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::child::serve;
use crate::kube_support::{GW_GROUP, base_model, wait_for};

const LEASE: Duration = Duration::from_secs(15 + 5);

fn holder(api: &FakeApiServer) -> Option<String> {
    let lease = api.get("coordination.k8s.io", "leases", "pier-system", "pier-status-writer")?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_string)
}

fn route_says(api: &FakeApiServer, needle: &str) -> Option<()> {
    let r = api.get(GW_GROUP, "httproutes", "default", "route")?;
    r["status"].to_string().contains(needle).then_some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_within_the_lease_and_never_two_write() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let mut a = serve(&api, Some("a"), &["--lease-identity", "a"]).await;
    wait_for("a leads", || holder(&api).filter(|h| h == "a")).await;
    let _b = serve(&api, Some("b"), &["--lease-identity", "b"]).await;
    wait_for("a writes the route's status", || route_says(&api, "ResolvedRefs")).await;

    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed = Instant::now();
    api.apply_yaml(&base_model().replace("{name: a, port: 80}", "{name: missing, port: 80}"));
    let deadline = killed + LEASE + Duration::from_secs(5);
    while route_says(&api, "BackendNotFound").is_none() {
        assert!(
            Instant::now() < deadline,
            "no replica wrote the change within {LEASE:?} + 5 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = killed.elapsed();
    assert_eq!(holder(&api).as_deref(), Some("b"));
    let writers: Vec<(String, Instant)> = api
        .requests()
        .iter()
        .filter(|r| r.method == "PUT")
        .map(|r| (r.client.clone(), r.at))
        .collect();
    let (a_writes, b_writes): (Vec<_>, Vec<_>) = writers.iter().partition(|(c, _)| c == "a");
    assert!(!a_writes.is_empty() && !b_writes.is_empty(), "{writers:?}");
    assert!(
        a_writes.iter().all(|(_, at)| *at < killed) && b_writes.iter().all(|(_, at)| *at > killed),
        "never two writers: {writers:?}"
    );
    assert!(took <= LEASE + Duration::from_secs(3), "took over after {took:?}");
    eprintln!("the killed leader's status duties resumed after {took:?} (lease 15 s + grace 5 s)");
}
