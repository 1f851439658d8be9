//! A minimal proxy side of one state-of-the-world ADS stream (clusters only): enough to watch versions
//! arrive and to ACK or NACK them.

use std::net::SocketAddr;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::XdsType;
use tokio::sync::mpsc;
use tonic::Streaming;

use super::WAIT;

pub struct Proxy {
    tx: mpsc::Sender<DiscoveryRequest>,
    rx: Streaming<DiscoveryResponse>,
    node: Option<Node>,
    pub last: Option<DiscoveryResponse>,
}

impl Proxy {
    /// Opens a stream for Gateway `gateway` and subscribes to every cluster.
    pub async fn clusters(xds: SocketAddr, gateway: &str) -> Proxy {
        let mut client = tokio::time::timeout(WAIT, AggregatedDiscoveryServiceClient::connect(format!("http://{xds}")))
            .await
            .expect("connect in time")
            .expect("connect");
        let (tx, rx) = mpsc::channel(8);
        let rx = tokio::time::timeout(
            WAIT,
            client.stream_aggregated_resources(tokio_stream::wrappers::ReceiverStream::new(rx)),
        )
        .await
        .expect("stream opens in time")
        .expect("stream opens")
        .into_inner();
        let node = Node {
            id: format!("proxy-for-{gateway}"),
            cluster: gateway.to_string(),
            ..Default::default()
        };
        let mut p = Proxy {
            tx,
            rx,
            node: Some(node),
            last: None,
        };
        p.send(String::new(), String::new(), None).await;
        p
    }

    async fn send(&mut self, version: String, nonce: String, error: Option<&str>) {
        let req = DiscoveryRequest {
            node: self.node.take(),
            type_url: XdsType::Cluster.type_url().to_string(),
            version_info: version,
            response_nonce: nonce,
            error_detail: error.map(|e| RpcStatus {
                code: 3,
                message: e.to_string(),
                details: vec![],
            }),
            ..Default::default()
        };
        self.tx.send(req).await.expect("request stream open");
    }

    pub async fn recv(&mut self) -> DiscoveryResponse {
        let resp = tokio::time::timeout(WAIT, self.rx.message())
            .await
            .expect("a response in time")
            .expect("stream healthy")
            .expect("stream open");
        self.last = Some(resp.clone());
        resp
    }

    /// A response, if one arrives within `within`.
    pub async fn try_recv(&mut self, within: std::time::Duration) -> Option<DiscoveryResponse> {
        let resp = tokio::time::timeout(within, self.rx.message()).await.ok()?;
        let resp = resp.expect("stream healthy").expect("stream open");
        self.last = Some(resp.clone());
        Some(resp)
    }

    pub async fn ack(&mut self) {
        let last = self.last.clone().expect("a response to ACK");
        self.send(last.version_info, last.nonce, None).await;
    }

    /// Rejects the last response (the version stays at `good`).
    pub async fn nack(&mut self, good: &str, error: &str) {
        let last = self.last.clone().expect("a response to NACK");
        self.send(good.to_string(), last.nonce, Some(error)).await;
    }
}
