//! Golden-file translation tests.
//!
//! Each `testdata/<case>/` holds `input.yaml` (every object the case needs, no hidden fixtures), an
//! optional `options.yaml` (operator options, see [`CaseOptions`]), and the six expected outputs
//! `clusters.yaml`, `endpoints.yaml`, `listeners.yaml`, `routes.yaml`, `secrets.yaml`, `status.yaml`
//! (an empty type is `[]`). Resources are canonical proto3 JSON with proto field names, as Envoy's
//! `/config_dump` prints them, written as YAML.
//!
//! - `UPDATE=1 cargo test --test golden` rewrites the expected files and deletes stale ones.
//! - `CASE=<name>` runs one case.
//!
//! Every case also: translates its input with the documents reversed and must produce identical
//! output (determinism); passes `envoy::check`; and passes `envoy --mode validate` on a bootstrap
//! holding all its resources (a real Envoy 1.40, run by `pier::testkit::envoy`). A case whose
//! Gateways serve proxyless gRPC clients also has `proxyless.yaml` (their listeners, routes, clusters
//! and load assignments), validated by Envoy the same way (API listeners as ordinary ones: see
//! `envoy::bootstrap`).

use std::collections::BTreeSet;

use pier::options::Options;
use serde_json::Value;

const OUTPUTS: [&str; 6] = ["clusters", "endpoints", "listeners", "routes", "secrets", "status"];

mod cases;
mod engine;
mod engine_bulk;
mod engine_bundles;
mod engine_once;
mod engine_pods;
mod streamed;

use cases::{Resolutions, cases, documents, options, resolutions};

fn translate(name: &str, text: &str, opts: &Options, resolved: &Resolutions) -> pier::Translation {
    pier::translate(&model(name, text, resolved), opts)
}

/// A case's input as the model the translator takes.
fn model(name: &str, text: &str, resolved: &Resolutions) -> pier::model::Model {
    let mut loaded = pier::model::load::parse_texts(&[(name.to_string(), text.to_string())])
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    cases::resolve(&mut loaded.model, resolved);
    loaded.model
}

/// The six expected files' contents, and `proxyless.yaml` where the case serves gRPC clients anything.
fn render(t: &pier::Translation) -> Vec<(&'static str, String)> {
    let doc = t
        .document(None)
        .unwrap_or_else(|e| panic!("the case's Gateways cannot be shown merged: {e}"));
    let mut files: Vec<_> = OUTPUTS
        .iter()
        .map(|k| {
            let v = doc.get(*k).cloned().unwrap_or(Value::Array(Vec::new()));
            (*k, pier::model::yaml::to_yaml(&v).expect("yaml"))
        })
        .collect();
    if let Some(p) = doc.get(PROXYLESS) {
        files.push((PROXYLESS, pier::model::yaml::to_yaml(p).expect("yaml")));
    }
    files
}

/// The optional seventh output: what proxyless gRPC clients are served.
const PROXYLESS: &str = "proxyless";

fn diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

#[test]
fn golden() {
    let update = std::env::var("UPDATE").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let input = std::fs::read_to_string(case.join("input.yaml")).expect("read input");
        let opts = options(&case);
        let resolved = resolutions(&case);
        let t = translate(&format!("testdata/{name}/input.yaml"), &input, &opts, &resolved);

        for (gw, res) in &t.gateways {
            if let Err(errs) = pier::envoy::check(res) {
                let list: Vec<String> = errs.iter().map(ToString::to_string).collect();
                failures.push(format!(
                    "{name}: envoy::check failed for Gateway {gw}:\n  {}",
                    list.join("\n  ")
                ));
            }
        }

        let mut reversed_docs = documents(&input);
        reversed_docs.reverse();
        let reversed = translate(
            &format!("testdata/{name}/input.yaml (reversed)"),
            &reversed_docs.join("---\n"),
            &opts,
            &resolved,
        );
        if reversed != t {
            failures.push(format!(
                "{name}: output depends on input order (documents reversed give different output)"
            ));
        }

        let rendered = render(&t);
        if update {
            let keep: BTreeSet<String> = rendered
                .iter()
                .map(|(k, _)| format!("{k}.yaml"))
                .chain(cases::INPUTS.iter().map(|s| s.to_string()))
                .collect();
            for entry in std::fs::read_dir(&case).expect("case dir") {
                let p = entry.expect("entry").path();
                let file = p.file_name().unwrap().to_string_lossy().to_string();
                if p.is_file() && !keep.contains(&file) {
                    std::fs::remove_file(&p).expect("remove stale file");
                }
            }
            for (k, text) in &rendered {
                std::fs::write(case.join(format!("{k}.yaml")), text).expect("write golden");
            }
            continue;
        }
        if !rendered.iter().any(|(k, _)| *k == PROXYLESS) && case.join("proxyless.yaml").exists() {
            failures.push(format!(
                "{name}/proxyless.yaml exists but the case serves proxyless clients nothing (UPDATE=1 cargo test --test golden to accept)"
            ));
        }
        for (k, actual) in &rendered {
            let path = case.join(format!("{k}.yaml"));
            let expected = std::fs::read_to_string(&path).unwrap_or_default();
            if &expected != actual {
                failures.push(format!(
                    "{name}/{k}.yaml differs (UPDATE=1 cargo test --test golden to accept):\n{}",
                    diff(&expected, actual)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Every case's resources, per Gateway, are accepted by a real Envoy.
#[test]
fn golden_envoy_validate() {
    if pier::testkit::envoy::require().is_none() {
        return;
    }
    let jobs: Vec<(String, Value)> = cases()
        .into_iter()
        .flat_map(|case| {
            let name = case.file_name().unwrap().to_string_lossy().to_string();
            let input = std::fs::read_to_string(case.join("input.yaml")).expect("read input");
            let t = translate(&name, &input, &options(&case), &resolutions(&case));
            // A proxyless set is validated with its Gateway's secrets: its CA instances are named after them.
            let proxyless: Vec<_> = t
                .proxyless
                .iter()
                .map(|(gw, res)| {
                    let mut res = res.clone();
                    res.secrets = t.gateways.get(gw).map(|g| g.secrets.clone()).unwrap_or_default();
                    (format!("{gw}, proxyless"), res)
                })
                .collect();
            t.gateways
                .iter()
                .map(|(gw, res)| (gw.clone(), res.clone()))
                .chain(proxyless)
                .map(|(gw, res)| {
                    (
                        format!("{name} (Gateway {gw})"),
                        pier::envoy::bootstrap::validation_bootstrap(&res),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Two Envoys at a time: each validation is a process start, and the machine has two cores.
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((what, boot)) = jobs.get(i) else { break };
                    if let Err(e) = pier::testkit::envoy::validate(boot) {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{what}: Envoy rejected the configuration:\n{e}"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        !jobs.is_empty() || std::env::var("CASE").is_ok(),
        "no Gateway in any golden case"
    );
    assert!(
        failures.is_empty(),
        "{} case(s) failed Envoy validation:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
