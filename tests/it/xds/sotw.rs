//! State-of-the-world ADS against the real tonic server over loopback, driven by envoy-types' client the
//! way Envoy 1.40 drives it (`docs/serving.md`, P6): CDS first, EDS for the
//! clusters, the CDS ACK, then LDS and RDS. The scenarios delta shares are in [`super::scenarios`].

use std::collections::BTreeMap;

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::XdsType::{Cluster, Endpoint, Listener, Route, Secret};

use super::scenarios;
use crate::xds_support::sotw::Proxy;
use crate::xds_support::*;

#[tokio::test]
async fn first_request_gets_full_state() {
    scenarios::first_request_gets_full_state::<Proxy>().await;
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
async fn stale_nonces_are_ignored_and_versions_are_per_type() {
    let h = Harness::start().await;
    h.publish(&simple(&["a"]));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let (old_cds, old_eds) = (p.last[&Cluster].clone(), p.last[&Endpoint].clone());

    h.publish(&simple(&["a", "b"]));
    let (cds, _) = p.recv_type(Cluster).await;
    // Warming b, the proxy asks for its endpoints: they come under a new nonce.
    p.ack(Endpoint, &[cluster("a"), cluster("b")]).await;
    assert_eq!(p.recv_type(Endpoint).await.1, vec![cluster("b")]);
    // Stale: NACKs carrying the previous nonces, and a hint repeating the subscription.
    let eds_names = vec![cluster("a"), cluster("b")];
    let star = strings(&["*"]);
    for (ty, old, names) in [(Cluster, &old_cds, star), (Endpoint, &old_eds, eds_names)] {
        // Each repeats the names asked for, as Envoy does (a stale `*` changes no wildcard, and owes
        // no response).
        p.send(DiscoveryRequest {
            type_url: ty.type_url().to_string(),
            resource_names: names,
            response_nonce: old.nonce.clone(),
            version_info: old.version_info.clone(),
            error_detail: Some(RpcStatus {
                code: 3,
                message: "stale".into(),
                details: vec![],
            }),
            ..Default::default()
        })
        .await;
    }
    p.request(
        Endpoint,
        &[cluster("a"), cluster("b")],
        &old_eds.version_info,
        &old_eds.nonce,
    )
    .await;
    p.quiet().await;
    assert_eq!(h.server.metrics.nacks(Cluster), 0);
    assert_eq!(h.server.metrics.nacks(Endpoint), 0);
    // The current nonces work: the EDS ACK (nothing is owed), then the CDS ACK releases the routes.
    p.ack(Endpoint, &[cluster("a"), cluster("b")]).await;
    p.quiet().await;
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
    // Asking for more names than exist sends nothing the proxy does not already hold, and holds the
    // type as acknowledged at its version.
    let eds_names = vec![cluster("a"), cluster("b")];
    p.ack(Endpoint, &eds_names).await;
    let routes = strings(&["default/gw/8080", "default/gw/9090"]);
    p.ack(Route, &routes).await;
    p.quiet().await;
    let status = h.server.clients.list()[0].types.clone();
    for ty in [Endpoint, Route] {
        assert_eq!(status[&ty].acked_version.as_deref(), Some(h.version(GW, ty).as_str()));
    }

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
    // Only b's endpoints: a's are held as they are.
    assert_eq!(p.recv_type(Endpoint).await.1, vec![cluster("b")]);
    p.ack(Endpoint, &eds_names).await;
    p.ack(Cluster, &[]).await;
    assert_eq!(p.recv_type(Listener).await.1.len(), 2);
    assert_eq!(p.recv_type(Route).await.1, routes);
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
    // Asking for all of them sends those the proxy does not hold yet.
    p.ack(Secret, &secrets).await;
    assert_eq!(p.recv_type(Secret).await.1, secrets[1..].to_vec());
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
    p.ack(Endpoint, &both).await;
    assert_eq!(p.recv_type(Endpoint).await.1, vec![cluster("b")]);
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
    assert_eq!(p.recv_type(Route).await.1, strings(&["default/gw/9090"]));
    p.quiet().await;
    p.ack(Route, &routes).await;
    assert_eq!(p.recv_type(Cluster).await.1, vec![cluster("b")]);
}

#[tokio::test]
async fn a_subscription_changed_while_a_response_is_in_flight_gets_everything_it_asks_for() {
    let h = Harness::start().await;
    let gw = [Gw {
        name: "gw",
        ports: &[8080],
        backends: &["a", "b"],
    }];
    h.publish(&translate(&model(&gw, &[])));
    let mut p = Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let old = p.last[&Endpoint].clone();
    let both = [cluster("a"), cluster("b")];

    // b's endpoint moves: only b's load assignment is sent.
    h.publish(&translate(&model(&gw, &[("b", "10.0.0.9")])));
    assert_eq!(p.recv_type(Endpoint).await.1, vec![cluster("b")]);
    // Before it arrived the proxy dropped a and asked for it again (requests carrying the older nonce,
    // which pier ignores): it may no longer hold a, so the ACK is answered with everything.
    p.request(Endpoint, &[cluster("b")], &old.version_info, &old.nonce)
        .await;
    p.request(Endpoint, &both, &old.version_info, &old.nonce).await;
    p.quiet().await;
    p.ack(Endpoint, &both).await;
    assert_eq!(p.recv_type(Endpoint).await.1, both.to_vec());
    p.ack(Endpoint, &both).await;
    p.quiet().await;
}
