//! The pipeline's steps as plain functions: translating a model (engine, check, sizes), merging check
//! errors, publishing, and what the admin view shows of the source and of quarantined objects.

// The pipeline's own types and imports: this is pipeline/mod.rs's step half, split off.
use super::refusals::Receivers;
use super::*;

pub(super) fn quarantine_json(q: &Quarantined) -> serde_json::Value {
    let (kind, key) = &q.id;
    json!({
        "kind": format!("{kind:?}"),
        "namespace": key.namespace,
        "name": key.name,
        "gateway": q.rejection.gateway,
        "type_url": q.rejection.type_url,
        "message": q.rejection.message,
        "previous_version_served": q.previous_served,
    })
}

pub(super) fn record_source(state: &SourceState, sinks: &Sinks) {
    let mut v = sinks.view.write().expect("view lock");
    v.source_error = state.error.clone();
    v.unavailable_kinds = state.unavailable.clone();
    sinks.metrics.set_kinds(&source_kinds(), &state.unavailable);
    if state.error.is_none() {
        v.source_warnings = state.warnings.clone();
    }
    sinks.metrics.set_source_error(state.error.is_some());
}

/// Every kind a source reads, by the name the Kubernetes source reports it under.
pub(super) fn source_kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = crate::api::kinds::WATCHED.iter().map(|k| k.name).collect();
    kinds.dedup();
    kinds
}

/// The blocking part: update the engine, check what changed, collect what to publish.
pub(super) fn translate(t: &mut Translator, model: &Model) -> Step {
    let engine = &mut t.engine;
    let update = engine.update(model.clone());
    let mut check_errors = BTreeMap::new();
    for key in &update.gateways {
        let name = key.to_string();
        let Some(gw) = engine.gateway(key) else {
            t.checks.remove(&name);
            continue;
        };
        let check = t.checks.entry(name.clone()).or_default();
        let mut errors: Vec<String> = match check.check(gw) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        };
        errors.extend(refusals::oversize(
            &check.sizes(),
            gw,
            Receivers::Envoy,
            t.max_response_bytes,
        ));
        if let Some(grpc) = gw.grpc.as_deref() {
            let limit = t.max_grpc_response_bytes;
            errors.extend(refusals::oversize(&check.grpc_sizes(), grpc, Receivers::Grpc, limit));
        }
        if !errors.is_empty() {
            check_errors.insert(name, errors);
        }
    }
    let gateways = engine.gateways().map(|(k, g)| (k.to_string(), g.clone())).collect();
    let statuses = engine.statuses().map().clone();
    Step {
        update,
        gateways,
        check_errors,
        statuses,
    }
}

/// Takes a step's check errors into the standing ones: a changed Gateway's errors are its new ones
/// (none if it passed), and they stay until a later translation of it passes. True if they changed.
pub(super) fn merge_check_errors(step: &Step, check_errors: &mut BTreeMap<String, Vec<String>>) -> bool {
    let before = check_errors.clone();
    for key in &step.update.gateways {
        check_errors.remove(&key.to_string());
    }
    check_errors.retain(|gw, _| step.gateways.contains_key(gw));
    for (gateway, errors) in &step.check_errors {
        error!(%gateway, ?errors, "pier refused this Gateway's new configuration; its proxies keep the last one published");
    }
    check_errors.extend(step.check_errors.clone());
    *check_errors != before
}

/// Publishes a step (with `statuses` to write, if any): a Gateway with standing check errors keeps what
/// it last published. Returns the snapshot cache generation after the publish.
pub(super) fn publish(
    step: Step,
    statuses: Option<StatusSet>,
    generation: u64,
    check_errors: &BTreeMap<String, Vec<String>>,
    sinks: &Sinks,
) -> u64 {
    let mut v = sinks.view.write().expect("view lock");
    let mut next = step.gateways;
    for gateway in check_errors.keys() {
        match v.published.get(gateway) {
            Some(previous) => next.insert(gateway.clone(), previous.clone()),
            None => next.remove(gateway),
        };
    }
    let report = sinks.server.publish_packed(&next);
    if report.changed_anything() {
        info!(generation, gateways = next.len(), added = ?report.added, changed = ?report.changed, removed = ?report.removed, "configuration published");
    } else {
        info!(generation, "translation unchanged; nothing to push");
    }
    if let Some(statuses) = statuses {
        // The status writer reads the newest statuses at its own pace; this never waits on it.
        sinks.statuses.send_replace(statuses.clone());
        v.statuses = statuses;
    }
    v.published = next;
    v.check_errors = check_errors.clone();
    v.generation = generation;
    v.ready = true;
    report.generation
}
