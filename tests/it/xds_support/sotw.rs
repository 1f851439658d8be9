//! The proxy side of one state-of-the-world ADS stream.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::Mode;
use pier::xds::XdsType::{self, Cluster, Endpoint, Listener, Route};
use tokio::sync::mpsc;
use tonic::Streaming;

use super::{AdsProxy, Harness, QUIET, Update, WAIT, node, resource_name};

/// One SotW ADS stream, as a proxy sees it.
pub struct Proxy {
    pub tx: mpsc::Sender<DiscoveryRequest>,
    pub rx: Streaming<DiscoveryResponse>,
    pub node: Option<envoy_types::pb::envoy::config::core::v3::Node>,
    /// Last response per type (what an ACK refers to).
    pub last: BTreeMap<XdsType, DiscoveryResponse>,
    /// Per type, the names and the version of the last request sent (its subscription, and the version it
    /// reported holding).
    sent: BTreeMap<XdsType, (Vec<String>, String)>,
}

impl Proxy {
    pub async fn send(&mut self, mut req: DiscoveryRequest) {
        if let Some(ty) = XdsType::from_type_url(&req.type_url) {
            self.sent
                .insert(ty, (req.resource_names.clone(), req.version_info.clone()));
        }
        req.node = self.node.take();
        self.tx.send(req).await.expect("request stream open");
    }

    /// A request of `ty` for `names` carrying `version` / `nonce`.
    pub async fn request(&mut self, ty: XdsType, names: &[String], version: &str, nonce: &str) {
        self.send(DiscoveryRequest {
            type_url: ty.type_url().to_string(),
            resource_names: names.to_vec(),
            version_info: version.to_string(),
            response_nonce: nonce.to_string(),
            ..Default::default()
        })
        .await;
    }

    /// First request of a type (no version, no nonce).
    pub async fn subscribe(&mut self, ty: XdsType, names: &[String]) {
        self.request(ty, names, "", "").await;
    }

    /// ACKs the last response of `ty`, keeping (or changing) the subscription.
    pub async fn ack(&mut self, ty: XdsType, names: &[String]) {
        let last = self.last[&ty].clone();
        self.request(ty, names, &last.version_info, &last.nonce).await;
    }

    /// NACKs the last response of `ty`: the version stays at `good`.
    pub async fn nack(&mut self, ty: XdsType, names: &[String], good: &str, error: &str) {
        let nonce = self.last[&ty].nonce.clone();
        self.send(DiscoveryRequest {
            type_url: ty.type_url().to_string(),
            resource_names: names.to_vec(),
            version_info: good.to_string(),
            response_nonce: nonce,
            error_detail: Some(RpcStatus {
                code: 3,
                message: error.to_string(),
                details: vec![],
            }),
            ..Default::default()
        })
        .await;
    }

    pub async fn recv(&mut self) -> DiscoveryResponse {
        let resp = tokio::time::timeout(WAIT, self.rx.message())
            .await
            .expect("a response in time")
            .expect("stream healthy")
            .expect("stream open");
        let ty = XdsType::from_type_url(&resp.type_url).expect("known type");
        self.last.insert(ty, resp.clone());
        resp
    }

    /// The next response, which must be of type `ty`; returns its resource names.
    pub async fn recv_type(&mut self, ty: XdsType) -> (DiscoveryResponse, Vec<String>) {
        let resp = self.recv().await;
        assert_eq!(resp.type_url, ty.type_url(), "expected {ty}, got {resp:?}");
        let names = resp.resources.iter().map(resource_name).collect();
        (resp, names)
    }

    /// The names and version of the last request of `ty`.
    fn sent(&self, ty: XdsType) -> (Vec<String>, String) {
        self.sent.get(&ty).cloned().unwrap_or_default()
    }
}

impl AdsProxy for Proxy {
    const MODE: Mode = Mode::Sotw;

    async fn connect(h: &Harness, gateway: &str) -> Proxy {
        let (tx, rx) = mpsc::channel(32);
        let mut client = h.channel().await;
        let rx = tokio::time::timeout(
            WAIT,
            client.stream_aggregated_resources(tokio_stream::wrappers::ReceiverStream::new(rx)),
        )
        .await
        .expect("stream opens in time")
        .expect("stream opens")
        .into_inner();
        Proxy {
            tx,
            rx,
            node: Some(node(gateway)),
            last: BTreeMap::new(),
            sent: BTreeMap::new(),
        }
    }

    async fn sync(&mut self, h: &Harness, gateway: &str) {
        self.subscribe(Cluster, &[]).await;
        let (_, clusters) = self.recv_type(Cluster).await;
        assert_eq!(clusters, h.names(gateway, Cluster));
        self.subscribe(Endpoint, &clusters).await;
        self.recv_type(Endpoint).await;
        self.ack(Endpoint, &clusters).await;
        self.ack(Cluster, &[]).await;
        self.subscribe(Listener, &[]).await;
        let (_, listeners) = self.recv_type(Listener).await;
        assert_eq!(listeners, h.names(gateway, Listener));
        self.ack(Listener, &[]).await;
        let routes = h.names(gateway, Route);
        self.subscribe(Route, &routes).await;
        let (_, got) = self.recv_type(Route).await;
        assert_eq!(got, routes);
        self.ack(Route, &routes).await;
        self.quiet().await;
    }

    async fn subscribe_all(&mut self, ty: XdsType) {
        self.subscribe(ty, &[]).await;
    }

    async fn request_names(&mut self, ty: XdsType, names: &[String]) {
        self.ack(ty, names).await;
    }

    async fn next(&mut self, ty: XdsType) -> Update {
        let (resp, names) = self.recv_type(ty).await;
        Update {
            version: resp.version_info,
            names,
            removed: Vec::new(),
            resources: resp.resources,
        }
    }

    async fn ack_last(&mut self, ty: XdsType) {
        let (names, _) = self.sent(ty);
        self.ack(ty, &names).await;
    }

    async fn nack_last(&mut self, ty: XdsType, error: &str) {
        let (names, good) = self.sent(ty);
        self.nack(ty, &names, &good, error).await;
    }

    async fn quiet(&mut self) {
        if let Ok(msg) = tokio::time::timeout(QUIET, self.rx.message()).await {
            panic!("expected nothing, got {msg:?}");
        }
    }

    fn last_version(&self, ty: XdsType) -> String {
        self.last[&ty].version_info.clone()
    }

    fn nonces(&self) -> Vec<String> {
        self.last.values().map(|r| r.nonce.clone()).collect()
    }

    fn holds(&self, ty: XdsType) -> Vec<String> {
        self.last
            .get(&ty)
            .map(|r| r.resources.iter().map(resource_name).collect())
            .unwrap_or_default()
    }

    async fn stream_end(&mut self) -> Result<Option<String>, tonic::Status> {
        let end = tokio::time::timeout(WAIT, self.rx.message())
            .await
            .expect("stream ends in time");
        end.map(|msg| msg.map(|m| format!("{m:?}")))
    }

    fn sotw(&mut self) -> Option<&mut Proxy> {
        Some(self)
    }
}
