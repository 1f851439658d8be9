//! The bounds on ADS requests that follow what pier serves: a real proxy's requests grow with the
//! configuration it holds, so a fixed limit is one a large enough fleet trips. A state-of-the-world EDS
//! request names every EDS cluster; a delta request after a reconnect carries a version for every
//! resource of its type the proxy holds, and subscribes to each of them again. At 16,000 clusters with
//! long names that is over 4 MiB, and a stream refused for it reconnects and is refused again, for
//! good (Envoy Gateway hit the same wall: envoyproxy/gateway#9564).
//!
//! So each bound is the larger of the operator's (`--xds-max-request-bytes`, `--xds-max-resource-names`:
//! a floor, with Envoy Gateway's 32 MiB as the byte default) and what the served snapshots let a proxy
//! send, with room for a proxy that still holds a larger configuration than the one served now:
//!
//! - bytes: per resource type, `count × (2 × longest name + 64)` (its names once subscribed and once
//!   with a version), doubled, plus the largest node allowed and 64 KiB for the rest (type URL, nonce,
//!   a NACK's message); the largest type of the largest Gateway decides;
//! - names: `4 × count` of that type, plus 1,024.
//!
//! A bound only grows during a process's life: a proxy may hold what was served an hour ago. Before
//! the first publish, nothing says what proxies hold, and a restarted pier is exactly when they all
//! reconnect with everything they hold: a request over the floor then waits for the first publish to
//! be judged, rather than being refused by a bound nothing has sized yet.
//!
//! What a peer can make pier hold stays bounded, which is what the limits are for: a request above
//! [`SMALL_REQUEST`] is buffered only once it holds its share of a budget of four times the byte bound
//! (in KiB permits), so however many connections send large requests at once, pier holds at most that
//! budget of them; the others wait, and HTTP/2 flow control holds their senders back.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use super::XdsType;
use super::cache::Snapshot;

/// Requests up to this size take nothing from the budget: every real request but the largest few.
pub const SMALL_REQUEST: usize = 1 << 20;
/// Room per request for what is not a resource name: type URL, nonce, a NACK's message.
const HEADROOM: usize = 64 * 1024;
/// Bytes per resource beyond twice its name: field tags, lengths and a version.
const PER_RESOURCE: usize = 64;
/// How many maximal requests the budget holds at once.
const BUDGET_REQUESTS: usize = 4;

/// Live request bounds, shared by every stream and raised by each publish ([`RequestBounds::fit`]).
#[derive(Debug)]
pub struct RequestBounds {
    floor_bytes: usize,
    floor_names: usize,
    max_node_bytes: usize,
    bytes: AtomicUsize,
    names: AtomicUsize,
    /// KiB of large requests being buffered.
    budget: Arc<Semaphore>,
    budget_kib: AtomicUsize,
    /// Set once a publish sized the bounds.
    fitted: watch::Sender<bool>,
}

/// What the served snapshots need, before the floors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Need {
    pub bytes: usize,
    pub names: usize,
}

impl RequestBounds {
    pub fn new(floor_bytes: usize, floor_names: usize, max_node_bytes: usize) -> RequestBounds {
        let budget_kib = kib(floor_bytes) * BUDGET_REQUESTS;
        RequestBounds {
            floor_bytes,
            floor_names,
            max_node_bytes,
            bytes: AtomicUsize::new(floor_bytes),
            names: AtomicUsize::new(floor_names),
            budget: Arc::new(Semaphore::new(budget_kib)),
            budget_kib: AtomicUsize::new(budget_kib),
            fitted: watch::Sender::new(false),
        }
    }

    /// Whether a publish has sized the bounds yet.
    pub fn is_fitted(&self) -> bool {
        *self.fitted.borrow()
    }

    /// Resolves once a publish has sized the bounds.
    pub async fn fitted(&self) {
        let mut rx = self.fitted.subscribe();
        // The sender lives as long as `self`.
        let _ = rx.wait_for(|fitted| *fitted).await;
    }

    /// Largest request message accepted now.
    pub fn request_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Most resource names one request may list now.
    pub fn resource_names(&self) -> usize {
        self.names.load(Ordering::Relaxed)
    }

    /// The operator's floors: `(bytes, names)`.
    pub fn floors(&self) -> (usize, usize) {
        (self.floor_bytes, self.floor_names)
    }

    /// What a proxy of any of `snapshots` may send, before the floors.
    pub fn need<'a>(&self, snapshots: impl IntoIterator<Item = &'a Arc<Snapshot>>) -> Need {
        let mut need = Need::default();
        for snapshot in snapshots {
            for ty in XdsType::ALL {
                let view = snapshot.view(ty);
                let count = view.entries.len();
                let bytes = count * (2 * view.longest_name + PER_RESOURCE);
                need.bytes = need.bytes.max(2 * bytes + self.max_node_bytes + HEADROOM);
                need.names = need.names.max(4 * count + 1024);
            }
        }
        need
    }

    /// Raises the bounds to what `snapshots` need (never lowers them). Returns the bounds now in force.
    pub fn fit<'a>(&self, snapshots: impl IntoIterator<Item = &'a Arc<Snapshot>>) -> Need {
        let need = self.need(snapshots);
        let bytes = self.bytes.fetch_max(need.bytes, Ordering::Relaxed).max(need.bytes);
        let names = self.names.fetch_max(need.names, Ordering::Relaxed).max(need.names);
        let want = kib(bytes) * BUDGET_REQUESTS;
        let had = self.budget_kib.fetch_max(want, Ordering::Relaxed);
        if want > had {
            self.budget.add_permits(want - had);
        }
        self.fitted.send_replace(true);
        Need { bytes, names }
    }

    /// Waits for room in the budget to buffer a request of `len` bytes; `None` for a small one.
    pub async fn reserve(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        if len <= SMALL_REQUEST {
            return None;
        }
        let total = self.budget_kib.load(Ordering::Relaxed);
        let permits = u32::try_from(kib(len).min(total)).unwrap_or(u32::MAX);
        // The semaphore is never closed.
        self.budget.clone().acquire_many_owned(permits).await.ok()
    }
}

/// `bytes` in KiB, rounded up.
fn kib(bytes: usize) -> usize {
    bytes.div_ceil(1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::Resources;
    use crate::envoy::pb::endpoint::ClusterLoadAssignment;

    fn snapshot(n: usize, name_len: usize) -> Arc<Snapshot> {
        let endpoints = (0..n)
            .map(|i| ClusterLoadAssignment {
                cluster_name: format!("{i:08}{}", "x".repeat(name_len - 8)),
                ..Default::default()
            })
            .collect();
        let res = Resources {
            endpoints,
            ..Default::default()
        };
        Arc::new(Snapshot::build("ns/gw", &res))
    }

    #[test]
    fn bounds_grow_with_the_snapshot_and_never_shrink() {
        let bounds = RequestBounds::new(4 << 20, 100_000, 64 * 1024);
        let small = bounds.fit([&snapshot(10, 20)]);
        assert_eq!(
            small,
            Need {
                bytes: 4 << 20,
                names: 100_000
            },
            "the floors hold"
        );
        // 100,000 names of 253 bytes: a SotW request naming them all is ~25 MB.
        let big = snapshot(100_000, 253);
        let need = bounds.fit([&big]);
        let sotw_request = 100_000 * (253 + 3);
        let delta_reconnect = 100_000 * (2 * 253 + 30);
        assert!(
            need.bytes >= 2 * delta_reconnect && need.bytes > sotw_request,
            "{need:?}"
        );
        assert!(need.names >= 2 * 200_000, "{need:?}");
        assert_eq!(bounds.request_bytes(), need.bytes);
        assert_eq!(
            bounds.fit([&snapshot(10, 20)]),
            need,
            "a smaller snapshot lowers nothing"
        );
    }

    #[tokio::test]
    async fn large_requests_share_a_budget_of_four() {
        let bounds = RequestBounds::new(4 << 20, 100, 1024);
        assert!(bounds.reserve(SMALL_REQUEST).await.is_none(), "small requests are free");
        let held: Vec<_> = futures::future::join_all((0..4).map(|_| bounds.reserve(4 << 20))).await;
        assert!(held.iter().all(Option::is_some));
        let fifth = tokio::time::timeout(std::time::Duration::from_millis(50), bounds.reserve(4 << 20)).await;
        assert!(fifth.is_err(), "a fifth maximal request waits");
        drop(held);
        assert!(bounds.reserve(4 << 20).await.is_some());
        // A request larger than the whole budget takes all of it, rather than waiting forever.
        assert!(bounds.reserve(64 << 20).await.is_some());
    }
}
