//! The leader killed outright (SIGKILL: no Lease release, no goodbye), with the real `pier serve
//! --kubernetes` binary as two child processes against the fake API server: the other replica writes
//! status within the Lease duration plus its grace (15 s + 5 s, the production defaults), and the two
//! never both write.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{GW_GROUP, base_model, wait_for};

const LEASE: Duration = Duration::from_secs(15 + 5);

/// The child, and the directory its kubeconfig and address file live in (removed with it).
struct Replica(Child, #[allow(dead_code)] tempfile::TempDir);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `pier serve --kubernetes` as `identity`, authenticating to the fake with the token `identity`.
async fn replica(api: &FakeApiServer, identity: &str) -> Replica {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: '{}'}}}}]\n\
             users: [{{name: u, user: {{token: {identity}}}}}]\n\
             contexts: [{{name: c, context: {{cluster: fake, user: u, namespace: default}}}}]\ncurrent-context: c\n",
            api.url()
        ),
    )
    .unwrap();
    let address_file = dir.path().join("addr.json");
    let child = Command::new(env!("CARGO_BIN_EXE_pier"))
        .args([
            "serve",
            "--kubernetes",
            "--xds-address",
            "127.0.0.1:0",
            "--admin-address",
            "127.0.0.1:0",
        ])
        .arg("--address-file")
        .arg(&address_file)
        .args(["--lease-namespace", "pier-system", "--lease-identity", identity])
        .env("KUBECONFIG", &kubeconfig)
        .env("PIER_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let r = Replica(child, dir);
    wait_for("the replica's address file", || {
        std::fs::read_to_string(&address_file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    })
    .await;
    r
}

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
    let mut a = replica(&api, "a").await;
    wait_for("a leads", || holder(&api).filter(|h| h == "a")).await;
    let _b = replica(&api, "b").await;
    wait_for("a writes the route's status", || route_says(&api, "ResolvedRefs")).await;

    a.0.kill().unwrap();
    a.0.wait().unwrap();
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
