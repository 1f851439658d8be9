//! Prometheus metrics of the ADS server, registered into the runtime's registry:
//!
//! - `pier_xds_connected_proxies{mode}` (gauge): open ADS streams, `sotw` or `delta`;
//! - `pier_xds_streams_total{mode}` (counter): ADS streams that named their node (a proxy in a
//!   reconnect loop makes it climb while the gauge stays put);
//! - `pier_xds_stream_failures_total` (counter): ADS streams that ended in failure (a bound, a
//!   refusal, an undecodable request, a reset); `/debug/clients` lists who (`failing`);
//! - `pier_xds_pushes_total{type}` (counter): responses sent, by resource type (`clusters`, `endpoints`,
//!   `listeners`, `routes`, `secrets`);
//! - `pier_xds_nacks_total{type}` (counter): responses a proxy rejected;
//! - `pier_snapshot_info{gateway,type,version}` (gauge, always 1): the version served per Gateway and
//!   type, refreshed by [`XdsMetrics::record_snapshots`] after a publish;
//! - `pier_xds_refused_total{reason}` (counter): connections and streams refused by a bound or by
//!   authorization (`transport::Refused`);
//! - `pier_xds_tls_reloads_total{result}` (counter): certificate reloads, `ok` or `error`;
//! - `pier_xds_insecure_plaintext` (gauge): 1 when the operator let plaintext xDS off loopback;
//! - `pier_xds_push_latency_seconds{type}` and `pier_xds_ack_latency_seconds{type,result}`
//!   (histograms): publish → response sent, response sent → ACK or NACK, defined and fed by
//!   `latency`.
//!
//! Owns only the metric objects; never reads the cache on its own (the runtime or [`AdsServer::publish`]
//! calls `record_snapshots`), never influences serving.
//!
//! [`AdsServer::publish`]: super::AdsServer::publish

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::clients::Mode;
use super::latency::LatencyMetrics;
use super::{SnapshotCache, XdsType};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TypeLabels {
    r#type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

/// At most one refusal log line per reason in this interval.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct SnapshotLabels {
    gateway: String,
    r#type: &'static str,
    version: String,
}

/// The ADS server's metrics. `Default` gives unregistered metrics (still counted, never exported).
#[derive(Debug, Default)]
pub struct XdsMetrics {
    connected: Family<ModeLabels, Gauge>,
    streams: Family<ModeLabels, Counter>,
    stream_failures: Counter,
    pushes: Family<TypeLabels, Counter>,
    nacks: Family<TypeLabels, Counter>,
    snapshot_info: Family<SnapshotLabels, Gauge>,
    /// Label sets currently exported by `snapshot_info`, to remove the stale ones.
    snapshot_labels: Mutex<BTreeSet<SnapshotLabels>>,
    refused: Family<ReasonLabels, Counter>,
    /// Per reason: when a refusal was last logged, and how many went unlogged since.
    refusal_log: Mutex<HashMap<&'static str, (Instant, u64)>>,
    tls_reloads: Family<ResultLabels, Counter>,
    insecure: Gauge,
    latency: LatencyMetrics,
}

impl XdsMetrics {
    pub fn new(registry: &mut Registry) -> XdsMetrics {
        let metrics = XdsMetrics::default();
        registry.register(
            "pier_xds_connected_proxies",
            "Open ADS streams by mode",
            metrics.connected.clone(),
        );
        registry.register(
            "pier_xds_streams",
            "ADS streams opened (that named their node), by mode",
            metrics.streams.clone(),
        );
        registry.register(
            "pier_xds_stream_failures",
            "ADS streams that ended in failure: a bound, a refusal, an undecodable request, a reset",
            metrics.stream_failures.clone(),
        );
        registry.register(
            "pier_xds_pushes",
            "xDS responses sent, by resource type",
            metrics.pushes.clone(),
        );
        registry.register(
            "pier_xds_nacks",
            "xDS responses rejected by a proxy, by resource type",
            metrics.nacks.clone(),
        );
        registry.register(
            "pier_snapshot_info",
            "Version served per Gateway and resource type (value always 1)",
            metrics.snapshot_info.clone(),
        );
        registry.register(
            "pier_xds_refused",
            "xDS connections and streams refused by a bound or by authorization, by reason",
            metrics.refused.clone(),
        );
        registry.register(
            "pier_xds_tls_reloads",
            "Reloads of the xDS server's TLS certificates, by result",
            metrics.tls_reloads.clone(),
        );
        registry.register(
            "pier_xds_insecure_plaintext",
            "1 when xDS is served in plaintext beyond loopback (--xds-insecure-plaintext)",
            metrics.insecure.clone(),
        );
        metrics.latency.register(registry);
        for mode in [Mode::Sotw, Mode::Delta] {
            // Export both modes from the start, at 0.
            let _ = metrics.connected.get_or_create(&ModeLabels { mode: mode.as_str() });
            let _ = metrics.streams.get_or_create(&ModeLabels { mode: mode.as_str() });
        }
        metrics
    }

    pub(crate) fn connected(&self, mode: Mode) {
        self.connected.get_or_create(&ModeLabels { mode: mode.as_str() }).inc();
    }

    pub(crate) fn stream_opened(&self, mode: Mode) {
        self.streams.get_or_create(&ModeLabels { mode: mode.as_str() }).inc();
    }

    pub(crate) fn stream_failed(&self) {
        self.stream_failures.inc();
    }

    pub(crate) fn disconnected(&self, mode: Mode) {
        self.connected.get_or_create(&ModeLabels { mode: mode.as_str() }).dec();
    }

    pub(crate) fn latency(&self) -> &LatencyMetrics {
        &self.latency
    }

    pub(crate) fn pushed(&self, ty: XdsType) {
        self.pushes.get_or_create(&TypeLabels { r#type: ty.as_str() }).inc();
    }

    pub(crate) fn nacked(&self, ty: XdsType) {
        self.nacks.get_or_create(&TypeLabels { r#type: ty.as_str() }).inc();
    }

    /// Counts a refusal; `Some(suppressed)` when it should be logged (the first in a while), with the
    /// number of refusals of this reason not logged since the last line.
    pub(crate) fn refused(&self, reason: super::transport::Refused) -> Option<u64> {
        let name = reason.as_str();
        self.refused.get_or_create(&ReasonLabels { reason: name }).inc();
        let mut log = self.refusal_log.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match log.get_mut(name) {
            Some((last, suppressed)) if now.duration_since(*last) < REFUSAL_LOG_INTERVAL => {
                *suppressed += 1;
                None
            }
            entry => {
                let suppressed = entry.map_or(0, |(_, n)| *n);
                log.insert(name, (now, 0));
                Some(suppressed)
            }
        }
    }

    pub fn refusals(&self, reason: super::transport::Refused) -> u64 {
        self.refused
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .get()
    }

    pub fn tls_reloads(&self, ok: bool) -> u64 {
        let result = if ok { "ok" } else { "error" };
        self.tls_reloads.get_or_create(&ResultLabels { result }).get()
    }

    pub(crate) fn tls_reload(&self, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.tls_reloads.get_or_create(&ResultLabels { result }).inc();
    }

    pub fn set_insecure_plaintext(&self, insecure: bool) {
        self.insecure.set(i64::from(insecure));
    }

    /// Open streams of one mode.
    pub fn connected_proxies(&self, mode: Mode) -> i64 {
        self.connected.get_or_create(&ModeLabels { mode: mode.as_str() }).get()
    }

    pub fn pushes(&self, ty: XdsType) -> u64 {
        self.pushes.get_or_create(&TypeLabels { r#type: ty.as_str() }).get()
    }

    pub fn nacks(&self, ty: XdsType) -> u64 {
        self.nacks.get_or_create(&TypeLabels { r#type: ty.as_str() }).get()
    }

    /// Re-exports `pier_snapshot_info` from the cache: one series per Gateway and type, old versions
    /// removed. Call after each publish.
    pub fn record_snapshots(&self, cache: &SnapshotCache) {
        let mut current = self.snapshot_labels.lock().unwrap_or_else(|e| e.into_inner());
        let next: BTreeSet<SnapshotLabels> = cache
            .all()
            .iter()
            .flat_map(|(gateway, snapshot)| {
                XdsType::ALL.into_iter().map(|ty| SnapshotLabels {
                    gateway: gateway.clone(),
                    r#type: ty.as_str(),
                    version: snapshot.version(ty).to_string(),
                })
            })
            .collect();
        for gone in current.difference(&next) {
            self.snapshot_info.remove(gone);
        }
        for labels in &next {
            self.snapshot_info.get_or_create(labels).set(1);
        }
        *current = next;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use prometheus_client::encoding::text::encode;

    use super::*;
    use crate::envoy::Resources;

    #[test]
    fn exports_counters_and_snapshot_versions() {
        let mut registry = Registry::default();
        let metrics = XdsMetrics::new(&mut registry);
        metrics.connected(Mode::Delta);
        metrics.pushed(XdsType::Cluster);
        metrics.nacked(XdsType::Route);
        let cache = SnapshotCache::new();
        cache.publish(&BTreeMap::from([("ns/gw".to_string(), Resources::default())]));
        metrics.record_snapshots(&cache);
        cache.publish(&BTreeMap::new());
        metrics.record_snapshots(&cache);
        cache.publish(&BTreeMap::from([("ns/gw2".to_string(), Resources::default())]));
        metrics.record_snapshots(&cache);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(text.contains("pier_xds_connected_proxies{mode=\"delta\"} 1"), "{text}");
        assert!(text.contains("pier_xds_pushes_total{type=\"clusters\"} 1"), "{text}");
        assert!(text.contains("pier_xds_nacks_total{type=\"routes\"} 1"), "{text}");
        assert!(
            text.contains("pier_snapshot_info{gateway=\"ns/gw2\",type=\"clusters\",version=\""),
            "{text}"
        );
        assert!(!text.contains("gateway=\"ns/gw\""), "{text}");
    }
}
