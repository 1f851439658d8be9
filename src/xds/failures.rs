//! ADS streams that ended in failure, remembered past their end: a proxy stuck in a reconnect loop (a
//! request refused for its size, a bound it trips, a stream it resets) is connected for a moment at a
//! time, so the registry of connected proxies alone never shows it. `/debug/clients` lists these
//! (`failing`), a connected proxy carries its own recent count, and `pier proxy-status` prints them.
//!
//! Keyed by who failed as far as pier could tell: the peer's address, the certificate's identity, and
//! the node once a request named one (a request refused before it could be read has none). Bounded:
//! failures older than [`WINDOW`] are forgotten, and past [`MAX_ENTRIES`] keys the stalest goes, so a
//! flood of failing peers costs a fixed amount.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::untrusted::{short, text};

/// How long a failure counts.
pub const WINDOW: Duration = Duration::from_secs(600);
/// Distinct failing peers remembered at once.
const MAX_ENTRIES: usize = 1024;
/// Failure times kept per key (the count is exact up to this many per window).
const MAX_TIMES: usize = 1000;
/// Room for an error message in the listing.
const MESSAGE_CHARS: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    ip: IpAddr,
    identity: String,
    node: String,
}

#[derive(Debug, Clone)]
struct Entry {
    peer: String,
    gateway: Option<String>,
    /// Unix seconds of each failure in the window, oldest first.
    times: VecDeque<u64>,
    last_error: String,
}

/// Who failed.
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    pub peer: std::net::SocketAddr,
    pub identity: &'a str,
    /// `None` when the stream ended before any request named its node.
    pub node: Option<&'a str>,
    pub gateway: Option<&'a str>,
}

/// Failed streams in the last [`WINDOW`].
#[derive(Debug, Default)]
pub struct Failures {
    entries: Mutex<BTreeMap<Key, Entry>>,
}

impl Failures {
    /// Records a stream of `who` that ended with `error`.
    pub fn record(&self, who: Who<'_>, error: &str) {
        self.record_at(who, error, now());
    }

    fn record_at(&self, who: Who<'_>, error: &str, at: u64) {
        let key = Key {
            ip: who.peer.ip(),
            identity: short(who.identity),
            node: who.node.map(short).unwrap_or_default(),
        };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.contains_key(&key) && entries.len() >= MAX_ENTRIES {
            let stalest = entries
                .iter()
                .min_by_key(|(_, e)| e.times.back().copied().unwrap_or(0))
                .map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                entries.remove(&k);
            }
        }
        let entry = entries.entry(key).or_insert_with(|| Entry {
            peer: who.peer.to_string(),
            gateway: None,
            times: VecDeque::new(),
            last_error: String::new(),
        });
        entry.peer = who.peer.to_string();
        if let Some(gw) = who.gateway {
            entry.gateway = Some(short(gw));
        }
        entry.times.push_back(at);
        if entry.times.len() > MAX_TIMES {
            entry.times.pop_front();
        }
        entry.last_error = text(error, MESSAGE_CHARS);
    }

    /// Failures in the window of the proxy `node` with `identity`, from any address. `node` and
    /// `identity` as the client registry keeps them (already escaped).
    pub fn recent(&self, identity: &str, node: &str) -> usize {
        let cutoff = now().saturating_sub(WINDOW.as_secs());
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .filter(|(k, _)| k.identity == identity && k.node == node)
            .map(|(_, e)| e.times.iter().filter(|t| **t >= cutoff).count())
            .sum()
    }

    /// `[{peer, identity, node, gateway, failures, first_unix, last_unix, last_error}]`, the latest
    /// failure first; entries with nothing left in the window are dropped.
    pub fn to_json(&self) -> Value {
        self.to_json_at(now())
    }

    fn to_json_at(&self, at: u64) -> Value {
        let cutoff = at.saturating_sub(WINDOW.as_secs());
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, e| {
            while e.times.front().is_some_and(|t| *t < cutoff) {
                e.times.pop_front();
            }
            !e.times.is_empty()
        });
        let mut list: Vec<(&Key, &Entry)> = entries.iter().collect();
        list.sort_by_key(|(k, e)| (std::cmp::Reverse(e.times.back().copied()), (*k).clone()));
        let out: Vec<Value> = list
            .into_iter()
            .map(|(k, e)| {
                json!({
                    "peer": e.peer,
                    "identity": k.identity,
                    "node": (!k.node.is_empty()).then_some(&k.node),
                    "gateway": e.gateway,
                    "failures": e.times.len(),
                    "first_unix": e.times.front(),
                    "last_unix": e.times.back(),
                    "last_error": e.last_error,
                })
            })
            .collect();
        Value::Array(out)
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(port: u16, node: Option<&'static str>) -> Who<'static> {
        Who {
            peer: ([10, 0, 0, 1], port).into(),
            identity: "plaintext",
            node,
            gateway: node.map(|_| "ns/gw"),
        }
    }

    #[test]
    fn counts_a_reconnect_loop_per_proxy_and_forgets_old_failures() {
        let f = Failures::default();
        for i in 0..5 {
            f.record_at(
                who(4000 + i, Some("envoy-1")),
                "a 5000000-byte request is over",
                1_000 + u64::from(i),
            );
        }
        f.record_at(who(5000, None), "refused before the node", 1_010);
        let doc = f.to_json_at(1_020);
        assert_eq!(doc.as_array().unwrap().len(), 2);
        assert_eq!(doc[0]["node"], Value::Null, "the latest failure first");
        assert_eq!(doc[1]["node"], "envoy-1");
        assert_eq!(doc[1]["failures"], 5);
        assert_eq!(doc[1]["peer"], "10.0.0.1:4004", "the latest connection's port");
        assert_eq!(doc[1]["gateway"], "ns/gw");
        assert_eq!(doc[1]["first_unix"], 1_000);
        // Ten minutes later only the newest is left, and then nothing.
        assert_eq!(f.to_json_at(1_004 + WINDOW.as_secs()).as_array().unwrap().len(), 2);
        assert_eq!(f.to_json_at(1_011 + WINDOW.as_secs()).as_array().unwrap().len(), 0);
        assert_eq!(f.recent("plaintext", "envoy-1"), 0, "those were long ago");
        f.record(who(4010, Some("envoy-1")), "again");
        assert_eq!(f.recent("plaintext", "envoy-1"), 1);
    }

    #[test]
    fn holds_a_bounded_number_of_peers() {
        let f = Failures::default();
        for i in 0..(MAX_ENTRIES + 10) {
            let node = format!("n-{i}");
            let w = Who {
                node: Some(&node),
                ..who(1, None)
            };
            f.record_at(w, "x", 10_000 + i as u64 / 4);
        }
        let doc = f.to_json_at(10_300);
        let nodes: Vec<&str> = doc
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["node"].as_str().unwrap())
            .collect();
        assert_eq!(nodes.len(), MAX_ENTRIES);
        assert!(
            nodes[..4].contains(&format!("n-{}", MAX_ENTRIES + 9).as_str()),
            "the latest first"
        );
        assert!(!nodes.contains(&"n-0"), "the stalest went first");
    }
}
