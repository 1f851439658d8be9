//! State-of-the-world ADS against the real tonic server over loopback, driven by envoy-types' client the
//! way Envoy 1.40 drives it (shared/notes/xds-protocol-and-rust.md §4.7): CDS first, EDS for the
//! clusters, the CDS ACK, then LDS and RDS.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::XdsType::{Cluster, Endpoint, Listener, Route, Secret};

use crate::xds_support::sotw::Proxy;
use crate::xds_support::*;

#[tokio::test]
async fn first_request_gets_full_state_then_ack_means_no_resend() {
    let h = Harness::start().await;
    h.publish(&simple(&["a", "b"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    // Version per type is the snapshot's; nonces are unique across the stream.
    let mut nonces: Vec<_> = p.last.values().map(|r| r.nonce.clone()).collect();
    for (ty, resp) in &p.last {
        assert_eq!(resp.version_info, h.version(GW, *ty), "{ty}");
    }
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
    assert_eq!(h.server.metrics.connected_proxies(pier::xds::Mode::Sotw), 1);
    // Re-ACKing (same nonce, same names) does not trigger a resend.
    p.ack(Cluster, &[]).await;
    p.quiet().await;
}

#[tokio::test]
async fn nack_keeps_last_good_and_is_not_resent() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let good = p.last[&Cluster].version_info.clone();
    let good_eds = p.last[&Endpoint].version_info.clone();

    h.publish(&simple(&["b"]));
    let (bad, _) = p.recv_type(Cluster).await;
    p.recv_type(Endpoint).await;
    p.nack(Cluster, &[], &good, "service/default/b/80: invalid").await;
    // Rejected endpoints, with a new name: the rejected version is not sent again, not even for that.
    p.nack(Endpoint, &[cluster("a"), cluster("b")], &good_eds, "bad endpoints")
        .await;
    // No resend of the rejected versions, and no listeners/routes that could point at rejected clusters.
    p.quiet().await;
    let client = &h.server.clients.list()[0];
    let status = &client.types[&Cluster];
    assert_eq!(status.nack_count, 1);
    assert_eq!(status.acked_version.as_deref(), Some(good.as_str()));
    assert_eq!(status.last_nack.as_ref().unwrap().version, bad.version_info);
    assert_eq!(h.server.metrics.nacks(Cluster), 1);
    assert_eq!(
        h.server.clients.nacks_for_gateway(GW),
        vec![
            (
                Cluster.type_url().to_string(),
                "service/default/b/80: invalid".to_string()
            ),
            (Endpoint.type_url().to_string(), "bad endpoints".to_string()),
        ]
    );

    // A newer snapshot is pushed: clusters of the last good front plus the new ones (b never made it).
    h.publish(&simple(&["c"]));
    let (newer, names) = p.recv_type(Cluster).await;
    assert_ne!(newer.version_info, bad.version_info);
    assert_eq!(names, sorted(vec![cluster("a"), cluster("c")]));
    p.recv_type(Endpoint).await;
    p.ack(Endpoint, &[cluster("a"), cluster("c")]).await;
    let (_, eds) = p.recv_type(Endpoint).await;
    assert_eq!(eds, sorted(vec![cluster("a"), cluster("c")]));
    p.ack(Cluster, &[]).await;
    let (rds, _) = p.recv_type(Route).await;
    assert_eq!(route_targets(&rds.resources[0]), vec![cluster("c")]);
    assert!(
        h.server.clients.nacks_for_gateway(GW).is_empty(),
        "an ACK clears the rejection"
    );
}

#[tokio::test]
async fn stale_nonces_are_ignored_and_versions_are_per_type() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let (old_cds, old_eds) = (p.last[&Cluster].clone(), p.last[&Endpoint].clone());

    h.publish(&simple(&["a", "b"]));
    let (cds, _) = p.recv_type(Cluster).await;
    p.recv_type(Endpoint).await;
    // Stale: a NACK and a subscription change carrying the previous nonces.
    p.send(DiscoveryRequest {
        type_url: Cluster.type_url().to_string(),
        response_nonce: old_cds.nonce.clone(),
        version_info: old_cds.version_info.clone(),
        error_detail: Some(RpcStatus {
            code: 3,
            message: "stale".into(),
            details: vec![],
        }),
        ..Default::default()
    })
    .await;
    p.request(
        Endpoint,
        &[cluster("a"), cluster("b")],
        &old_eds.version_info,
        &old_eds.nonce,
    )
    .await;
    p.quiet().await;
    assert_eq!(h.server.metrics.nacks(Cluster), 0);
    // The current nonces work; the EDS ACK with new names is answered, the CDS ACK releases the routes.
    p.ack(Endpoint, &[cluster("a"), cluster("b")]).await;
    let (_, eds) = p.recv_type(Endpoint).await;
    assert_eq!(eds, sorted(vec![cluster("a"), cluster("b")]));
    p.ack(Cluster, &[]).await;
    let (rds, _) = p.recv_type(Route).await;
    assert_ne!(rds.version_info, cds.version_info, "each type has its own version");
    assert_eq!(rds.version_info, h.version(GW, Route));
    assert_eq!(cds.version_info, h.version(GW, Cluster));
}

#[tokio::test]
async fn wildcard_legacy_wildcard_and_explicit_names() {
    let h = Harness::start().await;
    h.publish(&simple(&["a", "b"]));
    let all = sorted(vec![cluster("a"), cluster("b")]);
    // Legacy: empty names on a first request.
    let mut legacy = Proxy::connect(&h, GW).await;
    legacy.subscribe(Cluster, &[]).await;
    assert_eq!(legacy.recv_type(Cluster).await.1, all);
    // Explicit wildcard.
    let mut star = Proxy::connect(&h, GW).await;
    star.subscribe(Cluster, &strings(&["*"])).await;
    assert_eq!(star.recv_type(Cluster).await.1, all);
    // Explicit names, then an empty list: once named, empty means nothing (full state: delete all).
    let mut named = Proxy::connect(&h, GW).await;
    named.subscribe(Cluster, &[cluster("a")]).await;
    assert_eq!(named.recv_type(Cluster).await.1, vec![cluster("a")]);
    named.ack(Cluster, &[]).await;
    let (resp, names) = named.recv_type(Cluster).await;
    assert!(names.is_empty());
    assert_eq!(resp.version_info, h.version(GW, Cluster));
    // Wildcard plus a name.
    named.ack(Cluster, &strings(&["*", "service/default/a/80"])).await;
    assert_eq!(named.recv_type(Cluster).await.1, all);
}

#[tokio::test]
async fn names_requested_before_they_exist_are_sent_when_they_appear() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let eds_names = vec![cluster("a"), cluster("b")];
    p.ack(Endpoint, &eds_names).await;
    assert_eq!(p.recv_type(Endpoint).await.1, vec![cluster("a")]);
    p.ack(Endpoint, &eds_names).await;
    let routes = strings(&["default/gw/8080", "default/gw/9090"]);
    p.ack(Route, &routes).await;
    assert_eq!(p.recv_type(Route).await.1, strings(&["default/gw/8080"]));
    p.ack(Route, &routes).await;
    p.quiet().await;

    // b's endpoints and the 9090 routes appear.
    h.publish(&translate(&model(
        &[Gw {
            name: "gw",
            ports: &[8080, 9090],
            backends: &["a", "b"],
        }],
        &[],
    )));
    assert_eq!(p.recv_type(Cluster).await.1, eds_names);
    assert_eq!(p.recv_type(Endpoint).await.1, eds_names);
    p.ack(Endpoint, &eds_names).await;
    p.ack(Cluster, &[]).await;
    assert_eq!(p.recv_type(Listener).await.1.len(), 2);
    assert_eq!(p.recv_type(Route).await.1, routes);
}

#[tokio::test]
async fn unknown_gateway_gets_nothing_then_only_its_own_config() {
    let h = Harness::start().await;
    // Before the first publish nobody gets anything (an empty state would delete a proxy's config).
    let mut early = Proxy::connect(&h, GW).await;
    early.subscribe(Cluster, &[]).await;
    early.quiet().await;
    h.publish(&simple(&["a"]));
    assert_eq!(early.recv_type(Cluster).await.1, vec![cluster("a")]);

    let mut unknown = Proxy::connect(&h, OTHER).await;
    unknown.subscribe(Cluster, &[]).await;
    unknown.subscribe(Listener, &[]).await;
    let mut malformed = Proxy::connect(&h, "not-a-gateway").await;
    malformed.subscribe(Cluster, &[]).await;
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
    assert_eq!(unknown.recv_type(Cluster).await.1, vec![cluster("c")]);
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

#[tokio::test]
async fn two_gateways_are_isolated_and_identical_publishes_push_nothing() {
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
    let mut p1 = Proxy::connect(&h, GW).await;
    let mut p2 = Proxy::connect(&h, OTHER).await;
    p1.sync(&h, GW).await;
    p2.sync(&h, OTHER).await;
    assert_eq!(
        p1.last[&Listener]
            .resources
            .iter()
            .map(resource_name)
            .collect::<Vec<_>>(),
        strings(&["default/gw/8080"])
    );
    assert_eq!(
        p2.last[&Listener]
            .resources
            .iter()
            .map(resource_name)
            .collect::<Vec<_>>(),
        strings(&["default/other/9090"])
    );

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
    assert_eq!(p2.recv_type(Cluster).await.1, sorted(vec![cluster("b"), cluster("c")]));
    p1.quiet().await;
}

#[tokio::test]
async fn restart_serves_the_same_versions() {
    let input = simple(&["a", "b"]);
    let h = Harness::start().await;
    h.publish(&input);
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let before: BTreeMap<_, _> = p.last.iter().map(|(t, r)| (*t, r.version_info.clone())).collect();
    h.shutdown().await;
    assert!(
        tokio::time::timeout(WAIT, p.rx.message())
            .await
            .expect("stream ends")
            .expect("cleanly")
            .is_none()
    );

    // A new process: new cache, same input. The proxy reconnects with the versions it has.
    let h = Harness::start().await;
    h.publish(&input);
    let mut p = Proxy::connect(&h, GW).await;
    let clusters = h.names(GW, Cluster);
    // Clusters and listeners are full state: a proxy that holds the current version of all of them
    // gets no response (and so reloads nothing). Named types are answered, with the same versions.
    p.request(Cluster, &[], &before[&Cluster], "").await;
    p.request(Endpoint, &clusters, &before[&Endpoint], "").await;
    assert_eq!(p.recv_type(Endpoint).await.0.version_info, before[&Endpoint]);
    p.ack(Endpoint, &clusters).await;
    p.request(Listener, &[], &before[&Listener], "").await;
    let routes = h.names(GW, Route);
    p.request(Route, &routes, &before[&Route], "").await;
    assert_eq!(p.recv_type(Route).await.0.version_info, before[&Route]);
    p.ack(Route, &routes).await;
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(300), p.rx.message()).await;
    assert!(quiet.is_err(), "nothing more is sent: {quiet:?}");
    assert!(
        !p.last.contains_key(&Cluster) && !p.last.contains_key(&Listener),
        "full-state types were resent"
    );

    // The held versions count as acknowledged: the next change is pushed as usual.
    h.publish(&simple(&["a", "b", "c"]));
    let (resp, _) = p.recv_type(Cluster).await;
    assert_ne!(resp.version_info, before[&Cluster]);
}

#[tokio::test]
async fn make_before_break() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;

    // Add cluster b, repoint the route from a to b.
    h.publish(&simple(&["b"]));
    let both = sorted(vec![cluster("a"), cluster("b")]);
    assert_eq!(p.recv_type(Cluster).await.1, both, "new clusters plus the dropped one");
    p.recv_type(Endpoint).await;
    p.quiet().await; // no listeners or routes before the cluster ACK
    p.ack(Endpoint, &both).await;
    assert_eq!(p.recv_type(Endpoint).await.1, both);
    p.ack(Endpoint, &both).await;
    p.quiet().await;
    p.ack(Cluster, &[]).await;
    let (rds, _) = p.recv_type(Route).await;
    assert_eq!(route_targets(&rds.resources[0]), vec![cluster("b")]);
    p.quiet().await; // a is still there: the proxy has not applied the new routes yet
    p.ack(Route, &h.names(GW, Route)).await;
    let (cds, names) = p.recv_type(Cluster).await;
    assert_eq!(
        names,
        vec![cluster("b")],
        "the dropped cluster goes only after the routes are ACKed"
    );
    assert_eq!(cds.version_info, h.version(GW, Cluster));
    assert_eq!(p.recv_type(Endpoint).await.1, vec![cluster("b")]);
}

#[tokio::test]
async fn secrets_are_served_by_name() {
    let h = Harness::start().await;
    let input = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/gateway-https-listener/input.yaml"
    ))
    .unwrap();
    let gateways = translate(&input);
    h.publish(&gateways);
    let secrets = h.names("infra/edge", Secret);
    assert!(!secrets.is_empty());
    let mut p = Proxy::connect(&h, "infra/edge").await;
    p.subscribe(Secret, &secrets[..1]).await;
    assert_eq!(p.recv_type(Secret).await.1, secrets[..1].to_vec());
    p.ack(Secret, &secrets).await;
    assert_eq!(p.recv_type(Secret).await.1, secrets);
}

#[tokio::test]
async fn shutdown_closes_streams() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.subscribe(Cluster, &[]).await;
    p.recv_type(Cluster).await;
    assert_eq!(h.server.clients.len(), 1);
    let clients = h.server.clients.clone();
    let metrics = h.server.metrics.clone();
    h.shutdown().await;
    let end = tokio::time::timeout(WAIT, p.rx.message())
        .await
        .expect("stream ends in time");
    assert!(matches!(end, Ok(None)), "clean end of stream, got {end:?}");
    assert!(clients.is_empty());
    assert_eq!(metrics.connected_proxies(pier::xds::Mode::Sotw), 0);
}

#[tokio::test]
async fn dropped_clusters_wait_for_new_listeners_routes() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;

    // A second listener (with its own route configuration) appears; the route moves from a to b.
    h.publish(&translate(&model(
        &[Gw {
            name: "gw",
            ports: &[8080, 9090],
            backends: &["b"],
        }],
        &[],
    )));
    let both = sorted(vec![cluster("a"), cluster("b")]);
    assert_eq!(p.recv_type(Cluster).await.1, both);
    p.recv_type(Endpoint).await;
    p.ack(Endpoint, &both).await;
    p.recv_type(Endpoint).await;
    p.ack(Endpoint, &both).await;
    p.ack(Cluster, &[]).await;
    assert_eq!(
        p.recv_type(Listener).await.1,
        strings(&["default/gw/8080", "default/gw/9090"])
    );
    assert_eq!(p.recv_type(Route).await.1, strings(&["default/gw/8080"]));
    p.ack(Listener, &[]).await;
    p.ack(Route, &strings(&["default/gw/8080"])).await;
    // The new listener has not asked for its routes yet: a must stay.
    p.quiet().await;
    let routes = strings(&["default/gw/8080", "default/gw/9090"]);
    p.ack(Route, &routes).await;
    assert_eq!(p.recv_type(Route).await.1, routes);
    p.quiet().await;
    p.ack(Route, &routes).await;
    assert_eq!(p.recv_type(Cluster).await.1, vec![cluster("b")]);
}
