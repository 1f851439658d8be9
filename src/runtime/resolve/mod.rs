//! The resolver stage of `pier serve --resolve-hostnames pier`: between the source and the pipeline, it
//! looks up the hostnames the model's Backends use and republishes the model with their answers
//! (`model::Resolution`), so the translator — pure, and the one place answers are judged — turns them
//! into EDS endpoints (`gateway::backends::resolved`).
//!
//! ```text
//! source ──SourceState──▶ resolve (this stage: lookups, TTLs, stale window) ──SourceState + resolutions──▶ pipeline
//! ```
//!
//! It owns the clock: a name is looked up when first used, again when its answer's TTL (clamped to
//! `--dns-min-ttl`..`--dns-max-ttl`) runs out, and at the minimum interval while lookups fail; a failing
//! name keeps its last answer for `--dns-stale-for`, then has none (`resolve::cache`). A new model is
//! published only when the source's model or some name's resolution changed, with the stage's own
//! generation, so the pipeline's skip-if-unchanged rule still holds. The first model is published after
//! its names' first lookups (each bounded), so the proxies do not first get empty clusters for
//! hostnames that resolve. A resolver that cannot be built (no server configured) fails every lookup: its
//! Backends get no endpoints and say why — never an unchecked address.
//!
//! With `--resolve-hostnames envoy` the stage is not there at all ([`insert`] returns the source as is).

mod metrics;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{error, info, warn};

use crate::gateway::backends::resolved::hostnames;
use crate::model::{Model, Objects, Resolution, resolution};
use crate::options::{Options, ResolveMode};
use crate::resolve::cache::{Bounds, Cache};
use crate::resolve::{Lookup, Outcome, hickory};
use crate::source::SourceState;
pub use metrics::DnsMetrics;

/// Longest one lookup may take, whatever the resolver's own timeouts: past it the lookup has failed.
const LOOKUP_BOUND: Duration = Duration::from_secs(5);
/// Lookups in flight at once (the resolver refuses more than a few dozen per server connection).
const CONCURRENT_LOOKUPS: usize = 16;

/// What the pipeline should read: `source` itself, or with `--resolve-hostnames pier` the output of a
/// resolver stage started on it.
pub fn insert(
    source: watch::Receiver<SourceState>,
    opts: &Options,
    registry: &mut Registry,
    stop: watch::Receiver<bool>,
) -> watch::Receiver<SourceState> {
    if opts.resolution.mode != ResolveMode::Pier {
        return source;
    }
    let lookup: Arc<dyn Lookup> = match hickory::build(&opts.dns, opts.resolution.min_ttl) {
        Ok(resolver) => Arc::new(resolver),
        Err(e) => {
            error!(error = %e, "pier cannot resolve hostnames; hostname Backends get no endpoints");
            Arc::new(Unavailable(e.to_string()))
        }
    };
    info!(
        min_ttl = ?opts.resolution.min_ttl,
        max_ttl = ?opts.resolution.max_ttl,
        stale_for = ?opts.resolution.stale_for,
        "pier resolves hostname Backends and serves the allowed answers as EDS"
    );
    let stage = Stage::new(opts.clone(), lookup, DnsMetrics::new(registry));
    let (tx, rx) = watch::channel(SourceState::default());
    tokio::spawn(run(source, tx, stage, stop));
    rx
}

/// A resolver that could not be built: every lookup fails with why.
struct Unavailable(String);

impl Lookup for Unavailable {
    fn lookup(&self, _: &str) -> futures::future::BoxFuture<'_, Outcome> {
        std::future::ready(Outcome::Failed(self.0.clone())).boxed()
    }
}

/// The stage's state between models.
pub struct Stage {
    opts: Options,
    lookup: Arc<dyn Lookup>,
    cache: Cache,
    metrics: DnsMetrics,
}

impl Stage {
    pub fn new(opts: Options, lookup: Arc<dyn Lookup>, metrics: DnsMetrics) -> Stage {
        let cache = Cache::new(Bounds::from(&opts.resolution));
        Stage {
            opts,
            lookup,
            cache,
            metrics,
        }
    }

    /// Looks up every due name, at most [`CONCURRENT_LOOKUPS`] at a time, each within [`LOOKUP_BOUND`].
    async fn lookup_due(&mut self) {
        let due = self.cache.due(Instant::now());
        if due.is_empty() {
            return;
        }
        let lookup = &self.lookup;
        let outcomes: Vec<(String, Outcome)> = futures::stream::iter(due)
            .map(|name| async move {
                let outcome = tokio::time::timeout(LOOKUP_BOUND, lookup.lookup(&name))
                    .await
                    .unwrap_or_else(|_| Outcome::Failed(format!("no answer within {LOOKUP_BOUND:?}")));
                (name, outcome)
            })
            .buffer_unordered(CONCURRENT_LOOKUPS)
            .collect()
            .await;
        let now = Instant::now();
        for (name, outcome) in outcomes {
            self.metrics.lookup(&outcome, &self.opts.guardrails);
            if let Outcome::Failed(e) = &outcome {
                warn!(%name, error = %e, "DNS lookup failed");
            }
            self.cache.record(&name, outcome, now);
        }
    }

    /// The resolutions now, logging and counting what changed; whether any did.
    fn resolutions(&mut self) -> (Objects<Resolution>, bool) {
        let (list, changed) = self.cache.resolutions(Instant::now());
        for (name, r) in list.iter().filter(|(n, _)| changed.contains(n)) {
            info!(%name, resolution = ?r, "DNS answer changed");
        }
        self.metrics.resolutions(&list, &self.opts.guardrails);
        let objects = list.into_iter().map(|(name, r)| (resolution::key(&name), r)).collect();
        (objects, !changed.is_empty())
    }
}

/// Runs the stage until `stop`: each source state or wake-up looks up what is due and, when the model or
/// an answer changed, publishes the model with the answers.
pub async fn run(
    mut source: watch::Receiver<SourceState>,
    out: watch::Sender<SourceState>,
    mut stage: Stage,
    mut stop: watch::Receiver<bool>,
) {
    let mut merged: Option<u64> = None;
    let mut generation = 0;
    let mut source_changed = true;
    loop {
        let state = source.borrow_and_update().clone();
        let new_model = state.model.is_some() && merged != Some(state.generation);
        if let Some(model) = state.model.as_ref().filter(|_| new_model) {
            let names: BTreeSet<String> = hostnames(model, &stage.opts);
            stage.cache.track(&names, Instant::now());
        }
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = stage.lookup_due() => {}
        }
        let (resolutions, answers_changed) = stage.resolutions();
        if new_model || (answers_changed && merged.is_some()) {
            generation += 1;
            merged = Some(state.generation);
        }
        if source_changed || answers_changed {
            out.send_replace(SourceState {
                model: state.model.as_ref().map(|m| with_resolutions(m, resolutions)),
                generation,
                ..state
            });
        }
        let wakeup = stage.cache.next_wakeup();
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            changed = source.changed() => {
                if changed.is_err() { return }
                source_changed = true;
            }
            () = sleep_until(wakeup) => source_changed = false,
        }
    }
}

fn with_resolutions(model: &Arc<Model>, resolutions: Objects<Resolution>) -> Arc<Model> {
    let mut m = Model::clone(model);
    m.resolutions = resolutions;
    Arc::new(m)
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
