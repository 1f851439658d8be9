//! The Kubernetes source: watches every kind the model holds straight from the API server and publishes
//! the same [`SourceState`] stream the directory source does, so translation, checks and xDS serving are
//! identical whichever source feeds them.
//!
//! - [`watch`]: one kube-rs watcher per kind and namespace, slimming and decoding objects.
//! - [`store`]: the per-watch object maps and the Secret/ConfigMap data trimming.
//! - `merged`: the published model, moved by each event (not reassembled per publish), and the
//!   Secrets/ConfigMaps it references, counted per referrer (and the trimming of those it no longer does).
//! - `refetch`: reads a trimmed Secret/ConfigMap again once something references it, and fills it in.
//! - `availability`: which kinds cannot be read, and why (reported before the first model too).
//!
//! Stores are pier's own rather than kube-rs `reflector::Store`s: objects are decoded once into the
//! model's typed `Arc`s (so assembling a model copies no object), Secret/ConfigMap data can be dropped
//! in place, and a re-list is swapped in whole at `InitDone` exactly as a reflector does.
//!
//! Gate: nothing is published until every watch has listed once, or found its kind not served (a CRD
//! that is not installed is reported once as a warning and retried with backoff, never fatal). After
//! that, a change after a quiet spell is published at once, changes that closely follow are debounced like
//! file events, and each burst publishes one model. A watch error never
//! touches the last good model: kube-rs resumes the watch (or re-lists after 410 Gone, swapping the
//! re-listed objects in whole) while the current model stays published.

mod availability;
mod merged;
mod refetch;
pub mod store;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::watcher;
use tokio::sync::{mpsc, watch as latest};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::{Debounce, SourceState};
use crate::model::{Model, Object, ObjectKey};
use merged::Merged;
use store::{Partition, Ref, Sync};

/// What the Kubernetes source watches.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// Namespaces the namespaced kinds are watched in; empty: all namespaces.
    pub namespaces: Vec<String>,
    pub debounce: Debounce,
    /// Longest wait between retries of a failing watch (or of a kind whose CRD is missing).
    pub retry_max: Duration,
}

use refetch::{Fetched, spawn_fetch};

/// Watches until `stop` fires, publishing each settled burst of changes on `tx`.
pub async fn run(
    client: kube::Client,
    cfg: SourceConfig,
    tx: latest::Sender<SourceState>,
    mut stop: latest::Receiver<bool>,
) {
    let mut src = Source::new(&cfg);
    let streams = src
        .parts
        .iter()
        .enumerate()
        .map(|(i, p)| watch::stream(client.clone(), i, p.kind, p.namespace.as_deref(), cfg.retry_max));
    let mut events = futures::stream::select_all(streams);
    let (fetch_tx, mut fetch_rx) = mpsc::unbounded_channel::<Fetched>();
    info!(
        watches = src.parts.len(),
        namespaces = ?cfg.namespaces,
        "watching the Kubernetes API"
    );
    let mut burst: Option<(Instant, Instant)> = None; // (first change, quiet deadline)
    // Leading edge: a change after a quiet spell is flushed at once; only changes that follow a flush
    // closely wait for the quiet period (the pipeline translates the newest model, so nothing queues).
    let mut last_flush = Instant::now();
    loop {
        let flush_at = burst.map(|(first, quiet)| quiet.min(first + cfg.debounce.max_delay));
        tokio::select! {
            _ = stop.changed() => return,
            ev = events.next() => {
                let Some((i, ev)) = ev else { return };
                let changed = src.apply(i, ev);
                src.report(&tx);
                if changed {
                    let now = Instant::now();
                    burst = Some(match burst {
                        None if now >= last_flush + cfg.debounce.quiet => (now, now),
                        None => (now, now + cfg.debounce.quiet),
                        Some((first, _)) => (first, now + cfg.debounce.quiet),
                    });
                }
            }
            Some((r, result)) = fetch_rx.recv() => {
                src.fetched(r, result);
                burst = Some((Instant::now(), Instant::now()));
            }
            _ = sleep_until(flush_at) => {
                burst = None;
                last_flush = Instant::now();
                src.flush(&client, &fetch_tx, &tx);
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Source {
    parts: Vec<Partition>,
    /// The model to publish, moved by every event; `None` when it must be rebuilt from the partitions
    /// (a re-list was swapped in, or which watches count changed).
    merged: Option<Merged>,
    /// Fetches under way; nothing is published until they are back, so a newly referenced Secret
    /// never shows up empty.
    fetching: BTreeSet<Ref>,
    /// Fetches that failed; not retried until the object changes.
    failed: BTreeSet<Ref>,
    /// Per object: why its newest version was refused (its last good version stays).
    rejected: BTreeMap<(&'static str, ObjectKey), String>,
    /// Per watch: the error it is failing with now.
    errors: BTreeMap<usize, String>,
    published: bool,
}

impl Source {
    fn new(cfg: &SourceConfig) -> Self {
        let mut parts = Vec::new();
        for kind in crate::api::kinds::WATCHED {
            if kind.namespaced && !cfg.namespaces.is_empty() {
                parts.extend(cfg.namespaces.iter().map(|ns| Partition::new(kind, Some(ns.clone()))));
            } else {
                parts.push(Partition::new(kind, None));
            }
        }
        Source {
            parts,
            merged: None,
            fetching: BTreeSet::new(),
            failed: BTreeSet::new(),
            rejected: BTreeMap::new(),
            errors: BTreeMap::new(),
            published: false,
        }
    }

    /// Applies one watch event; true if the model may have changed.
    fn apply(&mut self, i: usize, ev: Result<watcher::Event<DynamicObject>, watcher::Error>) -> bool {
        let ev = match ev {
            Ok(ev) => {
                // A watch that recovers clears its error from the published state.
                if self.errors.remove(&i).is_some() {
                    self.apply(i, Ok(ev));
                    return true;
                }
                ev
            }
            Err(e) => return self.failed_watch(i, &e),
        };
        match ev {
            watcher::Event::Init => {
                self.parts[i].relist = Some(Model::default());
                false
            }
            watcher::Event::InitApply(obj) => {
                if let Some((obj, trimmed)) = self.decode(i, obj) {
                    let p = &mut self.parts[i];
                    if trimmed {
                        p.relist_trimmed.insert(obj.key());
                    }
                    p.relist.get_or_insert_with(Model::default).upsert(obj);
                }
                false
            }
            watcher::Event::InitDone => self.listed(i),
            watcher::Event::Apply(obj) => match self.decode(i, obj) {
                Some((obj, trimmed)) => {
                    let p = &mut self.parts[i];
                    if trimmed {
                        p.trimmed.insert(obj.key());
                    } else {
                        p.trimmed.remove(&obj.key());
                    }
                    self.put(i, obj);
                    true
                }
                None => true,
            },
            watcher::Event::Delete(obj) => self.deleted(i, &obj),
        }
    }

    /// A watch error: a kind not served (reported once), a first list failing (availability), or a
    /// watch that listed failing (the last good model stays). True if that is news to publish.
    fn failed_watch(&mut self, i: usize, e: &watcher::Error) -> bool {
        if watch::is_not_found(e) {
            let p = &mut self.parts[i];
            if p.sync == Sync::Pending {
                warn!(watch = %p.describe(), hint = p.kind.missing_hint(), "kind not served by the API server; watching for it");
                p.sync = Sync::Missing;
                self.merged = None;
                return true;
            }
            return false;
        }
        if self.parts[i].sync != Sync::Synced
            && let Some(became) = self.unavailable(i, e)
        {
            return became;
        }
        let p = &self.parts[i];
        let message = format!("watch of {}: {e}", p.describe());
        // Only a new error is worth publishing (and logging); retries of the same one are not.
        let new = self.errors.insert(i, message.clone()).as_ref() != Some(&message);
        if new {
            warn!(error = %message, "watch failing; retrying with backoff, the last good model stays in force");
        }
        new
    }

    /// A complete list of watch `i`: swapped in whole, and the kind available again.
    fn listed(&mut self, i: usize) -> bool {
        let p = &mut self.parts[i];
        if p.sync == Sync::Missing {
            info!(watch = %p.describe(), "kind is served now");
        }
        if p.sync == Sync::Unavailable {
            info!(watch = %p.describe(), "kind can be read now");
        }
        availability::listed(p);
        p.objects = p.relist.take().unwrap_or_default();
        p.trimmed = std::mem::take(&mut p.relist_trimmed);
        p.sync = Sync::Synced;
        debug!(watch = %p.describe(), objects = store::count(&p.objects), "listed");
        self.merged = None;
        true
    }

    /// An object of watch `i` deleted; true if the model held it.
    fn deleted(&mut self, i: usize, obj: &DynamicObject) -> bool {
        let kind = self.parts[i].kind;
        let key = watch::key_of(kind, obj);
        self.rejected.remove(&(kind.name, key.clone()));
        let p = &mut self.parts[i];
        p.trimmed.remove(&key);
        let model_kind = crate::model::Kind::from_name(kind.name).expect("every watched kind is a model kind");
        let removed = store::remove(&mut p.objects, model_kind, &key);
        if self.contributes(i)
            && let Some(m) = &mut self.merged
        {
            m.remove(model_kind, kind.name, &key);
        }
        removed
    }

    /// Decodes an object, and once the first model is out drops the data of an unreferenced
    /// Secret/ConfigMap right away (`true` when it did). A refused object keeps its last good version.
    fn decode(&mut self, i: usize, obj: DynamicObject) -> Option<(Object, bool)> {
        let kind = self.parts[i].kind;
        let key = watch::key_of(kind, &obj);
        match watch::decode(kind, obj) {
            Ok(mut obj) => {
                self.rejected.remove(&(kind.name, key.clone()));
                let r: Ref = match kind.name {
                    "Secret" => ("Secret", key),
                    "ConfigMap" => ("ConfigMap", key),
                    _ => return Some((obj, false)),
                };
                self.failed.remove(&r);
                // Unknown while the merged model awaits a rebuild: keep the data until then.
                let unreferenced = self.merged.as_ref().is_some_and(|m| !m.references(&r));
                let trimmed = self.published && unreferenced && store::trim(&mut obj);
                Some((obj, trimmed))
            }
            Err(e) => {
                warn!(error = %e, "object refused; its last good version (if any) stays in force");
                self.rejected.insert((kind.name, key), e.to_string());
                None
            }
        }
    }

    /// Puts an object into partition `i`, and into the merged model if that partition counts.
    fn put(&mut self, i: usize, obj: Object) {
        if self.contributes(i)
            && let Some(m) = &mut self.merged
        {
            m.put(obj.clone());
        }
        self.parts[i].objects.upsert(obj);
    }

    /// Whether partition `i`'s objects are part of the published model: it has listed, and it is not
    /// ReferenceGrant v1beta1 where v1 is served (v1beta1 only fills in for older clusters).
    fn contributes(&self, i: usize) -> bool {
        let p = &self.parts[i];
        let shadowed = p.kind.name == "ReferenceGrant"
            && p.kind.version != "v1"
            && self.parts.iter().any(|q| {
                q.kind.name == p.kind.name
                    && q.kind.version == "v1"
                    && q.namespace == p.namespace
                    && q.sync == Sync::Synced
            });
        p.sync == Sync::Synced && !shadowed
    }

    fn build(&self) -> Model {
        let mut model = Model::default();
        for (i, p) in self.parts.iter().enumerate() {
            if self.contributes(i) {
                store::merge_into(&mut model, &p.objects);
            }
        }
        availability::mark(&mut model, &self.parts);
        model
    }

    fn flush(
        &mut self,
        client: &kube::Client,
        fetch_tx: &mpsc::UnboundedSender<Fetched>,
        tx: &latest::Sender<SourceState>,
    ) {
        if !self.parts.iter().all(Partition::ready) {
            return;
        }
        let rebuilt = self.merged.is_none();
        if rebuilt {
            self.merged = Some(Merged::rebuild(self.build()));
        }
        self.trim(rebuilt);
        let merged = self.merged.as_ref().expect("set above");
        // Referenced, but held without data: read again.
        let wanted: Vec<Ref> = merged
            .referenced()
            .filter(|r| {
                let held_trimmed = self
                    .parts
                    .iter()
                    .any(|p| p.covers(r.0, &r.1.namespace) && p.trimmed.contains(&r.1));
                held_trimmed && !self.fetching.contains(*r) && !self.failed.contains(*r)
            })
            .cloned()
            .collect();
        for r in wanted {
            self.fetching.insert(r.clone());
            spawn_fetch(client.clone(), r, fetch_tx.clone());
        }
        if !self.fetching.is_empty() {
            debug!(
                fetching = self.fetching.len(),
                "waiting for newly referenced Secrets/ConfigMaps"
            );
            return;
        }
        let model = Arc::new(self.merged.as_ref().expect("set above").model().clone());
        let error = (!self.errors.is_empty()).then(|| self.errors.values().cloned().collect::<Vec<_>>().join("; "));
        let mut warnings: Vec<String> = self
            .parts
            .iter()
            .filter(|p| p.sync == Sync::Missing)
            .map(|p| {
                format!(
                    "{} is not served by the API server ({}); watching for it",
                    p.describe(),
                    p.kind.missing_hint()
                )
            })
            .collect();
        warnings.extend(self.rejected.values().cloned());
        self.published = true;
        tx.send_modify(|state| {
            state.model = Some(model);
            state.generation += 1;
            state.error = error;
            state.warnings = warnings;
            debug!(generation = state.generation, "Kubernetes model published");
        });
    }
}

#[cfg(test)]
mod tests;
