//! What one watched object costs: the real `pier serve --kubernetes` binary (a child process) against
//! the in-process fake API server; its resident set size (VmRSS in /proc/<pid>/status) is read before
//! and after N more objects are watched, and the difference divided by N. Printed (run with
//! `--nocapture`), never asserted beyond sanity: RSS moves in pages and the allocator keeps what it
//! freed, so this is an upper-bound estimate of the steady-state cost, not an exact size.

use std::time::Duration;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::base_model;
use crate::kube_support::child::serve;

const N: usize = 3000;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn settled_rss(pid: u32) -> u64 {
    // Let the debounced publish and any trimming finish, then read.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    rss_kib(pid)
}

async fn dump(admin: std::net::SocketAddr) -> String {
    pier::testkit::http::get(admin, &admin.to_string(), "/debug/config_dump")
        .await
        .map(|r| r.body)
        .unwrap_or_default()
}

async fn wait_dump(admin: std::net::SocketAddr, needle: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !dump(admin).await.contains(needle) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{needle} not published within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn route_to(svc: &str) -> String {
    base_model().replace("{name: a, port: 80}", &format!("{{name: {svc}, port: 80}}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_watched_object() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let pier = serve(&api, None, &["--debounce-quiet-ms", "50"]).await;
    let (pid, admin) = (pier.child.id(), pier.admin);
    wait_dump(admin, "service/default/a/80").await;
    let base = settled_rss(pid).await;

    // N Services (one port, a label, an annotation: a typical small object) and their EndpointSlices.
    let mut yaml = String::new();
    for i in 0..N {
        yaml += &format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: m{i}, namespace: default, labels: {{app: m{i}}}, annotations: {{owner: team-{i}}}}}\n\
             spec: {{selector: {{app: m{i}}}, clusterIP: 10.96.{}.{}, ports: [{{name: http, port: 80, targetPort: 8080, protocol: TCP}}]}}\n",
            i / 250,
            i % 250
        );
    }
    api.apply_yaml(&yaml);
    api.apply_yaml(&crate::kube_support::service("zz", "10.0.0.99"));
    api.apply_yaml(&route_to("zz"));
    wait_dump(admin, "service/default/zz/80").await;
    let with_services = settled_rss(pid).await;

    // N unreferenced Secrets of 4 KiB each: pier keeps them without their data.
    let blob = "x".repeat(4096);
    for i in 0..N {
        api.apply(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("s{i}"), "namespace": "default"}, "type": "Opaque",
            "stringData": {"blob": blob}}));
    }
    // The last Secret is referenced by an HTTPS listener: once it is served, every Secret before it
    // went through the watch.
    let example = std::fs::read_to_string(format!("{}/examples/00-gateway.yaml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let cert = example
        .split("\n---\n")
        .find(|d| d.contains("kind: Secret") && d.contains("name: edge-cert"))
        .unwrap()
        .replace("namespace: demo", "namespace: default");
    api.apply_yaml(&cert);
    api.apply_yaml(&route_to("zz").replace(
        "allowedRoutes: {namespaces: {from: All}}}\n",
        "allowedRoutes: {namespaces: {from: All}}}\n  - {name: https, protocol: HTTPS, port: 8443, hostname: '*.demo.test', tls: {certificateRefs: [{name: edge-cert}]}}\n",
    ));
    wait_dump(admin, "BEGIN CERTIFICATE").await;
    let with_secrets = settled_rss(pid).await;

    let per = |after: u64, before: u64| (after.saturating_sub(before) as f64 * 1024.0) / N as f64;
    println!(
        "pier RSS: {base} KiB at start; +{N} Services: {with_services} KiB; +{N} unreferenced 4 KiB Secrets: {with_secrets} KiB"
    );
    println!(
        "per watched object: Service ≈ {:.0} bytes; unreferenced Secret (4 KiB of data, dropped) ≈ {:.0} bytes",
        per(with_services, base),
        per(with_secrets, with_services)
    );
    assert!(with_services >= base / 2, "sanity");
    drop(pier);
    api.shutdown().await;
}
