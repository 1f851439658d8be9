//! Push latency and ACK latency: the two histograms, and what one stream remembers to feed them.
//!
//! - `pier_xds_push_latency_seconds{type}`: from the publish that first carried the content a response
//!   delivers ([`Snapshot::published`], per type) to the moment the stream hands that response to the
//!   transport. Observed once per stream, type and publish, on the response that delivers the publish,
//!   and only for publishes made while the stream was open. Not observed: responses that deliver
//!   nothing newer than what was already timed (answers to a subscription change, the make-before-break
//!   removal of old clusters, the first state a (re)connecting proxy is sent), and publishes a stream
//!   settles without a response (the proxy holds the content already, did not ask for the type, or
//!   rejected that version). A response held back by one still in flight, or (listeners and routes) by
//!   make-before-break, is timed when it is sent, so the wait counts.
//! - `pier_xds_ack_latency_seconds{type,result}`: from a response handed to the transport to the
//!   stream receiving the proxy's ACK (`ack`) or NACK (`nack`) of it.
//!
//! The state machines never read the clock: a stream reads it once per response it sends and once per
//! (N)ACK it receives, here. Observing takes the histogram's own lock and nothing else: each series is
//! looked up in its family once per process and kept ([`OnceLock`]), so a family is still absent from
//! `/metrics` until its first observation, like pier's other labelled families.
//!
//! [`Snapshot::published`]: super::Snapshot::published

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::XdsType;
use super::clients::{ClientSync, TypeSync};
use super::plan::Plan;
use super::stream::Event;

/// 1 ms to 10 s: a push to a connected proxy takes milliseconds; make-before-break adds a round trip
/// and Envoy's cluster warming; seconds mean a slow or stuck proxy.
const BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PushLabels {
    r#type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AckLabels {
    r#type: &'static str,
    result: &'static str,
}

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The two latency histograms. `Default` gives unregistered ones (still observed, never exported).
#[derive(Debug)]
pub(crate) struct LatencyMetrics {
    push: Family<PushLabels, Histogram>,
    ack: Family<AckLabels, Histogram>,
    /// Per type, the series of `push` (looked up once).
    push_series: [OnceLock<Histogram>; 5],
    /// Per type, the series of `ack`: ACK, then NACK.
    ack_series: [[OnceLock<Histogram>; 2]; 5],
}

impl Default for LatencyMetrics {
    fn default() -> Self {
        LatencyMetrics {
            push: Family::new_with_constructor(histogram),
            ack: Family::new_with_constructor(histogram),
            push_series: Default::default(),
            ack_series: Default::default(),
        }
    }
}

impl LatencyMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "pier_xds_push_latency_seconds",
            "Publish to xDS response handed to the transport, by resource type; once per stream, type and publish, on the response delivering a publish made while the stream was open (answers to a subscription change are not counted)",
            self.push.clone(),
        );
        registry.register(
            "pier_xds_ack_latency_seconds",
            "xDS response handed to the transport to the proxy's ACK or NACK of it, by resource type and result",
            self.ack.clone(),
        );
    }

    fn push(&self, ty: XdsType, took: Duration) {
        self.push_series[ty.index()]
            .get_or_init(|| self.push.get_or_create(&PushLabels { r#type: ty.as_str() }).clone())
            .observe(took.as_secs_f64());
    }

    fn ack(&self, ty: XdsType, acked: bool, took: Duration) {
        let result = if acked { "ack" } else { "nack" };
        self.ack_series[ty.index()][usize::from(!acked)]
            .get_or_init(|| {
                self.ack
                    .get_or_create(&AckLabels {
                        r#type: ty.as_str(),
                        result,
                    })
                    .clone()
            })
            .observe(took.as_secs_f64());
    }
}

/// One stream's clocks, per type (fixed arrays: nothing allocated per response).
#[derive(Debug)]
pub(crate) struct Timing {
    /// Publishes dated at or before this are timed, settled, or older than the stream.
    timed: [Instant; 5],
    /// When the response awaiting an (N)ACK was handed to the transport.
    sent: [Option<Instant>; 5],
}

impl Timing {
    /// A stream opened now: what was published before is not its push latency.
    pub(crate) fn new() -> Timing {
        Timing {
            timed: [Instant::now(); 5],
            sent: [None; 5],
        }
    }

    /// The (N)ACKs among `events` (a request just applied) end their response's ACK latency.
    pub(crate) fn answered(&mut self, metrics: &LatencyMetrics, events: &[Event]) {
        for event in events {
            let (ty, acked) = match event {
                Event::Acked { ty, .. } => (*ty, true),
                Event::Nacked { ty, .. } => (*ty, false),
                _ => continue,
            };
            // None: an ACK recorded without a response (a reconnecting proxy that holds the version).
            if let Some(sent) = self.sent[ty.index()].take() {
                metrics.ack(ty, acked, sent.elapsed());
            }
        }
    }

    /// Publishes the stream is done with, though it sends nothing for them: for a type that is not
    /// [`TypeSync::Pending`] (the proxy holds what is served, rejected it, or never asked for the type),
    /// the content served now needs no response. Call once per turn, after the flush.
    pub(crate) fn settle(&mut self, sync: &ClientSync, plan: &Plan) {
        for ty in XdsType::ALL {
            if sync.types.get(&ty) != Some(&TypeSync::Pending)
                && let Some(published) = plan.published(ty)
            {
                let timed = &mut self.timed[ty.index()];
                *timed = (*timed).max(published);
            }
        }
    }

    /// A response of `ty`, served from `plan`, was just handed to the transport.
    pub(crate) fn sent(&mut self, metrics: &LatencyMetrics, ty: XdsType, plan: &Plan) {
        let now = Instant::now();
        self.sent[ty.index()] = Some(now);
        let timed = &mut self.timed[ty.index()];
        if let Some(published) = plan.published(ty)
            && published > *timed
        {
            *timed = published;
            metrics.push(ty, now.duration_since(published));
        }
    }
}

#[cfg(test)]
mod tests;
