//! Delta (incremental) ADS against the real tonic server over loopback, driven by envoy-types' client. The
//! scenarios SotW shares are in [`super::scenarios`].

use pier::xds::XdsType::{self, Cluster, Endpoint, Listener, Route};

use super::scenarios;
use crate::xds_support::delta::{Proxy, Versions};
use crate::xds_support::*;

/// ...and every resource carries its content version (the snapshot entry's), next to the type's version.
#[tokio::test]
async fn first_request_gets_full_state() {
    let (h, p) = scenarios::first_request_gets_full_state::<Proxy>().await;
    let snapshot = h.cache().get(GW).unwrap();
    for ty in [Cluster, Endpoint, Listener, Route] {
        let view = snapshot.view(ty);
        let expected: Versions = view
            .entries
            .iter()
            .map(|(n, e)| (n.clone(), e.version.clone()))
            .collect();
        assert_eq!(p.held[&ty], expected, "{ty}");
        assert_eq!(p.last[&ty].system_version_info, view.version);
    }
}

#[tokio::test]
async fn nack_keeps_last_good_and_is_not_resent() {
    scenarios::nack_keeps_last_good_and_is_not_resent::<Proxy>().await;
}

#[tokio::test]
async fn unknown_gateway_gets_nothing_then_only_its_own_config() {
    scenarios::unknown_gateway_gets_nothing_then_only_its_own_config::<Proxy>().await;
}

#[tokio::test]
async fn two_gateways_are_isolated_and_identical_publishes_push_nothing() {
    scenarios::two_gateways_are_isolated_and_identical_publishes_push_nothing::<Proxy>().await;
}

#[tokio::test]
async fn make_before_break() {
    scenarios::make_before_break::<Proxy>().await;
}

#[tokio::test]
async fn shutdown_closes_streams() {
    scenarios::shutdown_closes_streams::<Proxy>().await;
}

#[tokio::test]
async fn endpoint_only_change_is_one_cluster_load_assignment() {
    let h = Harness::start().await;
    h.publish(&simple(&["a", "b"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let pushes_before: Vec<u64> = XdsType::ALL.iter().map(|t| h.server.metrics.pushes(*t)).collect();

    let moved = translate(&model(
        &[Gw {
            name: "gw",
            ports: &[8080],
            backends: &["a", "b"],
        }],
        &[("a", "10.9.9.9")],
    ));
    h.publish(&moved);
    let got = p.recv_type(Endpoint).await;
    assert_eq!(got.names, vec![cluster("a")]);
    assert!(got.removed.is_empty());
    assert_eq!(got.resp.resources.len(), 1);
    p.ack(Endpoint).await;
    p.quiet().await;
    let pushes_after: Vec<u64> = XdsType::ALL.iter().map(|t| h.server.metrics.pushes(*t)).collect();
    let deltas: Vec<u64> = pushes_after.iter().zip(&pushes_before).map(|(a, b)| a - b).collect();
    assert_eq!(deltas.iter().sum::<u64>(), 1, "exactly one response: {deltas:?}");
    assert_eq!(deltas[Endpoint.index()], 1);
}

#[tokio::test]
async fn subscribe_unsubscribe_and_removed_resources() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;

    // A name that does not exist is answered as removed, at once.
    p.subscribe(Endpoint, &[cluster("b")]).await;
    let got = p.recv_type(Endpoint).await;
    assert!(got.names.is_empty());
    assert_eq!(got.removed, vec![cluster("b")]);
    p.ack(Endpoint).await;
    // A pure unsubscribe needs no answer.
    p.unsubscribe(Endpoint, &[cluster("a")]).await;
    p.quiet().await;
    // Re-subscribing is always answered, even with an unchanged version.
    p.subscribe(Endpoint, &[cluster("a")]).await;
    assert_eq!(p.recv_type(Endpoint).await.names, vec![cluster("a")]);
    p.ack(Endpoint).await;
    p.subscribe(Endpoint, &[cluster("a")]).await;
    assert_eq!(p.recv_type(Endpoint).await.names, vec![cluster("a")]);
    p.ack(Endpoint).await;
    p.quiet().await;

    // b appears: its cluster and then its endpoints (subscribed earlier) are sent.
    h.publish(&simple(&["a", "b"]));
    assert_eq!(p.recv_type(Cluster).await.names, vec![cluster("b")]);
    let got = p.recv_type(Endpoint).await;
    assert_eq!(got.names, vec![cluster("b")]);
    assert!(got.removed.is_empty());
}

#[tokio::test]
async fn wildcard_legacy_and_explicit() {
    let h = Harness::start().await;
    h.publish(&simple(&["a", "b"]));
    let all = sorted(vec![cluster("a"), cluster("b")]);

    let mut legacy = Proxy::connect(&h, GW).await;
    legacy.first(Cluster, &[], &Versions::new()).await;
    assert_eq!(legacy.recv_type(Cluster).await.names, all);
    legacy.ack(Cluster).await;
    // Naming a resource ends the legacy wildcard; the name is answered.
    legacy.subscribe(Cluster, &[cluster("a")]).await;
    assert_eq!(legacy.recv_type(Cluster).await.names, vec![cluster("a")]);
    legacy.ack(Cluster).await;

    let mut star = Proxy::connect(&h, GW).await;
    let zzz = cluster("zzz");
    star.first(
        Cluster,
        &strings(&["*", "service/default/a/80", &zzz]),
        &Versions::new(),
    )
    .await;
    let got = star.recv_type(Cluster).await;
    assert_eq!((got.names, got.removed), (all.clone(), vec![zzz.clone()]));
    star.ack(Cluster).await;
    // Wildcard + explicit names, unsubscribe them: the wildcard still covers them, so each is sent
    // again, as a resource or as removed.
    star.unsubscribe(Cluster, &[cluster("a"), zzz.clone()]).await;
    let got = star.recv_type(Cluster).await;
    assert_eq!((got.names, got.removed), (vec![cluster("a")], vec![zzz]));
    star.ack(Cluster).await;

    // A new cluster: the wildcard proxy gets it, the one that left the legacy wildcard does not.
    h.publish(&simple(&["a", "b", "c"]));
    assert_eq!(star.recv_type(Cluster).await.names, vec![cluster("c")]);
    star.ack(Cluster).await;
    legacy.quiet().await;
    // Unsubscribing the wildcard: nothing to send, and a later name is answered alone.
    star.unsubscribe(Cluster, &strings(&["*"])).await;
    star.quiet().await;
    star.subscribe(Cluster, &[cluster("b")]).await;
    assert_eq!(star.recv_type(Cluster).await.names, vec![cluster("b")]);
}

#[tokio::test]
async fn reconnect_with_initial_resource_versions() {
    let input = simple(&["a", "b"]);
    let h = Harness::start().await;
    h.publish(&input);
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let held = p.held.clone();
    h.shutdown().await;
    assert!(
        tokio::time::timeout(WAIT, p.rx.message())
            .await
            .expect("stream ends")
            .expect("cleanly")
            .is_none()
    );

    // New process, same input: the proxy reports what it holds and gets nothing at all.
    let h = Harness::start().await;
    h.publish(&input);
    let mut p = Proxy::connect(&h, GW).await;
    let clusters = h.names(GW, Cluster);
    let routes = h.names(GW, Route);
    p.first(Cluster, &[], &held[&Cluster]).await;
    p.first(Endpoint, &clusters, &held[&Endpoint]).await;
    p.first(Listener, &[], &held[&Listener]).await;
    p.first(Route, &routes, &held[&Route]).await;
    p.quiet().await;
    assert!(XdsType::ALL.iter().all(|t| h.server.metrics.pushes(*t) == 0));

    // Another proxy holds a stale CLA and a cluster pier no longer has: the CLA is sent at once; the
    // cluster is removed only once its listeners and routes are known to be the current ones.
    let mut q = Proxy::connect(&h, GW).await;
    let mut stale_clusters = held[&Cluster].clone();
    stale_clusters.insert("service/default/gone/80".into(), "0000000000000000".into());
    let mut stale_endpoints = held[&Endpoint].clone();
    stale_endpoints.insert(cluster("a"), "0000000000000000".into());
    q.first(Cluster, &[], &stale_clusters).await;
    q.first(Endpoint, &clusters, &stale_endpoints).await;
    let got = q.recv_type(Endpoint).await;
    assert_eq!((got.names, got.removed), (vec![cluster("a")], vec![]));
    q.ack(Endpoint).await;
    q.first(Listener, &[], &held[&Listener]).await;
    q.quiet().await;
    q.first(Route, &routes, &held[&Route]).await;
    let got = q.recv_type(Cluster).await;
    assert_eq!(
        (got.names, got.removed),
        (vec![], strings(&["service/default/gone/80"]))
    );
}
