//! The proxy side of one delta ADS stream.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::Mode;
use pier::xds::XdsType::{self, Cluster, Endpoint, Listener, Route};
use tokio::sync::mpsc;
use tonic::Streaming;

use super::{AdsProxy, Harness, QUIET, Update, WAIT, node, resource_name};

pub type Versions = BTreeMap<String, String>;

/// One delta ADS stream, as a proxy sees it: it keeps what it holds per type.
pub struct Proxy {
    pub tx: mpsc::Sender<DeltaDiscoveryRequest>,
    pub rx: Streaming<DeltaDiscoveryResponse>,
    pub node: Option<envoy_types::pb::envoy::config::core::v3::Node>,
    pub last: BTreeMap<XdsType, DeltaDiscoveryResponse>,
    pub held: BTreeMap<XdsType, Versions>,
    /// The names subscribed per type.
    subscribed: BTreeMap<XdsType, BTreeSet<String>>,
}

/// A response's upserted names and removed names.
pub struct Got {
    pub resp: DeltaDiscoveryResponse,
    pub names: Vec<String>,
    pub removed: Vec<String>,
}

impl Proxy {
    pub async fn send(&mut self, mut req: DeltaDiscoveryRequest) {
        if let Some(ty) = XdsType::from_type_url(&req.type_url) {
            let subscribed = self.subscribed.entry(ty).or_default();
            subscribed.extend(req.resource_names_subscribe.iter().cloned());
            for name in &req.resource_names_unsubscribe {
                subscribed.remove(name);
            }
        }
        req.node = self.node.take();
        self.tx.send(req).await.expect("request stream open");
    }

    /// First request of a type: `subscribe` plus what the proxy already holds.
    pub async fn first(&mut self, ty: XdsType, subscribe: &[String], initial: &Versions) {
        self.send(DeltaDiscoveryRequest {
            type_url: ty.type_url().to_string(),
            resource_names_subscribe: subscribe.to_vec(),
            initial_resource_versions: initial.clone().into_iter().collect(),
            ..Default::default()
        })
        .await;
    }

    pub async fn subscribe(&mut self, ty: XdsType, names: &[String]) {
        self.send(DeltaDiscoveryRequest {
            type_url: ty.type_url().to_string(),
            resource_names_subscribe: names.to_vec(),
            ..Default::default()
        })
        .await;
    }

    pub async fn unsubscribe(&mut self, ty: XdsType, names: &[String]) {
        for n in names {
            self.held.entry(ty).or_default().remove(n);
        }
        self.send(DeltaDiscoveryRequest {
            type_url: ty.type_url().to_string(),
            resource_names_unsubscribe: names.to_vec(),
            ..Default::default()
        })
        .await;
    }

    pub async fn ack(&mut self, ty: XdsType) {
        let nonce = self.last[&ty].nonce.clone();
        self.send(DeltaDiscoveryRequest {
            type_url: ty.type_url().to_string(),
            response_nonce: nonce,
            ..Default::default()
        })
        .await;
    }

    pub async fn nack(&mut self, ty: XdsType, error: &str) {
        let nonce = self.last[&ty].nonce.clone();
        self.send(DeltaDiscoveryRequest {
            type_url: ty.type_url().to_string(),
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

    pub async fn recv_type(&mut self, ty: XdsType) -> Got {
        let resp = tokio::time::timeout(WAIT, self.rx.message())
            .await
            .expect("a response in time")
            .expect("stream healthy")
            .expect("stream open");
        assert_eq!(resp.type_url, ty.type_url(), "expected {ty}, got {resp:?}");
        assert!(!resp.nonce.is_empty());
        let held = self.held.entry(ty).or_default();
        let mut names = Vec::new();
        for r in &resp.resources {
            let any = r.resource.as_ref().expect("resource body");
            assert_eq!(resource_name(any), r.name);
            assert!(!r.version.is_empty());
            held.insert(r.name.clone(), r.version.clone());
            names.push(r.name.clone());
        }
        for n in &resp.removed_resources {
            held.remove(n);
        }
        self.last.insert(ty, resp.clone());
        Got {
            removed: resp.removed_resources.clone(),
            resp,
            names,
        }
    }
}

impl AdsProxy for Proxy {
    const MODE: Mode = Mode::Delta;

    async fn connect(h: &Harness, gateway: &str) -> Proxy {
        let (tx, rx) = mpsc::channel(32);
        let mut client = h.channel().await;
        let rx = tokio::time::timeout(
            WAIT,
            client.delta_aggregated_resources(tokio_stream::wrappers::ReceiverStream::new(rx)),
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
            held: BTreeMap::new(),
            subscribed: BTreeMap::new(),
        }
    }

    async fn sync(&mut self, h: &Harness, gateway: &str) {
        self.first(Cluster, &[], &Versions::new()).await;
        let clusters = self.recv_type(Cluster).await.names;
        assert_eq!(clusters, h.names(gateway, Cluster));
        self.subscribe(Endpoint, &clusters).await;
        self.recv_type(Endpoint).await;
        self.ack(Endpoint).await;
        self.ack(Cluster).await;
        self.first(Listener, &[], &Versions::new()).await;
        assert_eq!(self.recv_type(Listener).await.names, h.names(gateway, Listener));
        self.ack(Listener).await;
        let routes = h.names(gateway, Route);
        self.subscribe(Route, &routes).await;
        assert_eq!(self.recv_type(Route).await.names, routes);
        self.ack(Route).await;
        self.quiet().await;
    }

    async fn subscribe_all(&mut self, ty: XdsType) {
        self.first(ty, &[], &Versions::new()).await;
    }

    async fn request_names(&mut self, ty: XdsType, names: &[String]) {
        let subscribed = self.subscribed.get(&ty).cloned().unwrap_or_default();
        let new: Vec<String> = names.iter().filter(|n| !subscribed.contains(*n)).cloned().collect();
        let gone: Vec<String> = subscribed.into_iter().filter(|n| !names.contains(n)).collect();
        if !gone.is_empty() {
            self.unsubscribe(ty, &gone).await;
        }
        if !new.is_empty() {
            self.subscribe(ty, &new).await;
        }
    }

    async fn next(&mut self, ty: XdsType) -> Update {
        let got = self.recv_type(ty).await;
        Update {
            version: got.resp.system_version_info,
            names: got.names,
            removed: got.removed,
            resources: got
                .resp
                .resources
                .into_iter()
                .map(|r| r.resource.expect("resource body"))
                .collect(),
        }
    }

    async fn ack_last(&mut self, ty: XdsType) {
        self.ack(ty).await;
    }

    async fn nack_last(&mut self, ty: XdsType, error: &str) {
        self.nack(ty, error).await;
    }

    async fn quiet(&mut self) {
        if let Ok(msg) = tokio::time::timeout(QUIET, self.rx.message()).await {
            panic!("expected nothing, got {msg:?}");
        }
    }

    fn last_version(&self, ty: XdsType) -> String {
        self.last[&ty].system_version_info.clone()
    }

    fn nonces(&self) -> Vec<String> {
        self.last.values().map(|r| r.nonce.clone()).collect()
    }

    fn holds(&self, ty: XdsType) -> Vec<String> {
        self.held
            .get(&ty)
            .map(|h| h.keys().cloned().collect())
            .unwrap_or_default()
    }

    async fn stream_end(&mut self) -> Result<Option<String>, tonic::Status> {
        let end = tokio::time::timeout(WAIT, self.rx.message())
            .await
            .expect("stream ends in time");
        end.map(|msg| msg.map(|m| format!("{m:?}")))
    }
}
