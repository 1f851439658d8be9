//! Proxy status over CSDS and `pier proxy-status`, against the real `pier serve` on loopback: one tonic
//! proxy acknowledges its clusters, another rejects them. CSDS (`FetchClientStatus`, and the streaming
//! method) reports the first `SYNCED` and the second `ERROR` with Envoy-style details; `pier
//! proxy-status` prints one line each, `SYNCED` and `NACKED`, and the rejection's message.

use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse, ConfigStatus};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::XdsType;
use tokio::sync::mpsc;
use tonic::Streaming;

use crate::serve_inputs::Serve;

const WAIT: Duration = Duration::from_secs(20);
const REJECTION: &str =
    "Proto constraint validation failed (ClusterValidationError.Name: value length must be at least 1 characters)";

const CONFIG: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: pier
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: api, namespace: default}
spec:
  type: ExternalHostname
  externalHostname: {hostname: api.example.com}
  port: {number: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: api}]
";

/// A proxy's stream: the request sender (kept open) and the responses.
struct Proxy {
    tx: mpsc::Sender<DiscoveryRequest>,
    rx: Streaming<DiscoveryResponse>,
}

impl Proxy {
    /// Connects as node `id` of the Gateway default/gw and asks for its clusters.
    async fn clusters(serve: &Serve, id: &str) -> (Proxy, DiscoveryResponse) {
        let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{}", serve.xds))
            .await
            .expect("connecting to pier's xDS port");
        let (tx, rx) = mpsc::channel(8);
        let rx = client
            .stream_aggregated_resources(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .expect("an ADS stream")
            .into_inner();
        let mut proxy = Proxy { tx, rx };
        proxy
            .send(DiscoveryRequest {
                node: Some(Node {
                    id: id.to_string(),
                    cluster: "default/gw".to_string(),
                    ..Default::default()
                }),
                type_url: XdsType::Cluster.type_url().to_string(),
                ..Default::default()
            })
            .await;
        let first = tokio::time::timeout(WAIT, proxy.rx.message())
            .await
            .expect("clusters in time")
            .expect("a healthy stream")
            .expect("an open stream");
        assert_eq!(first.resources.len(), 1, "the XBackend's cluster: {first:?}");
        (proxy, first)
    }

    async fn send(&mut self, request: DiscoveryRequest) {
        self.tx.send(request).await.expect("the stream is open");
    }

    async fn answer(&mut self, to: &DiscoveryResponse, error: Option<&str>) {
        self.send(DiscoveryRequest {
            type_url: to.type_url.clone(),
            version_info: if error.is_some() {
                String::new()
            } else {
                to.version_info.clone()
            },
            response_nonce: to.nonce.clone(),
            error_detail: error.map(|m| RpcStatus {
                code: 13,
                message: m.to_string(),
                details: vec![],
            }),
            ..Default::default()
        })
        .await;
    }
}

/// `(node, config_status, error details)` of every cluster entry.
fn clusters(r: &ClientStatusResponse) -> Vec<(String, i32, Option<String>)> {
    let mut out: Vec<_> = r
        .config
        .iter()
        .flat_map(|c| {
            let node = c.node.as_ref().map(|n| n.id.clone()).unwrap_or_default();
            c.generic_xds_configs
                .iter()
                .filter(|g| g.type_url == XdsType::Cluster.type_url())
                .map(move |g| {
                    assert!(g.xds_config.is_some(), "a cluster's contents are included");
                    (
                        node.clone(),
                        g.config_status,
                        g.error_state.as_ref().map(|e| e.details.clone()),
                    )
                })
        })
        .collect();
    out.sort();
    out
}

fn expected() -> Vec<(String, i32, Option<String>)> {
    vec![
        ("proxy-good".into(), ConfigStatus::Synced as i32, None),
        ("proxy-nack".into(), ConfigStatus::Error as i32, Some(REJECTION.into())),
    ]
}

#[tokio::test]
async fn csds_and_proxy_status_show_a_synced_and_a_nacked_proxy() {
    let (dir, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(dir.path().join("config.yaml"), CONFIG).unwrap();
    // Containment would answer the rejection with trial publishes (new versions, which this proxy never
    // answers); without it the rejection stands, which is what is under test.
    let serve = Serve::start(dir.path(), work.path(), &["--nack-containment=false"]).expect("pier serve starts");
    let (mut good, served) = Proxy::clusters(&serve, "proxy-good").await;
    good.answer(&served, None).await;
    let (mut bad, served) = Proxy::clusters(&serve, "proxy-nack").await;
    bad.answer(&served, Some(REJECTION)).await;

    let mut csds = ClientStatusDiscoveryServiceClient::connect(format!("http://{}", serve.xds))
        .await
        .expect("CSDS on the xDS port");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = csds
            .fetch_client_status(ClientStatusRequest::default())
            .await
            .expect("FetchClientStatus")
            .into_inner();
        if clusters(&r) == expected() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "CSDS never showed both: {:?}",
            clusters(&r)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (tx, rx) = mpsc::channel(1);
    tx.send(ClientStatusRequest::default()).await.unwrap();
    let mut stream = csds
        .stream_client_status(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .expect("StreamClientStatus")
        .into_inner();
    let streamed = stream
        .message()
        .await
        .expect("an answer")
        .expect("one answer per request");
    assert_eq!(clusters(&streamed), expected(), "the streaming method answers the same");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pier"))
        .args(["proxy-status", "--admin", &serve.admin.to_string()])
        .env_remove("PIER_ADMIN_ADDRESS")
        .env_remove("PIER_ADMIN_TOKEN_FILE")
        .output()
        .expect("running pier proxy-status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line = |node: &str| {
        text.lines()
            .find(|l| l.starts_with(node))
            .unwrap_or_default()
            .to_string()
    };
    let words = |l: String| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        &words(line("proxy-good"))[1..5],
        ["default/gw", "sotw", "envoy", "SYNCED"],
        "{text}"
    );
    assert_eq!(
        &words(line("proxy-nack"))[1..5],
        ["default/gw", "sotw", "envoy", "NACKED"],
        "{text}"
    );
    assert!(text.contains(&format!("proxy-nack CDS: {REJECTION}")), "{text}");
    drop((good, bad));
}
