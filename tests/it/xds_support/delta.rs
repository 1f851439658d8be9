//! The proxy side of one delta ADS stream.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use pier::xds::XdsType::{self, Cluster, Endpoint, Listener, Route};
use tokio::sync::mpsc;
use tonic::Streaming;

use super::{Harness, QUIET, WAIT, node, resource_name};

pub type Versions = BTreeMap<String, String>;

/// One delta ADS stream, as a proxy sees it: it keeps what it holds per type.
pub struct Proxy {
    pub tx: mpsc::Sender<DeltaDiscoveryRequest>,
    pub rx: Streaming<DeltaDiscoveryResponse>,
    pub node: Option<envoy_types::pb::envoy::config::core::v3::Node>,
    pub last: BTreeMap<XdsType, DeltaDiscoveryResponse>,
    pub held: BTreeMap<XdsType, Versions>,
}

/// A response's upserted names and removed names.
pub struct Got {
    pub resp: DeltaDiscoveryResponse,
    pub names: Vec<String>,
    pub removed: Vec<String>,
}

impl Proxy {
    pub async fn connect(h: &Harness, cluster: &str) -> Proxy {
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
            node: Some(node(cluster)),
            last: BTreeMap::new(),
            held: BTreeMap::new(),
        }
    }

    pub async fn send(&mut self, mut req: DeltaDiscoveryRequest) {
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

    pub async fn quiet(&mut self) {
        if let Ok(msg) = tokio::time::timeout(QUIET, self.rx.message()).await {
            panic!("expected nothing, got {msg:?}");
        }
    }

    /// Envoy's start-up sequence; everything ACKed.
    pub async fn sync(&mut self, h: &Harness, gateway: &str) {
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
}
