//! The tonic side: [`AdsServer`] holds what Envoy's `AggregatedDiscoveryService` (SotW and delta) serves
//! from — each stream runs in its own task, framed by [`grpc`](super::grpc) — and [`serve`] runs it on a
//! listener until shutdown, beside the client status service ([`csds`](super::csds)).
//!
//! Owns transport concerns only (TLS and the client bounds through [`transport`](super::transport),
//! keepalive, graceful shutdown). On shutdown every stream task ends its
//! response stream, so each call finishes with status OK and the proxy keeps its configuration until
//! it reconnects (to this replica or another), rather than seeing a transport error mid-push.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_server::ClientStatusDiscoveryServiceServer;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use super::bounds::RequestBounds;
use super::csds::Csds;
use super::grpc::AdsService;
use super::stream::Shared;
use super::transport::{self, TlsState, XdsLimits};
use super::{Clients, PublishReport, SnapshotCache, XdsMetrics};
use crate::envoy::Resources;
use crate::snapshot::GatewayOut;

/// How often an idle connection is probed (HTTP/2 PING), so a vanished or hung proxy's stream is reaped
/// within 15 s (and leaves `/debug/clients` and the containment verdict). At 10,000 proxies: 1,000 PINGs a
/// second, each a small write and read on a connection task. The proxies' own pings (`pier bootstrap`,
/// every 3 s) are what moves a proxy off a hung replica; these are pier's side of the same.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);
/// The ADS service. Cheap to clone (shared state behind `Arc`s).
#[derive(Clone)]
pub struct AdsServer {
    pub cache: Arc<SnapshotCache>,
    pub clients: Arc<Clients>,
    pub metrics: Arc<XdsMetrics>,
    pub limits: XdsLimits,
    /// The request bounds in force, raised by each publish to what the snapshots need.
    pub bounds: Arc<RequestBounds>,
    /// Set by [`serve`]; `true` ends every stream.
    shutdown: watch::Receiver<bool>,
}

impl AdsServer {
    pub fn new(cache: Arc<SnapshotCache>, clients: Arc<Clients>, metrics: Arc<XdsMetrics>) -> AdsServer {
        // A receiver whose sender is gone never signals shutdown (see `stream::shut_down`); `serve`
        // replaces it with a live one.
        let (_, shutdown) = watch::channel(false);
        let limits = XdsLimits::default();
        AdsServer {
            cache,
            clients,
            metrics,
            bounds: Arc::new(bounds_of(&limits)),
            limits,
            shutdown,
        }
    }

    pub fn with_limits(mut self, limits: XdsLimits) -> AdsServer {
        self.bounds = Arc::new(bounds_of(&limits));
        self.limits = limits;
        self
    }

    /// Publishes a translation's Gateways and refreshes `pier_snapshot_info`.
    pub fn publish(&self, gateways: &BTreeMap<String, Resources>) -> PublishReport {
        let report = self.cache.publish(gateways);
        self.published();
        report
    }

    /// Publishes what the incremental translator packed (see [`SnapshotCache::publish_packed`]).
    pub fn publish_packed(&self, gateways: &BTreeMap<String, GatewayOut>) -> PublishReport {
        let report = self.cache.publish_packed(gateways);
        self.published();
        report
    }

    /// After a publish: the metrics, and the request bounds raised to what the snapshots let a proxy send.
    fn published(&self) {
        self.metrics.record_snapshots(&self.cache);
        let before = (self.bounds.request_bytes(), self.bounds.resource_names());
        let now = self.bounds.fit(self.cache.all().values());
        if (now.bytes, now.names) != before {
            tracing::info!(
                max_request_bytes = now.bytes,
                max_resource_names = now.names,
                "xDS request bounds raised to fit what is served (--xds-max-request-bytes and --xds-max-resource-names are the floors)"
            );
        }
    }

    pub(super) fn shared(&self) -> Shared {
        Shared {
            cache: self.cache.clone(),
            clients: self.clients.clone(),
            metrics: self.metrics.clone(),
            limits: self.limits.clone(),
            bounds: self.bounds.clone(),
            shutdown: self.shutdown.clone(),
        }
    }
}

fn bounds_of(limits: &XdsLimits) -> RequestBounds {
    RequestBounds::new(
        limits.max_request_bytes,
        limits.max_resource_names,
        limits.max_node_bytes,
    )
}

/// Serves ADS on `listener` until `shutdown` resolves; then stops accepting, ends every stream
/// cleanly and returns once the connections are closed. With `tls`, every client presents a
/// certificate (see [`transport`]); without, the caller has checked that plaintext is allowed.
pub async fn serve(
    listener: TcpListener,
    mut server: AdsServer,
    tls: Option<Arc<TlsState>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let (stop, stopped) = watch::channel(false);
    server.shutdown = stopped;
    if let Ok(addr) = listener.local_addr() {
        let security = if tls.is_some() { "mTLS" } else { "plaintext" };
        tracing::info!(%addr, security, "serving ADS");
    }
    let (tx, rx) = mpsc::channel(64);
    let acceptor = tokio::spawn(transport::accept(
        listener,
        tls,
        server.limits.clone(),
        server.metrics.clone(),
        tx,
    ));
    let incoming = ReceiverStream::new(rx);
    let signal = async move {
        shutdown.await;
        tracing::info!("ADS server shutting down");
        let _ = stop.send(true);
    };
    let max_request_bytes = server.limits.max_request_bytes;
    let csds = ClientStatusDiscoveryServiceServer::new(Csds::new(server.clients.clone(), server.cache.clone()))
        .max_decoding_message_size(max_request_bytes);
    let served = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .max_concurrent_streams(Some(server.limits.max_streams_per_connection))
        .add_service(AdsService::new(server))
        .add_service(csds)
        .serve_with_incoming_shutdown(incoming, signal)
        .await;
    acceptor.abort();
    served
}
