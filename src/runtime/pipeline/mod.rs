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
use std::time::{Duration, Instant};

use serde_json::json;

use tokio::sync::watch;
use tracing::{debug, error, info};

use super::contain::{Containment, Quarantined, Rejection};
use super::contain_status;
use super::metrics::PipelineMetrics;
use super::refusals;
use crate::admin::SharedView;
use crate::model::Model;
use crate::options::Options;
use crate::snapshot::GatewayOut;
use crate::source::SourceState;
use crate::translate::engine::check::GatewayCheck;
use crate::translate::engine::{Engine, StatusSet, Update};
use crate::xds::clients::Verdict;
use crate::xds::server::AdsServer;

mod steps;
use steps::*;

/// Where the stage's results go.
pub struct Sinks {
    pub server: AdsServer,
    pub view: SharedView,
    pub statuses: watch::Sender<StatusSet>,
    pub metrics: PipelineMetrics,
}

/// NACK containment settings (`runtime::contain`).
#[derive(Debug, Clone)]
pub struct ContainSettings {
    pub enabled: bool,
    /// How long a trial may wait for the proxies' verdict before the bisection is abandoned.
    pub probe_timeout: Duration,
    /// How long "every proxy applied it" must last before it counts: a proxy that acknowledged new
    /// listeners asks for their routes right after.
    pub settle: Duration,
}

impl Default for ContainSettings {
    fn default() -> Self {
        ContainSettings {
            enabled: true,
            probe_timeout: Duration::from_secs(10),
            settle: Duration::from_millis(300),
        }
    }
}

/// The translator and the checks that follow its output, moved together onto the blocking thread.
struct Translator {
    engine: Engine,
    checks: BTreeMap<String, GatewayCheck>,
    /// The largest response a proxy accepts (`--xds-max-response-bytes`), and a proxyless gRPC client
    /// (`--xds-max-grpc-response-bytes`).
    max_response_bytes: usize,
    max_grpc_response_bytes: usize,
}

/// What one model's translation produced, for the async side to publish.
struct Step {
    update: Update,
    /// Every Gateway's resources after the update (O(1) clones of the engine's maps).
    gateways: BTreeMap<String, GatewayOut>,
    /// Check failures of the Gateways this update changed.
    check_errors: BTreeMap<String, Vec<String>>,
    /// All statuses (an O(1) clone); `update.statuses` says whether they changed.
    statuses: StatusSet,
}

/// How long proxy events are gathered before the verdict is read again: a publish to N proxies brings
/// several events from each, and reading the verdict visits every proxy.
const JUDGE_COALESCE: Duration = Duration::from_millis(5);

/// A publish waiting for the proxies' verdict.
struct Probe {
    model: Model,
    /// The snapshot cache generation the publish produced.
    cache_generation: u64,
    published_at: Instant,
    /// The verdict already acted on: `Some(true)` applied, `Some(false)` rejected.
    acted: Option<bool>,
}

/// The stage's state between models.
struct Stage {
    opts: Options,
    sinks: Sinks,
    settings: ContainSettings,
    engine: Option<Translator>,
    check_errors: BTreeMap<String, Vec<String>>,
    containment: Containment,
    probe: Option<Probe>,
    /// When a proxy last moved (was sent something, answered, or left).
    quiet_since: Instant,
    /// Statuses changed during trials and were not written.
    statuses_stale: bool,
    /// The quarantine's revision the last written statuses show.
    quarantine_written: u64,
    /// A proxy moved since the verdict was last read: when to read it.
    judge_at: Option<Instant>,
    source_generation: u64,
}

/// Translates every new model and publishes the Gateways whose resources pass `envoy::check`; with
/// containment on, bisects what proxies reject (`runtime::contain`).
pub async fn run(
    mut source: watch::Receiver<SourceState>,
    opts: Options,
    sinks: Sinks,
    settings: ContainSettings,
    mut stop: watch::Receiver<bool>,
) {
    let mut events = sinks.server.clients.events();
    let mut stage = Stage {
        opts,
        sinks,
        settings,
        engine: None,
        check_errors: BTreeMap::new(),
        containment: Containment::new(),
        probe: None,
        quiet_since: Instant::now(),
        statuses_stale: false,
        quarantine_written: 0,
        judge_at: None,
        source_generation: 0,
    };
    let enabled = stage.settings.enabled;
    loop {
        stage.read_source(&mut source).await;
        loop {
            let deadline = stage.deadline();
            let woke = tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                changed = source.changed() => if changed.is_err() { return } else { Wake::Source },
                _ = events.changed(), if enabled => Wake::Proxies,
                () = tokio::time::sleep_until(deadline) => Wake::Timer,
            };
            match woke {
                Wake::Source => break,
                // Proxies move in bursts (a push to each, an answer from each): judged once per burst.
                Wake::Proxies => {
                    stage.quiet_since = Instant::now();
                    stage.judge_at.get_or_insert(stage.quiet_since + JUDGE_COALESCE);
                }
                Wake::Timer => stage.judge().await,
            }
        }
    }
}

enum Wake {
    Source,
    Proxies,
    Timer,
}

impl Stage {
    /// Takes the source's newest state, and publishes its model if it is new.
    async fn read_source(&mut self, source: &mut watch::Receiver<SourceState>) {
        let state = source.borrow_and_update().clone();
        record_source(&state, &self.sinks);
        let Some(model) = state.model.filter(|_| state.generation != self.source_generation) else {
            return;
        };
        self.source_generation = state.generation;
        self.accept_if_applied();
        let effective = self.containment.set_target((*model).clone());
        self.publish(effective).await;
    }

    /// Translates `model` and publishes it; a trial's statuses are not written.
    async fn publish(&mut self, model: Model) {
        let trial = self.containment.in_trial();
        let started = Instant::now();
        let mut current = self.engine.take().unwrap_or_else(|| Translator {
            engine: Engine::new(self.opts.clone()),
            checks: BTreeMap::new(),
            max_response_bytes: self.sinks.server.limits.max_response_bytes,
            max_grpc_response_bytes: self.sinks.server.limits.max_grpc_response_bytes,
        });
        let input = model.clone();
        let step = tokio::task::spawn_blocking(move || {
            let step = translate(&mut current, &input);
            (current, step)
        })
        .await;
        self.sinks.metrics.observe_translation(started.elapsed());
        debug!(
            took_us = started.elapsed().as_micros() as u64,
            trial, "translated and checked"
        );
        let (kept, step) = match step {
            Ok(done) => done,
            Err(e) => {
                error!(error = %e, "translation panicked; the last good configuration stays in force and the next change is translated from scratch");
                return;
            }
        };
        self.engine = Some(kept);
        let refusals_changed = merge_check_errors(&step, &mut self.check_errors);
        let statuses = if trial {
            self.statuses_stale |= step.update.statuses || refusals_changed;
            None
        } else {
            let quarantine = self.containment.revision();
            let write = step.update.statuses
                || refusals_changed
                || std::mem::take(&mut self.statuses_stale)
                || quarantine != std::mem::replace(&mut self.quarantine_written, quarantine);
            write.then(|| self.overlaid(&step.statuses))
        };
        let generation = publish(step, statuses, self.source_generation, &self.check_errors, &self.sinks);
        if trial {
            self.sinks.metrics.trial();
        }
        self.show_containment();
        self.probe = self.settings.enabled.then(|| Probe {
            model,
            cache_generation: generation,
            published_at: Instant::now(),
            acted: None,
        });
    }

    /// Before a new model replaces what is published: if every proxy applied it, it is the last good
    /// model even though quiet has not lasted yet (otherwise a change right after a publish would be
    /// bisected against an older model, trials and all).
    fn accept_if_applied(&mut self) {
        let in_trial = self.containment.in_trial();
        let Some(probe) = self.probe.as_mut().filter(|p| p.acted.is_none() && !in_trial) else {
            return;
        };
        if self.sinks.server.clients.verdict(probe.cache_generation) == Verdict::Applied {
            probe.acted = Some(true);
            self.containment.applied(&probe.model);
        }
    }

    /// Reads the proxies' verdict on what was published last and acts on it.
    async fn judge(&mut self) {
        self.judge_at = None;
        let Some(probe) = self.probe.as_mut() else { return };
        let now = Instant::now();
        let trial = self.containment.in_trial();
        if probe.acted.is_some() && !trial {
            // Judged already: a later rejection could only be one no change explains.
            return;
        }
        let verdict = self.sinks.server.clients.verdict(probe.cache_generation);
        debug!(?verdict, cache_generation = probe.cache_generation, "proxies' verdict");
        let next = match verdict {
            Verdict::Rejected {
                gateway,
                type_url,
                message,
            } => {
                probe.acted = Some(false);
                let rejection = Rejection {
                    gateway,
                    type_url,
                    message,
                };
                self.containment.rejected(&probe.model, rejection)
            }
            Verdict::Applied => {
                if now < self.quiet_since.max(probe.published_at) + self.settings.settle {
                    return;
                }
                probe.acted = Some(true);
                self.containment.applied(&probe.model)
            }
            Verdict::Unjudged if trial => self.containment.abandon(),
            Verdict::Busy if trial && now >= probe.published_at + self.settings.probe_timeout => {
                self.containment.abandon()
            }
            _ => None,
        };
        match next {
            Some(model) => self.publish(model).await,
            None => self.show_containment(),
        }
    }

    /// When to look at the verdict again without a proxy moving: once quiet has lasted, or when a
    /// trial times out.
    fn deadline(&self) -> tokio::time::Instant {
        if let Some(at) = self.judge_at {
            return tokio::time::Instant::from_std(at);
        }
        let far = tokio::time::Instant::now() + Duration::from_secs(3600);
        let trial = self.containment.in_trial();
        let Some(probe) = self.probe.as_ref().filter(|p| p.acted.is_none() || trial) else {
            return far;
        };
        let settled = self.quiet_since.max(probe.published_at) + self.settings.settle;
        let at = if settled > Instant::now() {
            settled
        } else if trial {
            probe.published_at + self.settings.probe_timeout
        } else {
            return far;
        };
        tokio::time::Instant::from_std(at)
    }

    /// The engine's statuses with the quarantined objects' and the refused Gateways' on top.
    fn overlaid(&self, statuses: &StatusSet) -> StatusSet {
        let quarantined: Vec<_> = self.containment.quarantined().collect();
        let statuses = if quarantined.is_empty() {
            statuses.clone()
        } else {
            contain_status::overlay(statuses, &quarantined, &self.opts.controller_name)
        };
        if self.check_errors.is_empty() {
            return statuses;
        }
        refusals::overlay(&statuses, &self.check_errors)
    }

    fn show_containment(&self) {
        let quarantined: Vec<_> = self.containment.quarantined().map(quarantine_json).collect();
        self.sinks.metrics.set_quarantined(quarantined.len());
        let mut v = self.sinks.view.write().expect("view lock");
        v.quarantined = quarantined;
        v.unexplained_rejection = self
            .containment
            .unexplained()
            .map(|r| json!({"gateway": r.gateway, "type_url": r.type_url, "message": r.message}));
    }
}
