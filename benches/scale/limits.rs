//! `limits N LEN [sotw|delta]...`: a real Envoy holding N EDS clusters whose names are LEN bytes long
//! (Kubernetes allows object names of 253 characters), served by `pier serve` from a directory.
//! The sizes a real fleet reaches are where an ADS bound is tripped: a state-of-the-world EDS request
//! names every cluster, and a delta request after a reconnect carries a version for every resource
//! the proxy holds.
//!
//! Each run, per mode:
//! 1. the whole configuration is served: Envoy reports N+1 active clusters, the listener is up, and
//!    the last route answers 200;
//! 2. a later change arrives: a new route answers 200;
//! 3. pier is killed and started again on the same address: Envoy reconnects, and the next change
//!    arrives.
//!
//! It prints one JSON line per mode: the times of each step, how many ADS streams pier saw connect
//! (a proxy in a reconnect loop connects again and again), pier's and Envoy's memory.
//!
//! `long-names DIR N LEN` writes the configuration alone, for `pier translate` and `pier serve`
//! runs measured from outside.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use pier::envoy::ads_bootstrap::{BootstrapSpec, bootstrap};
use pier::testkit::envoy::Envoy;
use pier::testkit::{free_port, http};

use super::fanout::rss_kib;
use super::propagation::{Mode, Pier, Upstreams, put};

/// The namespace every object lives in.
const NS: &str = "apps";
/// Objects per file: a directory of a few hundred files, as a rendered chart split by kind would be.
const PER_FILE: usize = 250;
/// How long any one step may take before the run is declared broken (Envoy applying 50,000 clusters
/// takes minutes on two cores).
const STEP_TIMEOUT: Duration = Duration::from_secs(900);

/// The name of Backend `i`, padded so that its cluster name (`eg-backend/apps/<name>`) is `len` bytes.
pub fn backend_name(i: usize, len: usize) -> String {
    let prefix = format!("b-{i:06}-");
    let fixed = "eg-backend/".len() + NS.len() + 1;
    let pad = len.saturating_sub(fixed + prefix.len()).max(1);
    format!("{prefix}{}", "x".repeat(pad))
}

/// Backend `i` (one IP endpoint: `to`) and an HTTPRoute `r-i` for `h-i.example.com` to it.
fn backend_and_route(i: usize, len: usize, to: SocketAddr) -> String {
    let name = backend_name(i, len);
    format!(
        "apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {{name: {name}, namespace: {NS}}}
spec:
  endpoints: [{{ip: {{address: '{ip}', port: {port}}}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r-{i}, namespace: {NS}}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  hostnames: [h-{i}.example.com]
  rules: [{{backendRefs: [{{group: gateway.envoyproxy.io, kind: Backend, name: {name}}}]}}]
",
        ip = to.ip(),
        port = to.port()
    )
}

/// Writes the Gateway (HTTP on `port`) and `n` Backends with their routes into `dir`.
pub fn write(dir: &Path, n: usize, len: usize, port: u16, to: SocketAddr) {
    std::fs::create_dir_all(dir).expect("creating DIR");
    let mut w = pier::testkit::workload::Workload::new(0);
    w.port = port;
    std::fs::write(dir.join("gateway.yaml"), w.gateway()).expect("writing gateway.yaml");
    for (f, start) in (0..n).step_by(PER_FILE).enumerate() {
        let docs: Vec<String> = (start..(start + PER_FILE).min(n))
            .map(|i| backend_and_route(i, len, to))
            .collect();
        std::fs::write(dir.join(format!("backends-{f:04}.yaml")), docs.join("---\n")).expect("writing backends");
    }
}

/// One run per mode; a JSON line each.
pub async fn run(pier_bin: &Path, envoy_bin: &Path, n: usize, len: usize, modes: &[Mode], extra: &[String]) {
    let ups = Upstreams::start().await;
    for &mode in modes {
        let line = one(pier_bin, envoy_bin, n, len, mode, &ups, extra).await;
        println!("{line}");
    }
}

async fn one(
    pier_bin: &Path,
    envoy_bin: &Path,
    n: usize,
    len: usize,
    mode: Mode,
    ups: &Upstreams,
    extra: &[String],
) -> serde_json::Value {
    let work = tempfile::Builder::new()
        .disable_cleanup(std::env::var_os("PIER_BENCH_TRACE").is_some())
        .tempdir()
        .expect("work dir");
    let dir = work.path().join("config");
    let port = free_port(Ipv4Addr::LOCALHOST);
    write(&dir, n, len, port, ups.a.addr);
    let xds = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port(Ipv4Addr::LOCALHOST)));
    let t0 = Instant::now();
    let pier = Pier::start_at(pier_bin, &dir, work.path(), Some(xds), extra).await;
    let ready = wait_ready(pier.admin).await;
    let spec = BootstrapSpec {
        gateway: "infra/edge".into(),
        xds: vec![(xds.ip().to_string(), xds.port())],
        delta: mode == Mode::Delta,
        admin_port: 0,
        node_id: None,
        dns_resolver: None,
        tls: None,
    };
    let envoy = Envoy::start(envoy_bin, &bootstrap(&spec), work.path(), "envoy")
        .await
        .expect("starting Envoy");
    let listener = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let t1 = Instant::now();
    let served = step("the whole configuration", &envoy, || async {
        active_clusters(&envoy).await > n
            && http::get(listener, &format!("h-{}.example.com", n - 1), "/")
                .await
                .is_ok_and(|r| r.status == 200)
    })
    .await;
    let first_change = change(&dir, 0, len, ups.a.addr, listener, &envoy).await;
    let connects_before = connects(pier.admin).await;
    drop(pier);
    let t2 = Instant::now();
    let pier = Pier::start_at(pier_bin, &dir, work.path(), Some(xds), extra).await;
    wait_ready(pier.admin).await;
    step("Envoy to reconnect", &envoy, || async {
        connects(pier.admin).await >= 1
    })
    .await;
    let reconnected = t2.elapsed();
    let after_restart = change(&dir, 1, len, ups.a.addr, listener, &envoy).await;
    // A proxy in a reconnect loop connects again and again: count for a while.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let connects_after = connects(pier.admin).await;
    let line = serde_json::json!({
        "clusters": n, "name_len": len, "mode": if mode == Mode::Delta { "delta" } else { "sotw" },
        "pier_ready_s": secs(ready), "whole_config_served_s": secs(served), "first_start_s": secs(t1 - t0),
        "change_ms": ms(first_change),
        "restart_reconnected_s": secs(reconnected), "change_after_restart_ms": ms(after_restart),
        "streams_before_restart": connects_before, "streams_after_restart": connects_after,
        "pier_rss_mib": rss_kib(pier.pid()) / 1024, "envoy_rss_mib": rss_kib(envoy.pid()) / 1024,
    });
    drop(envoy);
    drop(pier);
    line
}

/// Adds Backend and route `N + k`; the time until its host answers 200.
async fn change(dir: &Path, k: usize, len: usize, to: SocketAddr, listener: SocketAddr, envoy: &Envoy) -> Duration {
    let i = 9_000_000 + k;
    let t0 = Instant::now();
    put(
        dir,
        &format!("change-{k}.yaml"),
        backend_and_route(i, len, to).as_bytes(),
    );
    let host = format!("h-{i}.example.com");
    step(&format!("change {k}"), envoy, || async {
        http::get(listener, &host, "/").await.is_ok_and(|r| r.status == 200)
    })
    .await;
    t0.elapsed()
}

/// Polls `done` until it holds; the time it took. Panics with Envoy's log after [`STEP_TIMEOUT`].
async fn step<F, Fut>(what: &str, envoy: &Envoy, done: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t0 = Instant::now();
    while !done().await {
        assert!(
            t0.elapsed() < STEP_TIMEOUT,
            "{what}: not within {STEP_TIMEOUT:?}; Envoy's log ends:\n{}",
            envoy.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    t0.elapsed()
}

/// Envoy's `cluster_manager.active_clusters`; 0 while its admin API does not answer (its main thread is
/// busy applying clusters, which at 50,000 takes minutes).
async fn active_clusters(envoy: &Envoy) -> usize {
    let Ok(r) = envoy.admin_get("/stats?filter=^cluster_manager.active_clusters$").await else {
        return 0;
    };
    r.body
        .lines()
        .find_map(|l| l.strip_prefix("cluster_manager.active_clusters: ")?.trim().parse().ok())
        .unwrap_or(0)
}

async fn wait_ready(admin: SocketAddr) -> Duration {
    let t0 = Instant::now();
    loop {
        if http::get(admin, "localhost", "/readyz")
            .await
            .is_ok_and(|r| r.status == 200)
        {
            return t0.elapsed();
        }
        assert!(t0.elapsed() < STEP_TIMEOUT, "pier not ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many ADS streams connected to this pier so far (`pier_xds_streams_total`, both modes).
async fn connects(admin: SocketAddr) -> u64 {
    let Ok(r) = http::get(admin, "localhost", "/metrics").await else {
        return 0;
    };
    r.body
        .lines()
        .filter(|l| l.starts_with("pier_xds_streams_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 100.0).round() / 100.0
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}
