//! The Kubernetes status writer: writes what the translator computed onto the objects, only while this
//! replica leads, without ever holding up translation or xDS serving (it reads the newest statuses from
//! a latest-value channel and works at its own pace).
//!
//! Each write is a read-merge-replace: GET the object, [`merge`] pier's part into its status, and
//! `replace_status` with the object's resourceVersion, so a concurrent writer (another controller on a
//! shared `status.parents`) makes the API server answer 409 and pier re-reads and merges again. Writes
//! whose merge changes nothing are not sent, and a status pier already wrote and that has not changed
//! since is not even read again. Writes are spaced to at most `writes_per_second`.
//!
//! A write the API server refuses for the object's sake (403, 422) is retried when pier's part changes
//! or after 30 s. One that fails for the server's sake (5xx, unreachable; 429 is retried inside kube's
//! client, honouring `Retry-After`) pauses every write, 0.5 s doubling to 30 s, and resumes where it
//! stopped: during an outage the writer sends one request per pause, not one per object, and when the
//! server returns it is not met by a storm of retries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::Value;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::Rejections;
use super::merge::{self, merge};
use super::metrics::StatusMetrics;
use crate::api::kinds::{self, WatchedKind};
use crate::gateway::status::ObjectStatus;

#[derive(Debug, Clone)]
pub struct WriterConfig {
    pub controller_name: String,
    /// Upper bound on status writes (and reads) per second.
    pub writes_per_second: u32,
    /// How often Envoy rejections are looked at again (they change without a new translation).
    pub nack_poll: Duration,
    /// How often every status is read and compared again, repairing edits pier did not make.
    pub resync: Duration,
}

/// (apiVersion, kind, namespace, name).
type Key = (String, String, String, String);

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Written,
    Unchanged,
    /// The object is gone.
    Gone,
}

const CONFLICT_RETRIES: usize = 5;
const FAILED_RETRY: Duration = Duration::from_secs(30);
/// The first pause after the API server itself failed (5xx, unreachable), doubled each time it fails
/// again up to [`FAILED_RETRY`].
const SERVER_BACKOFF: Duration = Duration::from_millis(500);

/// Why a write failed, and whose fault that is.
#[derive(Debug)]
pub struct WriteError {
    pub message: String,
    /// The API server failed (5xx, 429 past kube's own retries, unreachable), not this object: every
    /// write pauses, rather than each of hundreds of objects failing on its own.
    pub server: bool,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl WriteError {
    fn of(context: String, e: kube::Error) -> WriteError {
        let server = match &e {
            kube::Error::Api(s) => s.code >= 500 || s.code == 429,
            _ => true,
        };
        WriteError {
            message: format!("{context}: {e}"),
            server,
        }
    }
}

/// Writes statuses until `stop` fires; idle while `leader` is false.
pub async fn run(
    client: kube::Client,
    cfg: WriterConfig,
    mut statuses: watch::Receiver<crate::snapshot::StatusSet>,
    rejections: Arc<dyn Rejections>,
    mut leader: watch::Receiver<bool>,
    metrics: StatusMetrics,
    mut stop: watch::Receiver<bool>,
) {
    let spacing = Duration::from_secs(1) / cfg.writes_per_second.max(1);
    let mut memory = Memory::new();
    let mut resync_at = tokio::time::Instant::now() + cfg.resync;
    loop {
        if tokio::time::Instant::now() >= resync_at {
            memory.synced.clear();
            resync_at = tokio::time::Instant::now() + cfg.resync;
        }
        let leads = *leader.borrow_and_update();
        metrics.set_leader(leads);
        if !leads {
            memory.synced.clear();
            tokio::select! {
                _ = stopped(&mut stop) => return,
                r = leader.changed() => if r.is_err() { return },
            }
            continue;
        }
        let newest = statuses.borrow_and_update().clone();
        let desired = desired(newest.values().map(AsRef::as_ref), rejections.as_ref(), &memory.synced);
        for (key, want) in desired {
            if !memory.due(&key, &want) {
                continue;
            }
            let Some(kind) = kinds::status_kind(&key.0, &key.1) else {
                continue;
            };
            let result = write(&client, kind, &key, &want, &cfg.controller_name, &metrics).await;
            metrics.outcome(label(&result));
            if let Some(pause) = memory.record(key, want, result) {
                tokio::select! {
                    _ = stopped(&mut stop) => return,
                    _ = tokio::time::sleep(pause) => {}
                }
                break;
            }
            tokio::select! {
                _ = stopped(&mut stop) => return,
                _ = tokio::time::sleep(spacing) => {}
            }
            if !*leader.borrow() {
                info!("lost leadership; status writes stop");
                break;
            }
        }
        tokio::select! {
            _ = stopped(&mut stop) => return,
            r = statuses.changed() => if r.is_err() { return },
            r = leader.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(cfg.nack_poll) => {}
        }
    }
}

/// What the writer remembers between passes.
struct Memory {
    /// What pier last brought each object's status to (its own part, before merging).
    synced: BTreeMap<Key, Value>,
    /// Writes that failed for the object's sake: not retried before the deadline unless pier's part
    /// changes, so an object the API server keeps refusing costs one request per `FAILED_RETRY`.
    failed: BTreeMap<Key, (Value, tokio::time::Instant)>,
    /// The next pause after the API server itself fails.
    backoff: Duration,
}

impl Memory {
    fn new() -> Memory {
        Memory {
            synced: BTreeMap::new(),
            failed: BTreeMap::new(),
            backoff: SERVER_BACKOFF,
        }
    }

    /// Whether `want` still has to be written for `key`.
    fn due(&self, key: &Key, want: &Value) -> bool {
        let held_back = self
            .failed
            .get(key)
            .is_some_and(|(w, until)| w == want && tokio::time::Instant::now() < *until);
        self.synced.get(key) != Some(want) && !held_back
    }

    /// Records one write; `Some(pause)` when the API server failed and every write waits that long.
    fn record(&mut self, key: Key, want: Value, result: Result<Outcome, WriteError>) -> Option<Duration> {
        match result {
            Ok(Outcome::Gone) => {
                self.synced.remove(&key);
            }
            Ok(outcome) => {
                debug!(kind = %key.1, object = %object_name(&key), ?outcome, "status");
                self.failed.remove(&key);
                self.synced.insert(key, want);
            }
            Err(e) if e.server => {
                let pause = self.backoff;
                warn!(kind = %key.1, object = %object_name(&key), error = %e, "the API server failed a status write; all writes pause for {pause:?}");
                self.backoff = (pause * 2).min(FAILED_RETRY);
                return Some(pause);
            }
            Err(e) => {
                warn!(kind = %key.1, object = %object_name(&key), error = %e, "status write failed; retried on the next change or in {FAILED_RETRY:?}");
                self.failed
                    .insert(key, (want, tokio::time::Instant::now() + FAILED_RETRY));
            }
        }
        self.backoff = SERVER_BACKOFF;
        None
    }
}

/// `pier_status_writes_total{outcome}`.
fn label(result: &Result<Outcome, WriteError>) -> &'static str {
    match result {
        Ok(Outcome::Written) => "written",
        Ok(Outcome::Unchanged) => "unchanged",
        Ok(Outcome::Gone) => "gone",
        Err(_) => "failed",
    }
}

fn object_name(key: &Key) -> String {
    if key.2.is_empty() {
        key.3.clone()
    } else {
        format!("{}/{}", key.2, key.3)
    }
}

/// pier's part of every status it writes: the computed statuses (Gateways with their Envoy rejections),
/// plus an empty share of the shared lists of objects whose status pier wrote before and no longer
/// computes.
fn desired<'a>(
    statuses: impl Iterator<Item = &'a ObjectStatus>,
    rejections: &dyn Rejections,
    synced: &BTreeMap<Key, Value>,
) -> BTreeMap<Key, Value> {
    let mut out = BTreeMap::new();
    for s in statuses {
        let ns = s.metadata.namespace.as_deref().map(str::to_string).unwrap_or_default();
        let key = (
            s.api_version.to_string(),
            s.kind.to_string(),
            ns,
            s.metadata.name.to_string(),
        );
        let status = if s.kind == crate::api::consts::KIND_GATEWAY {
            let gateway = format!("{}/{}", key.2, key.3);
            merge::with_rejections(s.status_json(), &rejections.of_gateway(&gateway))
        } else {
            s.status_json()
        };
        out.insert(key, status);
    }
    for (key, previous) in synced {
        if !out.contains_key(key) {
            let leave = merge::only_shared_fields(previous);
            if leave.as_object().is_some_and(|m| !m.is_empty()) {
                out.insert(key.clone(), leave);
            }
        }
    }
    out
}

/// Read, merge, replace; re-read on 409 Conflict.
pub async fn write(
    client: &kube::Client,
    kind: &WatchedKind,
    key: &Key,
    want: &Value,
    controller: &str,
    metrics: &StatusMetrics,
) -> Result<Outcome, WriteError> {
    let ar = kind.api_resource();
    let api: Api<DynamicObject> = if kind.namespaced {
        Api::namespaced_with(client.clone(), &key.2, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    for _ in 0..CONFLICT_RETRIES {
        let Some(mut obj) = api
            .get_opt(&key.3)
            .await
            .map_err(|e| WriteError::of(format!("reading {}", kind.describe()), e))?
        else {
            return Ok(Outcome::Gone);
        };
        let current = obj.data.get("status").cloned().unwrap_or(Value::Null);
        let now = now_rfc3339();
        let merged = merge(&current, want, controller, &now);
        if merged == current {
            return Ok(Outcome::Unchanged);
        }
        obj.data["status"] = merged;
        obj.metadata.managed_fields = None;
        match api.replace_status(&key.3, &PostParams::default(), &obj).await {
            Ok(_) => return Ok(Outcome::Written),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                metrics.conflict();
                debug!(object = %object_name(key), "status conflict; reading again");
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Outcome::Gone),
            Err(e) => {
                let context = format!("replacing the status of {} {}", kind.kind, object_name(key));
                return Err(WriteError::of(context, e));
            }
        }
    }
    Err(WriteError {
        message: format!(
            "{} {}: still conflicting after {CONFLICT_RETRIES} attempts",
            kind.kind,
            object_name(key)
        ),
        server: false,
    })
}

/// `lastTransitionTime` format (RFC 3339, seconds).
fn now_rfc3339() -> String {
    let ts = k8s_openapi::jiff::Timestamp::now();
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Completes once `stop` is set (or its sender is gone); holds no borrow across awaits.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
