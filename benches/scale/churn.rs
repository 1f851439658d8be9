//! `churn ROUTES RATE SECONDS [sotw|delta]`: steady change, the way GitOps tools and endpoint
//! controllers keep a cluster busy. `pier serve` holds the workload of ROUTES routes with a real Envoy
//! connected; RATE times a second one change is written, cycling through: a route's path edited, an
//! EndpointSlice's endpoint moved, a route deleted, the same route restored, and an EndpointSlice
//! rewritten so that nothing Envoy sees changes (labels and a resourceVersion bumped, its endpoints in
//! another order). Every change is a file replaced as a controller or `kubectl apply` would replace it.
//!
//! A no-op rewrite is applied once pier's pushes have been quiet for 300 ms, and judged over the 300 ms
//! after it, so the rate dips a little below RATE. It prints one JSON line: pier's mean CPU over the run (cores, from /proc utime + stime), its
//! resident memory at the start, every 10 % of the run and at the end, the pushes counted in the
//! windows after real changes and — the figure that must be 0 — in the windows after no-op rewrites
//! (envoyproxy/gateway#5344: proxies OOM-killed by pushes of endpoint churn that changed nothing).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use pier::envoy::ads_bootstrap::{BootstrapSpec, bootstrap};
use pier::testkit::envoy::Envoy;
use pier::testkit::workload::Workload;
use pier::testkit::{free_port, http};

use super::fanout::rss_kib;
use super::propagation::{Mode, Pier, Upstreams, put};

/// Every fifth change is a no-op rewrite.
const KINDS: usize = 5;

pub async fn run(pier_bin: &Path, envoy_bin: &Path, routes: usize, rate: f64, seconds: u64, mode: Mode) {
    let ups = Upstreams::start().await;
    let work = tempfile::tempdir().expect("work dir");
    let dir = work.path().join("config");
    std::fs::create_dir_all(&dir).expect("config dir");
    let mut w = Workload::new(routes);
    w.port = free_port(Ipv4Addr::LOCALHOST);
    for (name, text) in w.files() {
        std::fs::write(dir.join(name), text).expect("workload file");
    }
    let pier = Pier::start(pier_bin, &dir, work.path(), &[]).await;
    let spec = BootstrapSpec {
        gateway: "infra/edge".into(),
        xds: vec![(pier.xds.ip().to_string(), pier.xds.port())],
        delta: mode == Mode::Delta,
        admin_port: 0,
        node_id: None,
        dns_resolver: None,
        tls: None,
    };
    let envoy = Envoy::start(envoy_bin, &bootstrap(&spec), work.path(), "envoy")
        .await
        .expect("starting Envoy");
    envoy.wait_live(Duration::from_secs(300)).await.expect("Envoy LIVE");
    drop(ups);
    tokio::time::sleep(Duration::from_secs(2)).await;

    let period = Duration::from_secs_f64(1.0 / rate);
    let changes = (seconds as f64 * rate) as usize;
    let (cpu0, t0) = (cpu_seconds(pier.pid()), Instant::now());
    let mut rss = vec![rss_kib(pier.pid()) / 1024];
    let (mut real_pushes, mut noop_pushes, mut noops) = (0u64, 0u64, 0usize);
    // Per type, the pushes counted in no-op windows: a no-op EndpointSlice rewrite could only ever push
    // load assignments; anything else is the change before it arriving late.
    let mut noop_by_type: std::collections::BTreeMap<String, u64> = Default::default();
    for k in 0..changes {
        let start = Instant::now();
        // A no-op is judged on a quiet stream: the pushes of the change before it (make-before-break
        // sends clusters, then routes once they are acknowledged, and releases old clusters later)
        // must not be counted against it.
        let before = if k % KINDS == KINDS - 1 {
            settled(pier.admin).await
        } else {
            pushes(pier.admin).await
        };
        let by_type_before = by_type(pier.admin).await;
        let noop = apply(&dir, &w, k);
        // The window: until just before the next change (a no-op's: 300 ms, a hundred times what
        // pier takes to translate and push).
        let rest = if noop {
            Duration::from_millis(300)
        } else {
            period.saturating_sub(start.elapsed() + Duration::from_millis(5))
        };
        tokio::time::sleep(rest).await;
        let pushed = pushes(pier.admin).await.saturating_sub(before);
        if noop {
            noops += 1;
            noop_pushes += pushed;
            if pushed > 0 {
                for (ty, n) in by_type(pier.admin).await {
                    let delta = n - by_type_before.get(&ty).copied().unwrap_or(0);
                    if delta > 0 {
                        *noop_by_type.entry(ty).or_default() += delta;
                    }
                }
            }
        } else {
            real_pushes += pushed;
        }
        if (k + 1) % (changes / 10).max(1) == 0 {
            rss.push(rss_kib(pier.pid()) / 1024);
        }
        tokio::time::sleep(period.saturating_sub(start.elapsed())).await;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let cores = (cpu_seconds(pier.pid()) - cpu0) / elapsed;
    let line = serde_json::json!({
        "routes": routes, "rate_per_s": rate, "seconds": elapsed.round(), "mode": if mode == Mode::Delta { "delta" } else { "sotw" },
        "changes": changes, "noop_rewrites": noops, "pushes_after_changes": real_pushes, "pushes_after_noops": noop_pushes, "pushes_after_noops_by_type": noop_by_type,
        "pier_cpu_cores_mean": (cores * 10_000.0).round() / 10_000.0, "pier_rss_mib": rss,
        "envoy_live": envoy.admin_get("/ready").await.is_ok_and(|r| r.body.trim() == "LIVE"),
    });
    println!("{line}");
}

/// Change `k`: true if it changes nothing Envoy sees.
fn apply(dir: &Path, w: &Workload, k: usize) -> bool {
    // Routes with a Service (every fourth) are the ones with EndpointSlices.
    let round = k / KINDS;
    let route = (round * 4) % w.routes.max(1);
    let file = format!("route-{route:05}.yaml");
    let text = w.route(route);
    match k % KINDS {
        0 => put(
            dir,
            &file,
            text.replace("value: /api", &format!("value: /api/v{round}")).as_bytes(),
        ),
        1 => put(dir, &file, moved(&text, round).as_bytes()),
        2 => std::fs::remove_file(dir.join(&file)).expect("removing a route file"),
        3 => put(dir, &file, text.as_bytes()),
        _ => {
            put(dir, &file, noop(&text, round).as_bytes());
            return true;
        }
    }
    false
}

/// The route's file with the first endpoint of its slice moved to another address.
fn moved(text: &str, round: usize) -> String {
    let mut done = false;
    text.lines()
        .map(|l| {
            if !done && l.starts_with("- addresses: [") {
                done = true;
                format!("- addresses: [10.200.{}.{}]", round / 250 % 250, round % 250 + 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The route's file with its EndpointSlice relabelled, bumped and its endpoints reversed: a new object
/// to pier, the same load assignment to Envoy.
fn noop(text: &str, round: usize) -> String {
    let (mut head, mut endpoints, mut tail, mut in_slice) = (Vec::new(), Vec::new(), Vec::new(), false);
    for l in text.lines() {
        if l.starts_with("kind: EndpointSlice") {
            in_slice = true;
        }
        if in_slice && l.starts_with("- addresses: [") {
            endpoints.push(l.to_string());
        } else if endpoints.is_empty() {
            head.push(l.replace(
                "labels: {kubernetes.io/service-name:",
                &format!("resourceVersion: '{round}', labels: {{churn: r{round}, kubernetes.io/service-name:"),
            ));
        } else {
            tail.push(l.to_string());
        }
    }
    endpoints.reverse();
    [head, endpoints, tail].concat().join("\n") + "\n"
}

/// The push count once it has not moved for 300 ms (at most 3 s).
async fn settled(admin: SocketAddr) -> u64 {
    let t0 = Instant::now();
    let mut last = pushes(admin).await;
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_millis(300) && t0.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = pushes(admin).await;
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}

/// Responses pier has sent, per type.
async fn by_type(admin: SocketAddr) -> std::collections::BTreeMap<String, u64> {
    let Ok(r) = http::get(admin, "localhost", "/metrics").await else {
        return Default::default();
    };
    r.body
        .lines()
        .filter_map(|l| l.strip_prefix("pier_xds_pushes_total{type=\""))
        .filter_map(|l| {
            let (ty, rest) = l.split_once('"')?;
            Some((ty.to_string(), rest.rsplit(' ').next()?.parse::<f64>().ok()? as u64))
        })
        .collect()
}

/// Responses pier has sent, every type and stream together.
async fn pushes(admin: SocketAddr) -> u64 {
    let Ok(r) = http::get(admin, "localhost", "/metrics").await else {
        return 0;
    };
    r.body
        .lines()
        .filter(|l| l.starts_with("pier_xds_pushes_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// CPU time (user + system) the process has used, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of /proc/PID/stat; 12 and 13 after the command.
    (ticks(11) + ticks(12)) / 100.0
}
