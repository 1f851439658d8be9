//! When a stream's clock readings become observations: a publish made while the stream was open is
//! timed once, on the response that delivers it; an (N)ACK ends its response's ACK latency.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::text::encode;

use super::*;
use crate::envoy::Resources;
use crate::envoy::pb::cluster::Cluster;
use crate::xds::cache::Snapshot;

const C: XdsType = XdsType::Cluster;

fn registered() -> (Registry, LatencyMetrics) {
    let mut registry = Registry::default();
    let metrics = LatencyMetrics::default();
    metrics.register(&mut registry);
    (registry, metrics)
}

/// `<series> <value>` from the exposition (a `u64` count, an `f64` sum), zero when absent.
fn sample<T: std::str::FromStr + Default>(registry: &Registry, series: &str) -> T {
    let mut text = String::new();
    encode(&mut text, registry).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_default()
}

fn pushes(registry: &Registry, ty: &str) -> u64 {
    sample(
        registry,
        &format!("pier_xds_push_latency_seconds_count{{type=\"{ty}\"}}"),
    )
}

fn answers(registry: &Registry, ty: &str, result: &str) -> u64 {
    sample(
        registry,
        &format!("pier_xds_ack_latency_seconds_count{{type=\"{ty}\",result=\"{result}\"}}"),
    )
}

/// A snapshot with one cluster `a` (its content set by `n`), published now after `prev`.
fn published(n: i64, prev: Option<&Snapshot>) -> Arc<Snapshot> {
    let res = Resources {
        clusters: vec![Cluster {
            name: "a".into(),
            connect_timeout: Some(envoy_types::pb::google::protobuf::Duration { seconds: n, nanos: 0 }),
            ..Default::default()
        }],
        ..Default::default()
    };
    Arc::new(Snapshot::build("ns/gw", &res).dated(Instant::now(), prev))
}

fn sync(ty: XdsType, state: TypeSync) -> ClientSync {
    ClientSync {
        generation: 1,
        promoted: true,
        types: BTreeMap::from([(ty, state)]),
    }
}

fn acked(ty: XdsType) -> Event {
    Event::Acked {
        ty,
        version: String::new(),
    }
}

#[test]
fn a_publish_is_timed_once_and_only_if_the_stream_was_open() {
    let (registry, metrics) = registered();
    let before = published(1, None);
    std::thread::sleep(Duration::from_millis(1));
    let mut timing = Timing::new();
    let mut plan = Plan::new();
    plan.set_latest(before.clone());
    timing.sent(&metrics, C, &plan);
    assert_eq!(pushes(&registry, "clusters"), 0, "published before the stream opened");

    let after = published(2, Some(&before));
    plan.set_latest(after);
    std::thread::sleep(Duration::from_millis(30));
    timing.sent(&metrics, C, &plan);
    assert_eq!(pushes(&registry, "clusters"), 1);
    let took: f64 = sample(&registry, "pier_xds_push_latency_seconds_sum{type=\"clusters\"}");
    assert!(took >= 0.03, "timed from the publish: {took}");
    // Sent again from the same publish (a subscription change): not timed again.
    timing.sent(&metrics, C, &plan);
    assert_eq!(pushes(&registry, "clusters"), 1);
}

#[test]
fn a_settled_publish_is_not_timed_by_a_later_response_but_a_pending_one_is() {
    let (registry, metrics) = registered();
    let mut timing = Timing::new();
    let mut plan = Plan::new();
    let first = published(1, None);
    plan.set_latest(first.clone());
    // The proxy holds it already: a later response (answering a subscription) is not its push.
    timing.settle(&sync(C, TypeSync::Applied), &plan);
    timing.sent(&metrics, C, &plan);
    assert_eq!(pushes(&registry, "clusters"), 0);

    // Held back by a response in flight: timed when it finally goes.
    plan.set_latest(published(2, Some(&first)));
    timing.settle(&sync(C, TypeSync::Pending), &plan);
    timing.sent(&metrics, C, &plan);
    assert_eq!(pushes(&registry, "clusters"), 1);
}

#[test]
fn acks_and_nacks_end_their_response_once() {
    let (registry, metrics) = registered();
    let mut timing = Timing::new();
    let plan = Plan::new();
    // An ACK with no response sent (a reconnecting proxy that holds the version): nothing to time.
    timing.answered(&metrics, &[acked(C)]);
    assert_eq!(answers(&registry, "clusters", "ack"), 0);

    timing.sent(&metrics, C, &plan);
    std::thread::sleep(Duration::from_millis(20));
    timing.answered(&metrics, &[acked(C)]);
    timing.answered(&metrics, &[acked(C)]);
    assert_eq!(answers(&registry, "clusters", "ack"), 1);
    let took: f64 = sample(
        &registry,
        "pier_xds_ack_latency_seconds_sum{type=\"clusters\",result=\"ack\"}",
    );
    assert!(took >= 0.02, "{took}");

    timing.sent(&metrics, XdsType::Route, &plan);
    let nack = Event::Nacked {
        ty: XdsType::Route,
        version: String::new(),
        message: "no".into(),
    };
    timing.answered(&metrics, &[Event::Plan(crate::xds::plan::Step::Promoted), nack]);
    assert_eq!(answers(&registry, "routes", "nack"), 1);
    assert_eq!(answers(&registry, "routes", "ack"), 0);
    assert_eq!(pushes(&registry, "routes"), 0, "no snapshot: no push latency");
}
