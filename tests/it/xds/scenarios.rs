//! The scenarios both ADS flavours must pass, written once against [`AdsProxy`]: `xds::sotw` and
//! `xds::delta` run each as a test of their own (same name in both), adding what only their protocol
//! has. Where the two differ, the body says so: steps only SotW takes go through [`AdsProxy::sotw`],
//! expected values that differ by mode through [`AdsProxy::either`].

use pier::xds::XdsType::{Cluster, Endpoint, Listener, Route};

use crate::xds_support::*;

const INVALID: &str = "service/default/b/80: invalid";

/// The first requests get the full state, at the snapshot's version per type, with a fresh nonce per
/// response; the proxy is registered under its Gateway with every type ACKed; a repeated ACK is not a
/// request for anything. Returns the server and the proxy for mode-specific checks.
pub async fn first_request_gets_full_state<P: AdsProxy>() -> (Harness, P) {
    let h = Harness::start().await;
    h.publish(&simple(&["a", "b"]));
    let mut p = P::connect(&h, GW).await;
    p.sync(&h, GW).await;
    // Version per type is the snapshot's; nonces are unique across the stream.
    for ty in [Cluster, Endpoint, Listener, Route] {
        assert_eq!(p.last_version(ty), h.version(GW, ty), "{ty}");
    }
    let mut nonces = p.nonces();
    nonces.sort();
    nonces.dedup();
    assert_eq!(nonces.len(), 4);
    let client = &h.server.clients.list()[0];
    assert_eq!(client.gateway.as_deref(), Some(GW));
    for ty in [Cluster, Endpoint, Listener, Route] {
        assert_eq!(
            client.types[&ty].acked_version.as_deref(),
            Some(h.version(GW, ty).as_str())
        );
    }
    assert_eq!(h.server.metrics.connected_proxies(P::MODE), 1);
    // Re-ACKing (same nonce, same names) does not trigger a resend.
    p.ack_last(Cluster).await;
    p.quiet().await;
    (h, p)
}

/// A rejected version is neither resent nor followed by listeners or routes that could point at what
/// was rejected; the proxy's status keeps the last good version and the rejection (until an ACK clears
/// it); a newer snapshot replaces the rejected one.
pub async fn nack_keeps_last_good_and_is_not_resent<P: AdsProxy>() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = P::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let good = p.last_version(Cluster);
    let good_eds = p.last_version(Endpoint);

    h.publish(&simple(&["b"]));
    let bad = p.next(Cluster).await;
    // b arrives and a stays for now (SotW: the whole state; delta: what is new).
    assert_eq!(
        (bad.names.clone(), bad.removed.clone()),
        P::either(
            (sorted(vec![cluster("a"), cluster("b")]), vec![]),
            (vec![cluster("b")], vec![])
        )
    );
    if let Some(s) = p.sotw() {
        // SotW: a's endpoints did not change, so none came with the clusters; warming b, the proxy
        // asks for b's and gets only those.
        s.ack(Endpoint, &[cluster("a"), cluster("b")]).await;
        assert_eq!(s.recv_type(Endpoint).await.1, vec![cluster("b")]);
    }
    p.nack_last(Cluster, INVALID).await;
    if let Some(s) = p.sotw() {
        s.nack(Endpoint, &[cluster("a"), cluster("b")], &good_eds, "bad endpoints")
            .await;
    }
    // No resend of the rejected versions, and no listeners/routes that could point at rejected clusters.
    p.quiet().await;
    let status = h.server.clients.list()[0].types[&Cluster].clone();
    assert_eq!((status.nack_count, status.rejecting), (1, true));
    assert_eq!(status.acked_version.as_deref(), Some(good.as_str()));
    let nack = status.last_nack.unwrap();
    assert_eq!((nack.version, nack.message.as_str()), (bad.version.clone(), INVALID));
    assert_eq!(h.server.metrics.nacks(Cluster), 1);
    let cds_nack = (Cluster.type_url().to_string(), INVALID.to_string());
    assert_eq!(
        h.server.clients.nacks_for_gateway(GW),
        P::either(
            vec![
                cds_nack.clone(),
                (Endpoint.type_url().to_string(), "bad endpoints".to_string())
            ],
            vec![cds_nack]
        )
    );

    // A newer snapshot is pushed: clusters of the last good front plus the new ones (b never made it).
    h.publish(&simple(&["c"]));
    let newer = p.next(Cluster).await;
    assert_ne!(newer.version, bad.version);
    assert_eq!(
        (newer.names, newer.removed),
        P::either(
            (sorted(vec![cluster("a"), cluster("c")]), vec![]),
            (vec![cluster("c")], vec![cluster("b")])
        )
    );
    assert_eq!(p.holds(Cluster), sorted(vec![cluster("a"), cluster("c")]));
    if let Some(s) = p.sotw() {
        // SotW: nothing the proxy asked for changed (a's are as they were, b's are gone); warming c,
        // it asks for c's and gets only those.
        s.ack(Endpoint, &[cluster("a"), cluster("c")]).await;
        let (_, eds) = s.recv_type(Endpoint).await;
        assert_eq!(eds, vec![cluster("c")]);
    }
    p.ack_last(Cluster).await;
    let rds = p.next(Route).await;
    assert_eq!(route_targets(&rds.resources[0]), vec![cluster("c")]);
    assert!(
        h.server.clients.nacks_for_gateway(GW).is_empty(),
        "an ACK clears the rejection"
    );
}

/// Before the first publish nobody gets anything (an empty state would delete a proxy's config); a
/// Gateway pier does not serve, or a node that names no Gateway, gets nothing; once the Gateway exists its
/// proxy gets its own configuration only. The client registry lists each stream's Gateway.
pub async fn unknown_gateway_gets_nothing_then_only_its_own_config<P: AdsProxy>() {
    let h = Harness::start().await;
    let mut early = P::connect(&h, GW).await;
    early.subscribe_all(Cluster).await;
    early.quiet().await;
    h.publish(&simple(&["a"]));
    assert_eq!(early.next(Cluster).await.names, vec![cluster("a")]);

    let mut unknown = P::connect(&h, OTHER).await;
    unknown.subscribe_all(Cluster).await;
    unknown.subscribe_all(Listener).await;
    let mut malformed = P::connect(&h, "not-a-gateway").await;
    malformed.subscribe_all(Cluster).await;
    unknown.quiet().await;
    malformed.quiet().await;

    let both = [
        Gw {
            name: "gw",
            ports: &[8080],
            backends: &["a"],
        },
        Gw {
            name: "other",
            ports: &[9090],
            backends: &["c"],
        },
    ];
    h.publish(&translate(&model(&both, &[])));
    assert_eq!(unknown.next(Cluster).await.names, vec![cluster("c")]);
    malformed.quiet().await;
    let clients = h.server.clients.to_json();
    let gateways: Vec<_> = clients["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["gateway"].clone())
        .collect();
    assert_eq!(
        gateways,
        vec![serde_json::json!(GW), serde_json::json!(OTHER), serde_json::Value::Null]
    );
}

/// Two Gateways' proxies see only their own resources; publishing the same model again changes nothing
/// and pushes nothing; a change to one Gateway reaches only its proxy.
pub async fn two_gateways_are_isolated_and_identical_publishes_push_nothing<P: AdsProxy>() {
    let h = Harness::start().await;
    let v1 = [
        Gw {
            name: "gw",
            ports: &[8080],
            backends: &["a"],
        },
        Gw {
            name: "other",
            ports: &[9090],
            backends: &["b"],
        },
    ];
    h.publish(&translate(&model(&v1, &[])));
    let mut p1 = P::connect(&h, GW).await;
    let mut p2 = P::connect(&h, OTHER).await;
    p1.sync(&h, GW).await;
    p2.sync(&h, OTHER).await;
    assert_eq!(p1.holds(Listener), strings(&["default/gw/8080"]));
    assert_eq!(p2.holds(Listener), strings(&["default/other/9090"]));

    let report = h.publish(&translate(&model(&v1, &[])));
    assert!(!report.changed_anything());
    // Only the other Gateway changes: the first proxy hears nothing.
    let v2 = [
        Gw {
            name: "gw",
            ports: &[8080],
            backends: &["a"],
        },
        Gw {
            name: "other",
            ports: &[9090],
            backends: &["c"],
        },
    ];
    let report = h.publish(&translate(&model(&v2, &[])));
    assert_eq!(report.changed, vec![OTHER.to_string()]);
    let got = p2.next(Cluster).await;
    assert_eq!(
        (got.names, got.removed),
        P::either(
            (sorted(vec![cluster("b"), cluster("c")]), vec![]),
            (vec![cluster("c")], vec![])
        )
    );
    p1.quiet().await;
}

/// Make-before-break: when a route moves from cluster a to a new cluster b, b comes first; listeners and
/// routes only once the proxy ACKed the clusters (and warmed b's endpoints); a goes only once the proxy
/// ACKed the routes that no longer use it.
pub async fn make_before_break<P: AdsProxy>() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = P::connect(&h, GW).await;
    p.sync(&h, GW).await;

    // Add cluster b, repoint the route from a to b.
    h.publish(&simple(&["b"]));
    let both = sorted(vec![cluster("a"), cluster("b")]);
    let got = p.next(Cluster).await;
    assert_eq!(
        (got.names, got.removed),
        P::either((both.clone(), vec![]), (vec![cluster("b")], vec![])),
        "new clusters, and the dropped one is kept for now"
    );
    // No listeners or routes before the cluster ACK, and (SotW) no endpoints: a's did not change.
    p.quiet().await;
    // Envoy warms b: it asks for its endpoints, and gets b's only.
    p.request_names(Endpoint, &both).await;
    assert_eq!(p.next(Endpoint).await.names, vec![cluster("b")]);
    p.ack_last(Endpoint).await;
    p.quiet().await;
    p.ack_last(Cluster).await;
    let rds = p.next(Route).await;
    assert_eq!(route_targets(&rds.resources[0]), vec![cluster("b")]);
    p.quiet().await; // a is still there: the proxy has not applied the new routes yet
    p.ack_last(Route).await;
    let cds = p.next(Cluster).await;
    assert_eq!(
        (cds.names, cds.removed),
        P::either((vec![cluster("b")], vec![]), (vec![], vec![cluster("a")])),
        "the dropped cluster goes only after the routes are ACKed"
    );
    assert_eq!(cds.version, h.version(GW, Cluster));
    if p.sotw().is_none() {
        // Delta removes a's endpoints; SotW has nothing to send (b's are held unchanged, and an absent
        // load assignment is not a deletion there: the proxy drops it with its cluster).
        let eds = p.next(Endpoint).await;
        assert_eq!((eds.names, eds.removed), (vec![], vec![cluster("a")]));
    }
    p.quiet().await;
    assert_eq!(p.holds(Cluster), vec![cluster("b")]);
}

/// Stopping the server ends every stream cleanly and unregisters its proxies.
pub async fn shutdown_closes_streams<P: AdsProxy>() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = P::connect(&h, GW).await;
    p.subscribe_all(Cluster).await;
    p.next(Cluster).await;
    assert_eq!(h.server.clients.len(), 1);
    let clients = h.server.clients.clone();
    let metrics = h.server.metrics.clone();
    h.shutdown().await;
    let end = p.stream_end().await;
    assert!(matches!(end, Ok(None)), "clean end of stream, got {end:?}");
    assert!(clients.is_empty());
    assert_eq!(metrics.connected_proxies(P::MODE), 0);
}
