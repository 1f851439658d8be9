//! The translate → check → publish stage of `pier serve`, over the incremental translator.
//!
//! The stage owns one [`Engine`] and one [`GatewayCheck`] per Gateway. Each new model moves them onto a
//! blocking thread, where the engine redoes only what the model's differences touch and the checks
//! (`envoy::check`) look only at the resources that changed; then the packed resources are published
//! as they are (no re-encoding, no re-versioning).
//! A Gateway whose new resources fail the check keeps what it last published, and its proxies keep the
//! last good configuration; `/debug/status` shows why. If a translation panics, the engine is dropped
//! and the next model is translated from scratch by a new one: nothing it half-updated is ever served.

use std::collections::BTreeMap;
use std::time::Instant;

use tokio::sync::watch;
use tracing::{debug, error, info};

use super::metrics::PipelineMetrics;
use crate::admin::SharedView;
use crate::model::Model;
use crate::options::Options;
use crate::source::SourceState;
use crate::translate::engine::check::GatewayCheck;
use crate::translate::engine::out::GatewayOut;
use crate::translate::engine::{Engine, StatusSet, Update};
use crate::xds::server::AdsServer;

/// Where the stage's results go.
pub struct Sinks {
    pub server: AdsServer,
    pub view: SharedView,
    pub statuses: watch::Sender<StatusSet>,
    pub metrics: PipelineMetrics,
}

/// The translator and the checks that follow its output, moved together onto the blocking thread.
struct Translator {
    engine: Engine,
    checks: BTreeMap<String, GatewayCheck>,
}

/// What one model's translation produced, for the async side to publish.
struct Step {
    update: Update,
    /// Every Gateway's resources after the update (O(1) clones of the engine's maps).
    gateways: BTreeMap<String, GatewayOut>,
    /// Check failures of the Gateways this update changed.
    check_errors: BTreeMap<String, Vec<String>>,
    /// All statuses, when any changed.
    statuses: Option<StatusSet>,
}

/// Translates every new model and publishes the Gateways whose resources pass `envoy::check`.
pub async fn run(
    mut source: watch::Receiver<SourceState>,
    opts: Options,
    sinks: Sinks,
    mut stop: watch::Receiver<bool>,
) {
    let mut seen_generation = 0;
    let mut engine = None;
    let mut check_errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
    loop {
        let state = source.borrow_and_update().clone();
        record_source(&state, &sinks);
        if let Some(model) = state.model.clone().filter(|_| state.generation != seen_generation) {
            seen_generation = state.generation;
            let started = Instant::now();
            let mut current = engine.take().unwrap_or_else(|| Translator {
                engine: Engine::new(opts.clone()),
                checks: BTreeMap::new(),
            });
            let step = tokio::task::spawn_blocking(move || {
                let step = translate(&mut current, &model);
                (current, step)
            })
            .await;
            sinks.metrics.observe_translation(started.elapsed());
            debug!(took_us = started.elapsed().as_micros() as u64, "translated and checked");
            match step {
                Ok((kept, step)) => {
                    engine = Some(kept);
                    publish(step, state.generation, &mut check_errors, &sinks);
                }
                Err(e) => {
                    error!(error = %e, "translation panicked; the last good configuration stays in force and the next change is translated from scratch");
                }
            }
        }
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            changed = source.changed() => if changed.is_err() { return },
        }
    }
}

fn record_source(state: &SourceState, sinks: &Sinks) {
    let mut v = sinks.view.write().expect("view lock");
    v.source_error = state.error.clone();
    if state.error.is_none() {
        v.source_warnings = state.warnings.clone();
    }
    sinks.metrics.set_source_error(state.error.is_some());
}

/// The blocking part: update the engine, check what changed, collect what to publish.
fn translate(t: &mut Translator, model: &Model) -> Step {
    let engine = &mut t.engine;
    let update = engine.update(model.clone());
    let mut check_errors = BTreeMap::new();
    for key in &update.gateways {
        let name = key.to_string();
        let Some(gw) = engine.gateway(key) else {
            t.checks.remove(&name);
            continue;
        };
        if let Err(errors) = t.checks.entry(name.clone()).or_default().check(gw) {
            check_errors.insert(name, errors.iter().map(ToString::to_string).collect());
        }
    }
    let gateways = engine.gateways().map(|(k, g)| (k.to_string(), g.clone())).collect();
    let statuses = update.statuses.then(|| engine.statuses().map().clone());
    Step {
        update,
        gateways,
        check_errors,
        statuses,
    }
}

/// Publishes a step: a changed Gateway that failed its check keeps what it last published (and its
/// error stays shown until a later translation of it passes).
fn publish(step: Step, generation: u64, check_errors: &mut BTreeMap<String, Vec<String>>, sinks: &Sinks) {
    let mut v = sinks.view.write().expect("view lock");
    let mut next = step.gateways;
    for key in &step.update.gateways {
        check_errors.remove(&key.to_string());
    }
    check_errors.retain(|gw, _| next.contains_key(gw));
    for (gateway, errors) in &step.check_errors {
        error!(%gateway, ?errors, "translated configuration failed its integrity check; this Gateway keeps its last good configuration");
    }
    check_errors.extend(step.check_errors);
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
    if let Some(statuses) = step.statuses {
        // The status writer reads the newest statuses at its own pace; this never waits on it.
        sinks.statuses.send_replace(statuses.clone());
        v.statuses = statuses;
    }
    v.published = next;
    v.check_errors = check_errors.clone();
    v.generation = generation;
    v.ready = true;
}
