//! Three pier replicas and two Envoys (one state of the world, one delta) in containers on a Docker
//! network of the test's own, with requests flowing through both Envoys all along. The replica each Envoy
//! uses is killed (`docker kill`), paused (`docker pause`: the connection stays open and nothing answers)
//! and cut off (`docker network disconnect`), one fault at a time. Each time:
//!
//! - no request fails (Envoy keeps serving while its control plane moves);
//! - the Envoy is on a live replica within 10 s (`pier bootstrap` lists every replica and pings pier
//!   every 3 s with a 2 s timeout, so a hung one is left within 5 s);
//! - its clusters and listeners keep their versions across the move (content-derived versions: the new
//!   replica re-sends nothing);
//! - a change made during the fault reaches both Envoys.
//!
//! Images are built from local files as in the compose test (`crate::compose::images`); all ports are
//! published on 127.0.0.1 and picked by Docker; everything is removed on any exit. Skipped, saying so,
//! where no Docker daemon answers.

mod docker;
mod load;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::compose::images;
use crate::compose::run::run;
use docker::{Net, docker};
use load::Load;

/// Addresses on the test's /24: the upstream, the replicas, the Envoys.
const UPSTREAM: u8 = 10;
const REPLICAS: [u8; 3] = [11, 12, 13];
const ENVOYS: [u8; 2] = [21, 22];
/// How long a proxy may take to reach a live replica.
const MOVE_WITHIN: Duration = Duration::from_secs(10);
const DEADLINE: Duration = Duration::from_secs(90);

#[test]
fn proxies_leave_a_killed_paused_or_partitioned_replica_within_10s_without_a_failed_request() {
    let mut info = std::process::Command::new("docker");
    info.args(["info", "--format", "{{.ServerVersion}}"]);
    if let Err(e) = run(&mut info, Duration::from_secs(30)) {
        eprintln!(
            "SKIPPED replicas test: no Docker daemon answers: {}",
            e.lines().next().unwrap_or("")
        );
        return;
    }
    let Some(envoy_bin) = images::envoy_binary() else {
        return;
    };
    let pier_bin = images::release_pier();
    let run_id = format!(
        "{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() % 100_000
    );
    let work = tempfile::tempdir().unwrap();
    let mut net = Net::create(&run_id);
    let (pier_image, envoy_image) = (
        format!("pier-replicas-pier:{run_id}"),
        format!("pier-replicas-envoy:{run_id}"),
    );
    net.images = vec![pier_image.clone(), envoy_image.clone()];
    images::build_pier(&work.path().join("pier-image"), &pier_bin, &pier_image).unwrap_or_else(|e| panic!("{e}"));
    images::build_envoy(&work.path().join("envoy-image"), &envoy_bin, &envoy_image).unwrap_or_else(|e| panic!("{e}"));

    let config = work.path().join("config");
    write_config(&config, &net.ip(UPSTREAM));
    let boot = work.path().join("boot");
    std::fs::create_dir_all(&boot).unwrap();

    let up = format!("replicas-up-{run_id}");
    net.start(
        &up,
        UPSTREAM,
        &pier_image,
        &[],
        &["upstream", "--name", "up", "--listen", "0.0.0.0:9000"],
    );
    open_up(&[work.path(), &config]);
    let mount = format!("{}:/config:ro", config.display());
    for (i, host) in REPLICAS.iter().enumerate() {
        let name = format!("replicas-pier{i}-{run_id}");
        net.start(
            &name,
            *host,
            &pier_image,
            &["-v", &mount, "-p", "127.0.0.1::19000"],
            &[
                "serve",
                "--config-dir=/config",
                "--xds-address=0.0.0.0:18000",
                "--xds-insecure-plaintext",
                "--admin-address=0.0.0.0:19000",
                "--admin-allow-unauthenticated",
            ],
        );
    }
    let replicas: Vec<String> = (0..REPLICAS.len())
        .map(|i| format!("replicas-pier{i}-{run_id}"))
        .collect();
    let xds: Vec<String> = REPLICAS.iter().map(|h| format!("{}:18000", net.ip(*h))).collect();
    let mut envoys = Vec::new();
    for (i, host) in ENVOYS.iter().enumerate() {
        let file = boot.join(format!("envoy{i}.json"));
        bootstrap(&pier_bin, &xds, i == 1, &format!("envoy-{i}"), &file);
        open_up(&[work.path(), &config, &boot]);
        let name = format!("replicas-envoy{i}-{run_id}");
        let mount = format!("{}:/boot:ro", boot.display());
        net.start(
            &name,
            *host,
            &envoy_image,
            &["-v", &mount, "-p", "127.0.0.1::8080", "-p", "127.0.0.1::9901"],
            &["envoy", "-c", &format!("/boot/envoy{i}.json"), "--concurrency", "1"],
        );
        envoys.push(name);
    }
    open_up(&[work.path(), &config, &boot]);
    let mut admins: Vec<_> = replicas.iter().map(|r| net.published(r, 19000)).collect();
    let listeners: Vec<_> = envoys.iter().map(|e| net.published(e, 8080)).collect();
    let envoy_admins: Vec<_> = envoys.iter().map(|e| net.published(e, 9901)).collect();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for l in &listeners {
            load::wait_for_200(*l, "/", DEADLINE).await;
        }
        let load = Load::start(listeners.clone());
        for (n, (fault, done)) in [("kill", "killed"), ("pause", "paused"), ("disconnect", "cut off")]
            .into_iter()
            .enumerate()
        {
            for (e, node) in ["envoy-0", "envoy-1"].into_iter().enumerate() {
                let victim = load::serving(&admins, node, DEADLINE).await;
                let before = load::versions(envoy_admins[e]).await;
                inflict(fault, &replicas[victim], &net, REPLICAS[victim]);
                let t0 = Instant::now();
                let path = format!("/during-{fault}-{e}");
                std::fs::write(config.join(format!("during-{n}-{e}.yaml")), route(&path)).unwrap();
                open_up(&[&config]);
                let moved = load::moved(&admins, node, victim, MOVE_WITHIN + Duration::from_secs(20)).await;
                let took = t0.elapsed();
                assert!(
                    took <= MOVE_WITHIN,
                    "{node} took {took:?} to leave the {done} replica {victim} (for replica {moved})"
                );
                for l in &listeners {
                    load::wait_for_200(*l, &path, DEADLINE).await;
                }
                let after = load::versions(envoy_admins[e]).await;
                for (name, version) in &before {
                    if name.starts_with("cluster/") || name.starts_with("listener/") {
                        assert_eq!(
                            after.get(name),
                            Some(version),
                            "{node}, replica {done}: {name} changed version"
                        );
                    }
                }
                eprintln!("replicas: {node} left the {done} replica {victim} for {moved} in {took:?}");
                heal(fault, &replicas[victim], &net, REPLICAS[victim]);
                // A killed container gets a new published port when it starts again.
                admins[victim] = net.published(&replicas[victim], 19000);
                load::wait_ready(admins[victim], DEADLINE).await;
            }
        }
        let failures = load.stop().await;
        assert!(failures.is_empty(), "requests failed during the faults: {failures:?}");
    });
}

fn inflict(fault: &str, container: &str, net: &Net, _host: u8) {
    match fault {
        "kill" => docker(&["kill", container]),
        "pause" => docker(&["pause", container]),
        _ => docker(&["network", "disconnect", &net.name, container]),
    };
}

fn heal(fault: &str, container: &str, net: &Net, host: u8) {
    match fault {
        "kill" => docker(&["start", container]),
        "pause" => docker(&["unpause", container]),
        _ => docker(&["network", "connect", "--ip", &net.ip(host), &net.name, container]),
    };
}

/// `pier bootstrap` for the replicas, with the admin API on every interface (to publish it).
fn bootstrap(pier: &Path, xds: &[String], delta: bool, node: &str, out: &Path) {
    let mut cmd = std::process::Command::new(pier);
    cmd.args([
        "bootstrap",
        "--gateway",
        "demo/edge",
        "--admin-port",
        "9901",
        "--node-id",
        node,
        "-o",
        "json",
    ]);
    for a in xds {
        cmd.args(["--xds-address", a]);
    }
    if delta {
        cmd.arg("--delta");
    }
    let text = run(&mut cmd, Duration::from_secs(30)).unwrap_or_else(|e| panic!("{e}"));
    let mut boot: serde_json::Value = serde_json::from_str(&text).unwrap();
    boot["admin"]["address"]["socket_address"]["address"] = "0.0.0.0".into();
    std::fs::write(out, serde_json::to_vec_pretty(&boot).unwrap()).unwrap();
}

/// The Gateway, an Envoy Gateway Backend at the upstream's address, and the route `/` to it.
fn write_config(dir: &Path, upstream: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let base = format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: pier}}
spec: {{controllerName: pier.dev/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: demo}}
spec:
  gatewayClassName: pier
  listeners: [{{name: http, protocol: HTTP, port: 8080}}]
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {{name: up, namespace: demo}}
spec: {{endpoints: [{{ip: {{address: '{upstream}', port: 9000}}}}]}}
"
    );
    std::fs::write(dir.join("00-base.yaml"), base).unwrap();
    std::fs::write(dir.join("10-root.yaml"), route("/")).unwrap();
}

fn route(path: &str) -> String {
    let name = if path == "/" {
        "root".to_string()
    } else {
        path.trim_start_matches('/').to_string()
    };
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {name}, namespace: demo}}
spec:
  parentRefs: [{{name: edge}}]
  rules: [{{matches: [{{path: {{type: PathPrefix, value: '{path}'}}}}], backendRefs: [{{group: gateway.envoyproxy.io, kind: Backend, name: up}}]}}]
"
    )
}

/// The containers run as user 65532: let them read what the test wrote (these directories, and the
/// files directly in them).
fn open_up(dirs: &[&Path]) {
    for dir in dirs {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.path().is_file() {
                let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644));
            }
        }
    }
}
