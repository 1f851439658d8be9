//! New route → first 200 through a real Envoy, with N routes already served, and — in the same run, on
//! the same machine and Envoy binary — the floor: the same Envoy applying the same change from files.
//!
//! pier side: `pier serve` (the release binary) watches a directory holding the workload; Envoy is
//! bootstrapped from `pier bootstrap`'s spec (SotW or delta). Each sample moves a new file into the
//! directory (an HTTPRoute with a new hostname, to a Service whose endpoint is a loopback upstream) and
//! polls Envoy with that Host until it answers 200. An endpoint move rewrites that Service's slice to a
//! second upstream and polls until that upstream answers.
//!
//! Floor: Envoy with file-based xDS (`path_config_source` + `watched_directory`), its resources the ones
//! pier's translator gives for the same state, written as binary `DiscoveryResponse`s with pier's prost
//! types; each sample writes the files the change touches (clusters, endpoints, routes) and moves them
//! into place, then polls the same way. No control plane: what is left is Envoy's own cost.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pier::envoy::ads_bootstrap::{BootstrapSpec, bootstrap};
use pier::testkit::envoy::Envoy;
use pier::testkit::upstream::Upstream;
use pier::testkit::workload::Workload;
use pier::testkit::{free_port, http, lo};

/// Longest a sample may take before the run is declared broken.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Sotw,
    Delta,
}

/// The two upstreams new routes send to (an endpoint move goes from `a` to `b`).
pub struct Upstreams {
    pub a: Upstream,
    pub b: Upstream,
}

impl Upstreams {
    pub async fn start() -> Upstreams {
        Upstreams {
            a: Upstream::http("a", lo(2)).await,
            b: Upstream::http("b", lo(4)).await,
        }
    }
}

/// `shared.yaml`: the Service every new route sends to, its one endpoint `to`.
pub fn shared_backend(to: SocketAddr) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata: {{name: shared, namespace: team-0}}
spec: {{ports: [{{name: http, port: 80}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: shared, namespace: team-0, labels: {{kubernetes.io/service-name: shared}}}}
addressType: IPv4
ports: [{{name: http, port: {}}}]
endpoints: [{{addresses: ['{}']}}]
",
        to.port(),
        to.ip()
    )
}

/// The file of new route `k`: an HTTPRoute for `new-k.example.com` to the shared Service (the one
/// change is a route, as in gateway-api-bench's propagation test).
pub fn new_route(k: usize) -> String {
    shaped_route(k, false)
}

/// [`new_route`], or with `one_vhost` a hostname-less route for the path `/new-k`: the new route joins
/// the one virtual host every route of that workload shape is in.
pub fn shaped_route(k: usize, one_vhost: bool) -> String {
    let (hostnames, matches) = if one_vhost {
        (
            String::new(),
            format!("matches: [{{path: {{type: PathPrefix, value: /new-{k}}}}}], "),
        )
    } else {
        (format!("  hostnames: [new-{k}.example.com]\n"), String::new())
    };
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: new-{k}, namespace: team-0}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
{hostnames}  rules: [{{{matches}backendRefs: [{{name: shared, port: 80}}]}}]
"
    )
}

/// Where new route `k` answers: `(Host, path)`.
pub fn probe(k: usize, one_vhost: bool) -> (String, String) {
    if one_vhost {
        ("any.example.com".to_string(), format!("/new-{k}"))
    } else {
        (format!("new-{k}.example.com"), "/".to_string())
    }
}

/// Writes `text` to `dir/name` through a temporary file and a rename, so a watcher sees it whole.
pub fn put(dir: &Path, name: &str, text: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).expect("writing a temporary file");
    std::fs::rename(&tmp, dir.join(name)).expect("moving a file into place");
}

/// Polls `listener` with `Host: host` on `path` until `done` holds for the answer; the time it took.
pub async fn time_until_at(
    listener: SocketAddr,
    host: &str,
    path: &str,
    t0: Instant,
    done: impl Fn(&http::Response) -> bool,
) -> Duration {
    loop {
        if let Ok(r) = http::get(listener, host, path).await
            && done(&r)
        {
            return t0.elapsed();
        }
        assert!(
            t0.elapsed() < SAMPLE_TIMEOUT,
            "{host}: no answer within {SAMPLE_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_micros(250)).await;
    }
}

/// A `pier serve` child process; killed when dropped.
pub struct Pier {
    child: Child,
    pub xds: SocketAddr,
    pub admin: SocketAddr,
}

impl Drop for Pier {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Pier {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub async fn start(bin: &Path, dir: &Path, work: &Path, extra: &[String]) -> Pier {
        Pier::start_at(bin, dir, work, None, extra).await
    }

    /// [`Pier::start`] with xDS on `xds` (an ephemeral port if `None`): a restarted pier serves where
    /// its proxies' bootstrap points.
    pub async fn start_at(bin: &Path, dir: &Path, work: &Path, xds: Option<SocketAddr>, extra: &[String]) -> Pier {
        let address_file = work.join("pier-address.json");
        let _ = std::fs::remove_file(&address_file);
        let xds = xds.map_or_else(|| "127.0.0.1:0".to_string(), |a| a.to_string());
        let log = std::fs::File::create(work.join("pier.log")).expect("pier log");
        let child = Command::new(bin)
            .args([
                "serve",
                "--allow-loopback",
                "--xds-address",
                &xds,
                "--admin-address",
                "127.0.0.1:0",
            ])
            .arg("--config-dir")
            .arg(dir)
            .arg("--address-file")
            .arg(&address_file)
            .args(extra)
            // The fan-out's simulated proxies all connect from 127.0.0.1, one peer to pier's
            // `--xds-max-connections-per-peer`, and at once, more than `--xds-max-pending-connections`
            // (a flood's bound: the oldest is closed, and these clients do not reconnect); set through
            // the environment, which builds that predate a bound ignore.
            .env("PIER_XDS_MAX_CONNECTIONS_PER_PEER", "1000000")
            .env("PIER_XDS_MAX_PENDING_CONNECTIONS", "1000000")
            // PIER_BENCH_LOG=pier=debug (say) with PIER_BENCH_TRACE shows where a sample's time went.
            .env(
                "PIER_LOG",
                std::env::var("PIER_BENCH_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting pier");
        // Owned by `pier` from here on, so a failure below still kills it.
        let mut pier = Pier {
            child,
            xds: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            admin: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        };
        let t0 = Instant::now();
        loop {
            if let Some(v) = std::fs::read_to_string(&address_file)
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            {
                pier.xds = v["xds"].as_str().unwrap().parse().unwrap();
                pier.admin = v["admin"].as_str().unwrap().parse().unwrap();
                return pier;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "pier did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The result of one propagation run.
#[derive(Debug, Default)]
pub struct Samples {
    pub new_route: Vec<Duration>,
    pub endpoint_move: Vec<Duration>,
    /// pier's resident memory once the samples are done (the configuration and one proxy's stream).
    pub pier_rss_kib: u64,
}

/// pier and Envoy over ADS: `samples` new routes and endpoint moves with `n` routes present.
#[allow(clippy::too_many_arguments)]
pub async fn pier_run(
    pier_bin: &Path,
    envoy_bin: &Path,
    n: usize,
    mode: Mode,
    samples: usize,
    ups: &Upstreams,
    extra: &[String],
    one_vhost: bool,
) -> Samples {
    let trace = std::env::var_os("PIER_BENCH_TRACE").is_some();
    // A traced run keeps its directory, for pier's log.
    let work = tempfile::Builder::new()
        .disable_cleanup(trace)
        .tempdir()
        .expect("work dir");
    if trace {
        eprintln!("pier's log: {}", work.path().join("pier.log").display());
    }
    let dir = work.path().join("config");
    std::fs::create_dir_all(&dir).expect("config dir");
    let mut w = Workload::new(n);
    w.port = free_port(Ipv4Addr::LOCALHOST);
    w.one_vhost = one_vhost;
    for (name, text) in w.files() {
        std::fs::write(dir.join(name), text).expect("workload file");
    }
    std::fs::write(dir.join("shared.yaml"), shared_backend(ups.a.addr)).expect("shared backend");
    let pier = Pier::start(pier_bin, &dir, work.path(), extra).await;
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
    let listener = SocketAddr::from((Ipv4Addr::LOCALHOST, w.port));
    // Warm-up: the first change after start-up also pays for connection set-up.
    warm_up(&dir, listener, one_vhost).await;
    let mut out = Samples::default();
    for k in 0..samples {
        let (host, path) = probe(k, one_vhost);
        let t0 = Instant::now();
        put(&dir, &format!("new-{k}.yaml"), shaped_route(k, one_vhost).as_bytes());
        let took = time_until_at(listener, &host, &path, t0, |r| r.status == 200).await;
        if std::env::var_os("PIER_BENCH_TRACE").is_some() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            eprintln!("sample {k}: put at {:.6} took {took:?}", (now - took).as_secs_f64());
        }
        out.new_route.push(took);
    }
    for k in 0..samples {
        let (to, name) = if k % 2 == 0 { (&ups.b, "b") } else { (&ups.a, "a") };
        let t0 = Instant::now();
        put(&dir, "shared.yaml", shared_backend(to.addr).as_bytes());
        let moved = |r: &http::Response| r.status == 200 && r.upstream() == Some(name);
        let (host, path) = probe(0, one_vhost);
        out.endpoint_move
            .push(time_until_at(listener, &host, &path, t0, moved).await);
    }
    out.pier_rss_kib = super::fanout::rss_kib(pier.pid());
    drop(envoy);
    drop(pier);
    out
}

async fn warm_up(dir: &Path, listener: SocketAddr, one_vhost: bool) {
    let t0 = Instant::now();
    put(dir, "warm.yaml", shaped_route(999_999, one_vhost).as_bytes());
    let (host, path) = probe(999_999, one_vhost);
    time_until_at(listener, &host, &path, t0, |r| r.status == 200).await;
}
