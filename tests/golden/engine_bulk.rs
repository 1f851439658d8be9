//! After a bulk load the engine and the serve pipeline's check rebuild their maps with full nodes
//! (`pier::api::dense`). Densified, they must go on exactly as before: the scale workload, large enough
//! to count as a bulk load, translated at once and then taken through each of its changes and back,
//! and through two bulk changes (everything removed, everything back), equals a rebuild at every step,
//! packed resources, versions, statuses and the check alike.

use std::collections::BTreeMap;

use pier::api::dense::BULK;
use pier::model::Model;
use pier::options::Options;
use pier::testkit::workload::{Change, Workload};
use pier::translate::engine::Engine;
use pier::translate::engine::check::GatewayCheck;

use crate::engine::{check_difference, difference, packed_difference};

fn follows(engine: &mut Engine, checks: &mut BTreeMap<String, GatewayCheck>, model: &Model, step: &str) {
    let opts = Options::default();
    engine.update(model.clone());
    if let Some(diff) = difference(engine, model, &opts) {
        panic!("{step}: the densified engine against a translation:\n{diff}");
    }
    if let Some(diff) = packed_difference(engine, &Engine::with(model.clone(), opts)) {
        panic!("{step}: the densified engine against one built from scratch: {diff}");
    }
    if let Some(diff) = check_difference(engine, checks) {
        panic!("{step}: {diff}");
    }
}

#[test]
fn an_engine_densified_after_a_bulk_load_follows_every_change_exactly() {
    // A route and its Backend alone are twice a bulk load's worth of changes, and twice the check's
    // owners (a route, its virtual host, its cluster).
    let workload = Workload::new(BULK);
    let (start, _) = workload.models(Change::RouteAdded);
    assert!(start.http_routes.len() >= BULK, "the workload is a bulk load");
    let mut engine = Engine::new(Options::default());
    let mut checks = BTreeMap::new();
    follows(&mut engine, &mut checks, &start, "the first translation");
    for change in Change::ALL {
        let (before, after) = workload.models(change);
        follows(&mut engine, &mut checks, &before, change.name());
        follows(&mut engine, &mut checks, &after, change.name());
    }
    follows(&mut engine, &mut checks, &Model::default(), "everything removed");
    follows(&mut engine, &mut checks, &start, "everything back");
}
