//! The ADS bounds at the size a real fleet reaches, with synthetic proxies: 100,000 EDS clusters whose
//! names are 253 bytes long (the longest Kubernetes object name), so that the requests a real Envoy
//! sends are tens of MiB. A state-of-the-world EDS request names every cluster; a delta request after
//! a reconnect carries a version for every resource the proxy holds and subscribes to each again. Each
//! is answered, not refused; a request that is larger than anything the configuration explains is
//! refused, logged and counted, and the proxy is listed as failing. The same with a real Envoy at
//! 50,000 clusters is a benchmark (`cargo bench --bench scale -- limits 50000 253`): too slow for CI.

use std::collections::BTreeMap;
use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::core::v3::{AggregatedConfigSource, ConfigSource, config_source};
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use pier::envoy::Resources;
use pier::xds::XdsType;
use pier::xds::transport::Refused;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use crate::xds_support::{GW, Harness, node};

/// Clusters in the configuration.
const N: usize = 100_000;
/// The length of each cluster's name.
const NAME_LEN: usize = 253;
/// Generous: a debug build moves tens of MiB each way.
const SLOW: Duration = Duration::from_secs(120);

fn name(i: usize) -> String {
    let prefix = format!("eg-backend/apps/b-{i:06}-");
    format!("{prefix}{}", "x".repeat(NAME_LEN - prefix.len()))
}

/// N EDS clusters, each with a one-endpoint load assignment.
fn fleet() -> BTreeMap<String, Resources> {
    let ads = ConfigSource {
        config_source_specifier: Some(config_source::ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
        resource_api_version: 2,
        ..Default::default()
    };
    let clusters = (0..N)
        .map(|i| Cluster {
            name: name(i),
            cluster_discovery_type: Some(cluster::ClusterDiscoveryType::Type(cluster::DiscoveryType::Eds as i32)),
            eds_cluster_config: Some(cluster::EdsClusterConfig {
                eds_config: Some(ads.clone()),
                service_name: String::new(),
            }),
            ..Default::default()
        })
        .collect();
    let endpoints = (0..N)
        .map(|i| ClusterLoadAssignment {
            cluster_name: name(i),
            ..Default::default()
        })
        .collect();
    let res = Resources {
        clusters,
        endpoints,
        ..Default::default()
    };
    BTreeMap::from([(GW.to_string(), res)])
}

/// A client with no limit on what it receives (tonic's default is 4 MiB; Envoy has none).
async fn client(
    h: &Harness,
) -> envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient<
    tonic::transport::Channel,
>{
    h.channel()
        .await
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX)
}

async fn next<T>(stream: &mut Streaming<T>) -> T {
    tokio::time::timeout(SLOW, stream.message())
        .await
        .expect("an answer in time")
        .expect("the stream stays up")
        .expect("an answer, not the end")
}

#[tokio::test]
async fn a_fleet_of_100k_long_named_clusters_is_served_in_both_modes() {
    let h = Harness::start().await;
    h.publish(&fleet());
    let bounds = &h.server.bounds;
    let names: Vec<String> = (0..N).map(name).collect();
    let sotw_eds: usize = names.iter().map(|n| n.len() + 3).sum();
    assert!(sotw_eds > 25_000_000, "the SotW EDS request is {sotw_eds} bytes");
    assert!(bounds.request_bytes() > 2 * sotw_eds, "{}", bounds.request_bytes());
    assert!(bounds.resource_names() >= 4 * N, "{}", bounds.resource_names());

    // State of the world: CDS by wildcard, then EDS naming every cluster, in one request.
    let mut c = client(&h).await;
    let (tx, rx) = mpsc::channel(4);
    let mut sotw = c
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(DiscoveryRequest {
        node: Some(node(GW)),
        type_url: XdsType::Cluster.type_url().into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let cds: DiscoveryResponse = next(&mut sotw).await;
    assert_eq!(cds.resources.len(), N);
    tx.send(DiscoveryRequest {
        type_url: XdsType::Endpoint.type_url().into(),
        resource_names: names.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    let eds: DiscoveryResponse = next(&mut sotw).await;
    assert_eq!(eds.resources.len(), N, "every load assignment named");

    // Delta, as a proxy reconnecting to a restarted pier: a version for every cluster it holds, and
    // every load assignment subscribed again with its version.
    let versions = |ty: XdsType| -> std::collections::HashMap<String, String> {
        let snapshot = h.cache().get(GW).unwrap();
        snapshot
            .view(ty)
            .entries
            .iter()
            .map(|(n, e)| (n.clone(), e.version.clone()))
            .collect()
    };
    let (dtx, drx) = mpsc::channel(4);
    let mut delta = c
        .delta_aggregated_resources(ReceiverStream::new(drx))
        .await
        .unwrap()
        .into_inner();
    dtx.send(DeltaDiscoveryRequest {
        node: Some(node(GW)),
        type_url: XdsType::Cluster.type_url().into(),
        initial_resource_versions: versions(XdsType::Cluster),
        ..Default::default()
    })
    .await
    .unwrap();
    dtx.send(DeltaDiscoveryRequest {
        type_url: XdsType::Endpoint.type_url().into(),
        resource_names_subscribe: names.clone(),
        initial_resource_versions: versions(XdsType::Endpoint),
        ..Default::default()
    })
    .await
    .unwrap();
    // Nothing differs, so nothing is sent; the stream is up and registered with every type applied.
    let quiet = tokio::time::timeout(Duration::from_secs(2), delta.message()).await;
    assert!(
        quiet.is_err(),
        "a proxy that holds everything is sent nothing: {quiet:?}"
    );
    assert_eq!(h.server.metrics.refusals(Refused::RequestTooLarge), 0);
    assert_eq!(h.server.metrics.refusals(Refused::TooManyNames), 0);
    assert_eq!(h.sample::<u64>("pier_xds_stream_failures_total"), 0);
    assert_eq!(h.server.clients.len(), 2);
    drop((tx, dtx, sotw, delta));
    h.shutdown().await;
}

#[tokio::test]
async fn a_request_larger_than_the_configuration_explains_is_refused_and_shown() {
    let h = Harness::start_with(
        None,
        pier::xds::transport::XdsLimits {
            max_request_bytes: 1 << 20,
            ..Default::default()
        },
    )
    .await;
    h.publish(&crate::xds_support::simple(&["a"]));
    let limit = h.server.bounds.request_bytes();
    assert_eq!(limit, 1 << 20, "a small configuration leaves the floor");
    let mut c = client(&h).await;
    let (tx, rx) = mpsc::channel(1);
    let mut stream = c
        .delta_aggregated_resources(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    // Two million bytes of names the configuration has never heard of.
    let junk: Vec<String> = (0..8_000).map(|i| format!("{i}-{}", "y".repeat(250))).collect();
    tx.send(DeltaDiscoveryRequest {
        node: Some(node(GW)),
        type_url: XdsType::Endpoint.type_url().into(),
        resource_names_subscribe: junk,
        ..Default::default()
    })
    .await
    .unwrap();
    let status = tokio::time::timeout(SLOW, stream.message())
        .await
        .expect("an answer in time")
        .map(|m: Option<DeltaDiscoveryResponse>| m.map(|r| r.nonce))
        .expect_err("the stream ends with a status");
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(
        status
            .message()
            .contains(&format!("over the {limit}-byte limit (--xds-max-request-bytes)")),
        "{}",
        status.message()
    );
    assert_eq!(h.server.metrics.refusals(Refused::RequestTooLarge), 1);
    assert_eq!(h.sample::<u64>("pier_xds_stream_failures_total"), 1);
    let doc = h.server.clients.to_json();
    let failing = &doc["failing"][0];
    assert_eq!(failing["failures"], 1, "{doc}");
    assert!(
        failing["last_error"]
            .as_str()
            .unwrap()
            .contains("--xds-max-request-bytes"),
        "{doc}"
    );
    assert_eq!(
        failing["node"],
        serde_json::Value::Null,
        "refused before its node was read"
    );
    h.shutdown().await;
}

/// A restarted pier is when every proxy reconnects naming all it holds, before anything is published:
/// such a request waits for the first publish to size the bounds, rather than being judged by floors
/// nothing has sized yet (the 50,000-cluster benchmark's delta Envoy was refused for 100,002 names).
#[tokio::test]
async fn a_reconnect_before_the_first_publish_waits_for_the_bounds() {
    const CLUSTERS: usize = 1_000;
    let h = Harness::start_with(
        None,
        pier::xds::transport::XdsLimits {
            max_resource_names: 1_500,
            ..Default::default()
        },
    )
    .await;
    let names: Vec<String> = (0..CLUSTERS).map(name).collect();
    let mut c = client(&h).await;
    let (tx, rx) = mpsc::channel(2);
    let mut stream = c
        .delta_aggregated_resources(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(DeltaDiscoveryRequest {
        node: Some(node(GW)),
        type_url: XdsType::Endpoint.type_url().into(),
        resource_names_subscribe: names.clone(),
        initial_resource_versions: names.iter().map(|n| (n.clone(), "stale".to_string())).collect(),
        ..Default::default()
    })
    .await
    .unwrap();
    // 2,000 names against a floor of 1,500: held, not refused.
    let held = tokio::time::timeout(Duration::from_millis(500), stream.message()).await;
    assert!(held.is_err(), "answered before anything was published: {held:?}");
    let mut small = fleet();
    let res = small.get_mut(GW).unwrap();
    res.clusters.truncate(CLUSTERS);
    res.endpoints.truncate(CLUSTERS);
    h.publish(&small);
    let update: DeltaDiscoveryResponse = next(&mut stream).await;
    assert_eq!(
        update.resources.len(),
        CLUSTERS,
        "every stale load assignment sent again"
    );
    assert_eq!(h.server.metrics.refusals(Refused::TooManyNames), 0);
    drop(tx);
    h.shutdown().await;
}
