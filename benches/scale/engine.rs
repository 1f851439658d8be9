//! `engine SIZES [ROUNDS [CHANGE [one-vhost]]]`: the incremental translator at each size (with `one-vhost`,
//! in the workload's hostname-less shape: every route in one virtual host), against a whole `translate()`
//! of the same model in the same run (the engine from empty, decoded). For every [`Change`] the engine takes the changed model and the
//! original one in turn, ROUNDS times each; one JSON line per size and change with the median and
//! maximum of each direction, beside the time a full `translate()` takes; and the serve pipeline's
//! integrity check of each update (`GatewayCheck`, incremental) beside a check of the whole decoded
//! Gateway (what every publish cost before the check was incremental).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pier::testkit::workload::{Change, Workload};
use pier::translate::engine::Engine;
use pier::translate::engine::check::GatewayCheck;

pub fn run(sizes: &[usize], rounds: usize, only: Option<&str>, one_vhost: bool) {
    let opts = pier::Options::default();
    for &n in sizes {
        let w = Workload {
            one_vhost,
            ..Workload::new(n)
        };
        for change in Change::ALL.into_iter().filter(|c| only.is_none_or(|o| o == c.name())) {
            let (before, after) = w.models(change);
            let t = Instant::now();
            let full = pier::translate(&before, &opts);
            let whole = t.elapsed();
            drop(full);
            let t = Instant::now();
            let mut engine = Engine::with(before.clone(), opts.clone());
            let build = t.elapsed();
            let rss = rss_mib();
            // What checking every Gateway from decoded resources costs (the publish path's safety net).
            let t = Instant::now();
            let decoded: Vec<_> = engine.gateways().map(|(_, g)| pier::snapshot::decode(g)).collect();
            let decode = t.elapsed();
            for res in &decoded {
                let _ = pier::envoy::check(res);
            }
            let check = t.elapsed() - decode;
            drop(decoded);
            let mut checks: BTreeMap<String, GatewayCheck> = BTreeMap::new();
            let t = Instant::now();
            check_all(&engine, &mut checks);
            let first_check = t.elapsed();
            let (mut forward, mut back, mut checked) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..rounds {
                let t = Instant::now();
                let u = engine.update(after.clone());
                forward.push(t.elapsed());
                assert!(!u.gateways.is_empty(), "{change:?} changed nothing");
                let t = Instant::now();
                check_all(&engine, &mut checks);
                checked.push(t.elapsed());
                let t = Instant::now();
                engine.update(before.clone());
                back.push(t.elapsed());
                check_all(&engine, &mut checks);
            }
            let line = serde_json::json!({
                "routes": n, "change": change.name(), "rounds": rounds, "one_vhost": one_vhost,
                "translate_ms": ms(whole), "engine_build_ms": ms(build), "rss_mib_after_build": rss,
                "decode_ms": ms(decode), "check_ms": ms(check),
                "first_incremental_check_ms": ms(first_check), "incremental_check_ms": stats(&mut checked),
                "apply_ms": stats(&mut forward), "revert_ms": stats(&mut back),
            });
            println!("{line}");
        }
    }
}

/// The serve pipeline's check of every Gateway (each costs what changed since its last call).
fn check_all(engine: &Engine, checks: &mut BTreeMap<String, GatewayCheck>) {
    for (key, gw) in engine.gateways() {
        let errors = checks.entry(key.to_string()).or_default().check(gw);
        assert!(errors.is_ok(), "the workload passes its check: {errors:?}");
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn stats(v: &mut [Duration]) -> serde_json::Value {
    v.sort();
    serde_json::json!({ "p50": ms(v[v.len() / 2]), "max": ms(v[v.len() - 1]) })
}

/// This process's resident set, in MiB (the engine holds most of it after a build).
fn rss_mib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096 / (1024 * 1024)
}

/// `engine-memory N`: resident memory after parsing the workload, after building the engine, and after
/// dropping the parsed model (the engine keeps its own reference to it).
pub fn memory(n: usize) {
    let base = rss_mib();
    let model = pier::model::load::parse_texts(&Workload::new(n).files())
        .expect("parses")
        .model;
    let parsed = rss_mib();
    let engine = Engine::with(model, pier::Options::default());
    let built = rss_mib();
    let line = serde_json::json!({
        "routes": n, "rss_mib_start": base, "rss_mib_model": parsed, "rss_mib_engine": built,
        "gateways": engine.gateways().count(),
    });
    println!("{line}");
}
