//! The bounds on what an xDS client controls (`pier::xds::transport::XdsLimits`), each met by a client
//! that exceeds it: refused with a status (streams) or closed (connections), and counted by reason.

use std::time::{Duration, Instant};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use pier::xds::XdsType::Cluster;
use pier::xds::transport::{Refused, XdsLimits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_stream::wrappers::ReceiverStream;

use crate::xds_support::tls::Pki;
use crate::xds_support::{GW, Harness, WAIT, node, simple};

fn tight() -> XdsLimits {
    XdsLimits {
        max_node_bytes: 1024,
        max_resource_names: 10,
        max_connections_per_peer: 3,
        handshake_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(500),
        ..XdsLimits::default()
    }
}

/// Sends one SotW request and returns the status the stream ends with.
async fn status_of(h: &Harness, request: DiscoveryRequest) -> tonic::Status {
    let mut client = h.channel().await;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(request).await.unwrap();
    let mut stream = client
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .expect("stream opens")
        .into_inner();
    match tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("the stream ends in time")
    {
        Err(status) => status,
        Ok(got) => panic!("expected an error status, got {got:?}"),
    }
}

#[tokio::test]
async fn a_large_node_and_too_many_names_end_the_stream() {
    let h = Harness::start_with(None, tight()).await;
    h.publish(&simple(&["a"]));
    let big = Node {
        id: "x".repeat(4096),
        ..node(GW)
    };
    let status = status_of(
        &h,
        DiscoveryRequest {
            node: Some(big),
            type_url: Cluster.type_url().into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("--xds-max-node-bytes"),
        "{}",
        status.message()
    );
    // The floor (10) is raised to what the published configuration lets a proxy name: one past that.
    let max = h.server.bounds.resource_names();
    assert!(max > 10, "{max}");
    let names = (0..=max).map(|i| format!("c{i}")).collect();
    let request = DiscoveryRequest {
        node: Some(node(GW)),
        type_url: Cluster.type_url().into(),
        resource_names: names,
        ..Default::default()
    };
    let status = status_of(&h, request).await;
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    let metrics = &h.server.metrics;
    assert_eq!(
        (
            metrics.refusals(Refused::NodeTooLarge),
            metrics.refusals(Refused::TooManyNames)
        ),
        (1, 1)
    );
    h.shutdown().await;
}

/// Reads until the peer closes; how long that took.
async fn closed_within(conn: &mut TcpStream, limit: Duration) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(limit, conn.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the connection is still open after {limit:?}"),
        }
    }
}

#[tokio::test]
async fn silent_and_idle_connections_are_closed() {
    let pki = Pki::new(&[GW]);
    for tls in [None, Some(pki.server())] {
        let h = Harness::start_with(tls.clone(), tight()).await;
        // Silent from the start: no TLS ClientHello (or, in plaintext, no byte at all).
        let mut silent = TcpStream::connect(h.addr).await.unwrap();
        closed_within(&mut silent, WAIT).await;
        assert_eq!(h.server.metrics.refusals(Refused::HandshakeTimeout), 1);
        h.shutdown().await;
    }
    // Plaintext: the HTTP/2 preface, then no stream.
    let h = Harness::start_with(None, tight()).await;
    let mut idle = TcpStream::connect(h.addr).await.unwrap();
    idle.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    closed_within(&mut idle, WAIT).await;
    assert_eq!(h.server.metrics.refusals(Refused::IdleTimeout), 1);
    h.shutdown().await;
}

/// In plaintext nothing authenticates: established connections hold their address's slots for good.
#[tokio::test]
async fn connections_per_peer_are_bounded() {
    let h = Harness::start_with(
        None,
        XdsLimits {
            handshake_timeout: WAIT,
            idle_timeout: WAIT,
            ..tight()
        },
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = TcpStream::connect(h.addr).await.unwrap();
        // The client preface; the server's SETTINGS in reply says the connection is established.
        c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .unwrap();
        let mut settings = [0u8; 9];
        tokio::time::timeout(WAIT, c.read_exact(&mut settings))
            .await
            .expect("the server answers the preface")
            .unwrap();
        held.push(c);
    }
    let mut fourth = TcpStream::connect(h.addr).await.unwrap();
    closed_within(&mut fourth, WAIT).await;
    assert_eq!(h.server.metrics.refusals(Refused::PeerConnections), 1);
    drop(held);
    // The slots come back once those connections are gone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut client = h.channel().await;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(DiscoveryRequest {
        node: Some(node(GW)),
        type_url: Cluster.type_url().into(),
        ..Default::default()
    })
    .await
    .unwrap();
    h.publish(&simple(&["a"]));
    let mut stream = client
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let first = tokio::time::timeout(WAIT, stream.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!first.resources.is_empty());
    h.shutdown().await;
}

/// A connection with one open stream: the client, its request sender and the responses.
type Served = (
    AggregatedDiscoveryServiceClient<tonic::transport::Channel>,
    tokio::sync::mpsc::Sender<DiscoveryRequest>,
    tonic::Streaming<DiscoveryResponse>,
);

/// Opens a stream over its own connection and waits for the first response; returns what holds the
/// stream open.
async fn served(h: &Harness) -> Served {
    let mut client = h.channel().await;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(DiscoveryRequest {
        node: Some(node(GW)),
        type_url: Cluster.type_url().into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut stream = client
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .expect("stream opens")
        .into_inner();
    let first = tokio::time::timeout(WAIT, stream.message()).await;
    assert!(
        matches!(first, Ok(Ok(Some(_)))),
        "an authenticated proxy is served: {first:?}"
    );
    (client, tx, stream)
}

/// Behind SNAT a whole fleet shares one address: proxies that authenticated do not count against it.
/// Connections that have not proved who they are do, per address and in total, and a newcomer over a cap
/// closes the oldest handshake in flight, so a flood of silent connections never locks a proxy out.
#[tokio::test]
async fn authenticated_proxies_share_an_address_and_silent_floods_cannot_lock_them_out() {
    let pki = Pki::new(&[GW]);
    let mut h = Harness::start_with(Some(pki.server()), limits_with_wait()).await;
    h.client_tls = Some(pki.client(Some(GW)));
    h.publish(&simple(&["a"]));
    // Twice the per-peer cap, all from 127.0.0.1, all served at once.
    let mut fleet = Vec::new();
    for _ in 0..6 {
        fleet.push(served(&h).await);
    }
    assert_eq!(h.server.metrics.refusals(Refused::PeerConnections), 0);
    // A flood of silent connections (no ClientHello) from the same address: each one over the cap of
    // three closes the oldest, so only the newest three stay.
    let mut silent = Vec::new();
    for _ in 0..20 {
        silent.push(TcpStream::connect(h.addr).await.unwrap());
    }
    for conn in &mut silent[..17] {
        closed_within(conn, WAIT).await;
    }
    assert_eq!(h.server.metrics.refusals(Refused::PeerConnections), 17);
    // A proxy from that address still gets in, closing one more silent connection.
    fleet.push(served(&h).await);
    closed_within(&mut silent[17], WAIT).await;
    // The fleet was never touched.
    for (_, _, stream) in &mut fleet {
        let more = tokio::time::timeout(Duration::from_millis(100), stream.message()).await;
        assert!(more.is_err(), "an authenticated stream stays open and quiet: {more:?}");
    }
    drop(silent);
    h.shutdown().await;

    // Handshakes in flight are capped in total, whatever the address: the oldest is closed.
    let h = Harness::start_with(
        Some(pki.server()),
        XdsLimits {
            max_pending_connections: 2,
            max_connections_per_peer: 100,
            ..limits_with_wait()
        },
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(h.addr).await.unwrap());
    }
    closed_within(&mut held[0], WAIT).await;
    assert_eq!(h.server.metrics.refusals(Refused::PendingConnections), 1);
    let text = h.metrics_text();
    assert!(
        text.contains("pier_xds_refused_total{reason=\"pending-connections\"} 1"),
        "{text}"
    );
    drop(held);
    h.shutdown().await;
}

fn limits_with_wait() -> XdsLimits {
    XdsLimits {
        handshake_timeout: WAIT,
        ..tight()
    }
}
