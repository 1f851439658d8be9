//! The one-shot engine `pier translate` runs (`Engine::once`: no dependency index) translates every
//! case as the full engine does, and, updated all the same, rebuilds rather than missing what changed.

use std::collections::BTreeSet;

use pier::translate::engine::Engine;

use crate::cases::{cases, options, resolutions};

#[test]
fn a_one_shot_engine_equals_the_full_one_and_rebuilds_when_updated() {
    let mut previous: Option<pier::model::Model> = None;
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let input = std::fs::read_to_string(case.join("input.yaml")).expect("read input");
        let opts = options(&case);
        let model = crate::model(&name, &input, &resolutions(&case));
        let once = Engine::once(model.clone(), opts.clone());
        if let Some(diff) = crate::engine::difference(&once, &model, &opts) {
            failures.push(format!("{name} (once):\n{diff}"));
        }
        if let Some(before) = previous.replace(model.clone()) {
            let mut engine = Engine::once(before, opts.clone());
            let had: BTreeSet<_> = engine.gateways().map(|(k, _)| k.clone()).collect();
            let update = engine.update(model.clone());
            if let Some(diff) = crate::engine::difference(&engine, &model, &opts) {
                failures.push(format!("{name} (once, then updated):\n{diff}"));
            }
            let has: BTreeSet<_> = engine.gateways().map(|(k, _)| k.clone()).collect();
            if !had.union(&has).all(|g| update.gateways.contains(g)) || !update.statuses {
                failures.push(format!("{name}: the rebuild reported {update:?}, not every Gateway"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Attachments and cluster packing run on every core once a Gateway has enough of them (`pier::par`),
/// and the cases are too small for that. The scale workload at 300 routes, translated at once (routes
/// attached and clusters packed in parallel), equals the same routes added one update at a time (each
/// on the caller's thread): every packed resource, version and status alike.
#[test]
fn many_routes_at_once_equal_the_same_routes_one_at_a_time() {
    let workload = pier::testkit::workload::Workload::new(300);
    let full = crate::model("workload", &workload.text(), &Default::default());
    assert!(full.http_routes.len() >= 300, "the workload has its routes");
    let opts = pier::options::Options::default();
    let once = Engine::once(full.clone(), opts.clone());
    // The Gateway first, then each route's file (the route, its Backend and what that points at) in
    // an update of its own.
    let mut model = pier::model::Model::default();
    let mut engine = Engine::new(opts.clone());
    for (name, text) in workload.files() {
        model.absorb(&crate::model(&name, &text, &Default::default()));
        engine.update(model.clone());
    }
    if let Some(diff) = crate::engine::packed_difference(&engine, &once) {
        panic!("one route at a time against all at once: {diff}");
    }
    if let Some(diff) = crate::engine::difference(&engine, &full, &opts) {
        panic!("one route at a time against a translation:\n{diff}");
    }
    assert_eq!(engine.statuses().list(), once.statuses().list(), "statuses");
}
