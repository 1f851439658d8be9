//! Which watched kinds pier can read, and why not: a kind the API server refuses (403: the ClusterRole
//! of an older pier, a cluster that does not let controllers list Pods), or one whose first list keeps
//! failing, costs only the objects that need it instead of holding back everything.
//!
//! A watch that has never listed is *unavailable* once it is refused as forbidden, or once it has
//! failed for [`FAILING_FOR`] without a list. The initial-sync gate does not wait for it (as for a kind
//! that is not served), the model marks the kind unreadable with the reason
//! ([`Model::set_unavailable`]), and the translator treats it as empty and says so wherever it is needed
//! — failing closed where an unreadable kind could turn TLS off or widen access
//! (`docs/kubernetes.md`, "When a kind cannot be read"). The watch keeps retrying; its first complete
//! list makes the kind available again, without a restart.
//!
//! The kinds that say what is served at all — GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes — are
//! the exception for a first list that *fails* (5xx, timeouts) rather than being refused: treating
//! them as empty would publish a Gateway without its routes, which takes away every route a proxy
//! failing over to this replica had. So they hold the initial sync while they fail (`/readyz` 503
//! names the kind, `failing for Ns: …`), and only a refusal, which is the cluster's decision and will
//! not pass, degrades them.
//!
//! A watch that has listed and then fails keeps its last objects, as before: the kind stays available
//! with a source error, since what it last listed is still the best knowledge there is.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::runtime::watcher;
use tokio::sync::watch as latest;
use tokio::time::Instant;
use tracing::warn;

use super::store::{Partition, Sync};
use crate::model::{Kind, Model};
use crate::source::SourceState;

/// How long a watch that never listed may fail before its kind counts as unavailable.
pub const FAILING_FOR: Duration = Duration::from_secs(10);

/// Kinds whose absence would publish Gateways without their routes (module doc).
const DEFINING: &[&str] = &["GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute"];

/// A watch's first-list failure: whether it made the partition unavailable just now.
pub fn failed(p: &mut Partition, error: &watcher::Error, now: Instant) -> bool {
    if p.sync != Sync::Pending && p.sync != Sync::Unavailable {
        return false;
    }
    let since = *p.failing_since.get_or_insert(now);
    let failing = now.duration_since(since);
    let reason = if is_forbidden(error) {
        Some(format!("forbidden: {}", short(error)))
    } else if failing >= FAILING_FOR {
        let why = format!("failing for {}s: {}", failing.as_secs(), short(error));
        if DEFINING.contains(&p.kind.name) && p.sync == Sync::Pending {
            // Still waited for; `report` says why.
            p.unavailable = Some(why);
            return false;
        }
        Some(why)
    } else {
        None
    };
    let Some(reason) = reason else { return false };
    let became = p.sync != Sync::Unavailable;
    p.sync = Sync::Unavailable;
    p.unavailable = Some(reason);
    became
}

/// The partition listed: it is available (again).
pub fn listed(p: &mut Partition) {
    p.failing_since = None;
    p.unavailable = None;
}

/// Marks in `model` every kind no partition can supply, with the reasons of its unavailable
/// partitions. A kind with a second version that listed (ReferenceGrant v1beta1 where v1 is refused) is
/// available.
pub fn mark(model: &mut Model, parts: &[Partition]) {
    let mut reasons: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for p in parts.iter().filter(|p| p.sync == Sync::Unavailable) {
        let covered = parts
            .iter()
            .any(|q| q.kind.name == p.kind.name && q.namespace == p.namespace && q.sync == Sync::Synced);
        if !covered {
            let why = p.unavailable.clone().unwrap_or_default();
            reasons.entry(p.kind.name).or_default().push(match &p.namespace {
                Some(ns) => format!("in namespace {ns}: {why}"),
                None => why,
            });
        }
    }
    for (name, why) in reasons {
        if let Some(kind) = Kind::from_name(name) {
            model.set_unavailable(kind, Some(&why.join("; ")));
        }
    }
}

/// `(kind, reason)` of every kind that is not available now: unreadable (as [`mark`] says), not served
/// (its CRD is not installed), failing, or not listed yet. For `/readyz`, the metric and the log.
pub fn report(parts: &[Partition]) -> Vec<(String, String)> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in parts {
        let why = match p.sync {
            Sync::Unavailable => p.unavailable.clone().unwrap_or_default(),
            Sync::Pending => p.unavailable.clone().unwrap_or_else(|| "not listed yet".to_string()),
            Sync::Missing => format!("not served: {}", p.kind.missing_hint()),
            Sync::Synced => continue,
        };
        let covered = parts
            .iter()
            .any(|q| q.kind.name == p.kind.name && q.namespace == p.namespace && q.sync == Sync::Synced);
        if covered {
            continue;
        }
        let why = match &p.namespace {
            Some(ns) => format!("in namespace {ns}: {why}"),
            None => why,
        };
        out.entry(p.kind.name.to_string()).or_default().push(why);
    }
    out.into_iter().map(|(k, v)| (k, v.join("; "))).collect()
}

fn is_forbidden(error: &watcher::Error) -> bool {
    api_code(error) == Some(403)
}

fn api_code(error: &watcher::Error) -> Option<u16> {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s.code),
        _ => None,
    }
}

/// The API server's message, without kube-rs's wrapping.
fn short(error: &watcher::Error) -> String {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.message.clone(),
        other => other.to_string(),
    }
}

impl super::Source {
    /// A first-list failure of watch `i`: `None` while the partition is not unavailable (the error is
    /// an ordinary watch error), else whether it just became so (a change to publish). Logged when it
    /// becomes unavailable and then once a minute, so a kind pier cannot read is never silent and never
    /// floods the log.
    pub(super) fn unavailable(&mut self, i: usize, e: &watcher::Error) -> Option<bool> {
        let now = Instant::now();
        let p = &mut self.parts[i];
        let became = failed(p, e, now);
        if p.sync != Sync::Unavailable {
            return None;
        }
        if became
            || p.warned_at
                .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(60))
        {
            p.warned_at = Some(now);
            warn!(
                watch = %p.describe(),
                reason = p.unavailable.as_deref().unwrap_or_default(),
                "kind cannot be read; serving without it (what needs it says so in its status), retrying"
            );
        }
        if became {
            self.merged = None;
            self.errors.remove(&i);
        }
        Some(became)
    }

    /// Publishes which kinds cannot be read now (before the first model too: `/readyz` says what it
    /// waits for).
    pub(super) fn report(&self, tx: &latest::Sender<SourceState>) {
        let now = report(&self.parts);
        tx.send_if_modified(|state| {
            if state.unavailable == now {
                return false;
            }
            state.unavailable = now;
            true
        });
    }
}
