//! `pier_xds_push_latency_seconds` and `pier_xds_ack_latency_seconds` on the server's registry, in both
//! modes: a publish is timed once per type it changed, on the response that delivers it (make-before-
//! break's wait included); the state a proxy gets when it connects and the answers to its own
//! subscription changes are not timed; every ACK and NACK ends its response's ACK latency.

use std::time::Duration;

use pier::xds::XdsType::{self, Cluster, Endpoint, Listener, Route};

use crate::xds_support::*;

/// How long the proxy sits on its cluster ACK: the routes' push latency and the clusters' ACK latency
/// must cover it.
const HOLD: Duration = Duration::from_millis(200);

fn pushes(ty: XdsType) -> String {
    format!("pier_xds_push_latency_seconds_count{{type=\"{ty}\"}}")
}

fn answers(ty: XdsType, result: &str) -> String {
    format!("pier_xds_ack_latency_seconds_count{{type=\"{ty}\",result=\"{result}\"}}")
}

/// Waits for `series` to read `want` (the stream observes an ACK after the proxy sent it).
async fn eventually(h: &Harness, series: &str, want: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got: u64 = h.sample(series);
        if got == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} is {got}, wanted {want}:\n{}",
            h.metrics_text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn push_and_ack_latency<P: AdsProxy>() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = P::connect(&h, GW).await;
    p.sync(&h, GW).await;
    for ty in [Cluster, Endpoint, Listener, Route] {
        assert_eq!(
            h.sample::<u64>(&pushes(ty)),
            0,
            "{ty}: published before the stream opened"
        );
        assert_eq!(h.sample::<u64>(&answers(ty, "ack")), 1, "{ty}: one response, one ACK");
    }

    // Cluster b added and the route repointed to it (as in make-before-break).
    h.publish(&simple(&["b"]));
    let both = sorted(vec![cluster("a"), cluster("b")]);
    p.next(Cluster).await;
    // Envoy warms b: the answer to its endpoint subscription is not a push of the publish.
    p.request_names(Endpoint, &both).await;
    p.next(Endpoint).await;
    p.ack_last(Endpoint).await;
    p.quiet().await;
    tokio::time::sleep(HOLD).await;
    p.ack_last(Cluster).await;
    p.next(Route).await; // held back until the cluster ACK
    p.ack_last(Route).await;
    // Old cluster a removed: a consequence of the same publish, not timed again. SotW sends no
    // endpoints for it (b's are held unchanged); delta removes a's.
    p.next(Cluster).await;
    p.ack_last(Cluster).await;
    if p.sotw().is_none() {
        p.next(Endpoint).await;
        p.ack_last(Endpoint).await;
    }
    p.quiet().await;

    let timed = [(Cluster, 1), (Endpoint, 0), (Listener, 0), (Route, 1)];
    for (ty, want) in timed {
        assert_eq!(h.sample::<u64>(&pushes(ty)), want, "{ty}:\n{}", h.metrics_text());
    }
    assert_eq!(
        h.server.metrics.pushes(Endpoint),
        P::either(2, 3),
        "endpoint responses (at connect, warming b, and in delta a's removal), none of them a timed push"
    );
    let route_push: f64 = h.sample("pier_xds_push_latency_seconds_sum{type=\"routes\"}");
    assert!(
        route_push >= HOLD.as_secs_f64(),
        "routes timed from the publish: {route_push}"
    );
    let cluster_ack: f64 = h.sample("pier_xds_ack_latency_seconds_sum{type=\"clusters\",result=\"ack\"}");
    assert!(cluster_ack >= HOLD.as_secs_f64(), "the held ACK: {cluster_ack}");
    assert_eq!(h.sample::<u64>(&answers(Cluster, "nack")), 0);

    // A rejected push: timed as a push, answered as a NACK.
    h.publish(&simple(&["c"]));
    p.next(Cluster).await;
    p.nack_last(Cluster, "service/default/c/80: invalid").await;
    eventually(&h, &answers(Cluster, "nack"), 1).await;
    assert_eq!(h.sample::<u64>(&pushes(Cluster)), 2);
    assert_eq!(
        h.sample::<u64>(&answers(Cluster, "ack")),
        3,
        "at connect, the held one, the removal"
    );
}

#[tokio::test]
async fn sotw_push_and_ack_latency() {
    push_and_ack_latency::<sotw::Proxy>().await;
}

#[tokio::test]
async fn delta_push_and_ack_latency() {
    push_and_ack_latency::<delta::Proxy>().await;
}
