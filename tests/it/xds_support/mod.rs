//! Shared harness for the ADS tests (`crate::xds`): a real tonic server on an ephemeral loopback port,
//! models translated from YAML, and (in `sotw` / `delta`) a proxy-side client per mode built on
//! envoy-types' generated client, both behind [`AdsProxy`], the interface the scenarios shared by the two
//! modes are written against. Every wait is bounded.

pub mod delta;
pub mod sotw;
pub mod tls;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::google::protobuf::Any;
use pier::envoy::Resources;
use pier::xds::{AdsServer, Clients, Mode, SnapshotCache, XdsMetrics, XdsType};
use prost::Message;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

/// How long "nothing arrives" is watched for.
pub const QUIET: Duration = Duration::from_millis(300);
/// Upper bound for anything that should arrive.
pub const WAIT: Duration = Duration::from_secs(5);

pub const GW: &str = "default/gw";
pub const OTHER: &str = "default/other";

/// Cluster name the translator gives Service `svc` port 80.
pub fn cluster(svc: &str) -> String {
    format!("service/default/{svc}/80")
}

/// A Gateway with one HTTP listener per port and an HTTPRoute per Gateway: rule i sends `/svc` to
/// Service `svc`.
pub struct Gw<'a> {
    pub name: &'a str,
    pub ports: &'a [u16],
    pub backends: &'a [&'a str],
}

/// A model: the GatewayClass, the Gateways with their routes, and Services `a`, `b`, `c` (port 80 →
/// 8080) each with one ready endpoint, `ips` overriding the default address of a Service.
pub fn model(gws: &[Gw], ips: &[(&str, &str)]) -> String {
    let mut out = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier, generation: 1}\n\
         spec: {controllerName: pier.dev/gateway-controller}\n",
    );
    for gw in gws {
        let listeners: String = gw
            .ports
            .iter()
            .map(|p| format!("  - {{name: http-{p}, protocol: HTTP, port: {p}}}\n"))
            .collect();
        let rules: String = gw
            .backends
            .iter()
            .map(|b| format!("  - matches: [{{path: {{type: PathPrefix, value: /{b}}}}}]\n    backendRefs: [{{name: {b}, port: 80}}]\n"))
            .collect();
        out += &format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: {n}, namespace: default, generation: 1}}\n\
             spec:\n  gatewayClassName: pier\n  listeners:\n{listeners}\
             ---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {n}-route, namespace: default, generation: 1}}\n\
             spec:\n  parentRefs: [{{name: {n}}}]\n  rules:\n{rules}",
            n = gw.name
        );
    }
    for (i, svc) in ["a", "b", "c"].into_iter().enumerate() {
        let default_ip = format!("10.0.0.{}", i + 1);
        let ip = ips
            .iter()
            .find(|(s, _)| *s == svc)
            .map_or(default_ip.as_str(), |(_, ip)| ip);
        out += &format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {svc}, namespace: default}}\n\
             spec:\n  ports: [{{name: http, port: 80, targetPort: 8080}}]\n\
             ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {svc}-1\n  namespace: default\n\
             \x20 labels: {{kubernetes.io/service-name: {svc}}}\naddressType: IPv4\n\
             ports: [{{name: http, port: 8080, protocol: TCP}}]\n\
             endpoints: [{{addresses: [\"{ip}\"], conditions: {{ready: true}}}}]\n"
        );
    }
    out
}

/// The one Gateway `default/gw` on port 8080 routing to `backends`.
pub fn simple(backends: &[&str]) -> BTreeMap<String, Resources> {
    translate(&model(
        &[Gw {
            name: "gw",
            ports: &[8080],
            backends,
        }],
        &[],
    ))
}

pub fn translate(yaml: &str) -> BTreeMap<String, Resources> {
    let loaded = pier::model::load::parse_texts(&[("input.yaml".to_string(), yaml.to_string())]).expect("model parses");
    let translation = pier::translate(&loaded.model, &pier::Options::default());
    assert!(
        !translation.gateways.is_empty(),
        "the model yields at least one Gateway"
    );
    translation.gateways
}

/// A response as the shared scenarios see it, in either mode.
#[derive(Debug)]
pub struct Update {
    /// `version_info` (SotW) or `system_version_info` (delta): the snapshot version of the type.
    pub version: String,
    /// The resources sent, by name, in order.
    pub names: Vec<String>,
    /// The names removed (delta's `removed_resources`; always empty in SotW, where leaving a name out of
    /// the state of the world removes it).
    pub removed: Vec<String>,
    /// The resources sent.
    pub resources: Vec<Any>,
}

/// One ADS stream as a proxy sees it, in either mode: what the scenarios in `crate::xds::scenarios` are
/// written against. Protocol steps that exist in one mode only go through the concrete proxy
/// ([`AdsProxy::sotw`]); expectations that differ by mode are spelled with [`AdsProxy::either`].
pub trait AdsProxy: Sized {
    /// The flavour, as pier's metrics and client registry name it.
    const MODE: Mode;

    /// Opens a stream as a proxy of Gateway `gateway` (the node's cluster).
    async fn connect(h: &Harness, gateway: &str) -> Self;

    /// Envoy's start-up sequence against the snapshot of `gateway` (CDS, EDS for the clusters, the CDS ACK,
    /// LDS, RDS); everything ACKed, then nothing more arrives.
    async fn sync(&mut self, h: &Harness, gateway: &str);

    /// The first request of `ty`: the wildcard (no names, nothing held).
    async fn subscribe_all(&mut self, ty: XdsType);

    /// Asks for exactly `names` of `ty` (SotW: the whole list, in an ACK of the last response; delta:
    /// subscribes what is new and unsubscribes what is no longer named).
    async fn request_names(&mut self, ty: XdsType, names: &[String]);

    /// The next response, which must be of `ty`.
    async fn next(&mut self, ty: XdsType) -> Update;

    /// ACKs the last response of `ty`, keeping the subscription.
    async fn ack_last(&mut self, ty: XdsType);

    /// NACKs the last response of `ty` with `error`, keeping the subscription (SotW: reporting the last
    /// version it ACKed).
    async fn nack_last(&mut self, ty: XdsType, error: &str);

    /// Asserts that nothing arrives for [`QUIET`].
    async fn quiet(&mut self);

    /// The version of the last response of `ty`.
    fn last_version(&self, ty: XdsType) -> String;

    /// The nonce of the last response of each type.
    fn nonces(&self) -> Vec<String>;

    /// The names of `ty` the proxy holds (SotW: those of the last response).
    fn holds(&self, ty: XdsType) -> Vec<String>;

    /// How the stream ends, within [`WAIT`]: `Ok(None)` is a clean end; `Ok(Some(_))` a message that came
    /// instead.
    async fn stream_end(&mut self) -> Result<Option<String>, tonic::Status>;

    /// The SotW proxy, for steps only that protocol has; `None` in delta mode.
    fn sotw(&mut self) -> Option<&mut sotw::Proxy> {
        None
    }

    /// What to expect in this mode.
    fn either<T>(sotw: T, delta: T) -> T {
        match Self::MODE {
            Mode::Sotw => sotw,
            Mode::Delta => delta,
        }
    }
}

/// A running ADS server on 127.0.0.1:0.
pub struct Harness {
    pub server: AdsServer,
    pub addr: SocketAddr,
    /// With mTLS, the client side [`Harness::channel`] connects with.
    pub client_tls: Option<Arc<rustls::ClientConfig>>,
    /// Where the server's metrics are registered ([`Harness::metrics_text`]).
    registry: prometheus_client::registry::Registry,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl Harness {
    /// Plaintext on loopback.
    pub async fn start() -> Harness {
        Harness::start_with(None, Default::default()).await
    }

    /// With mTLS (`tls`) and these client bounds.
    pub async fn start_with(
        tls: Option<Arc<pier::xds::transport::TlsState>>,
        limits: pier::xds::transport::XdsLimits,
    ) -> Harness {
        let mut registry = prometheus_client::registry::Registry::default();
        let server = AdsServer::new(
            Arc::new(SnapshotCache::new()),
            Arc::new(Clients::new()),
            Arc::new(XdsMetrics::new(&mut registry)),
        )
        .with_limits(limits);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(pier::xds::serve(listener, server.clone(), tls, async move {
            let _ = stopped.await;
        }));
        Harness {
            server,
            addr,
            client_tls: None,
            registry,
            stop: Some(stop),
            task,
        }
    }

    pub fn publish(&self, gateways: &BTreeMap<String, Resources>) -> pier::xds::PublishReport {
        self.server.publish(gateways)
    }

    /// The server's metrics in the Prometheus text format, as `/metrics` serves them.
    pub fn metrics_text(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("metrics encode");
        text
    }

    /// The value of one sample of [`Harness::metrics_text`] (`name{labels}`; a `u64` for a count, an
    /// `f64` for a sum), zero when it is absent.
    pub fn sample<T: std::str::FromStr + Default>(&self, series: &str) -> T {
        self.metrics_text()
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_default()
    }

    pub fn cache(&self) -> &SnapshotCache {
        &self.server.cache
    }

    /// Resource names of one type in the published snapshot of `gateway`.
    pub fn names(&self, gateway: &str, ty: XdsType) -> Vec<String> {
        self.cache()
            .get(gateway)
            .map(|s| s.view(ty).entries.keys().cloned().collect())
            .unwrap_or_default()
    }

    pub fn version(&self, gateway: &str, ty: XdsType) -> String {
        self.cache().versions(gateway)[&ty].clone()
    }

    pub async fn channel(&self) -> AggregatedDiscoveryServiceClient<Channel> {
        tokio::time::timeout(WAIT, self.try_channel())
            .await
            .expect("connect in time")
            .expect("connect")
    }

    /// A client over plaintext, or over TLS with `client_tls`.
    pub async fn try_channel(&self) -> Result<AggregatedDiscoveryServiceClient<Channel>, tonic::transport::Error> {
        connect(self.addr, self.client_tls.clone()).await
    }

    /// Signals shutdown and waits for `serve` to return.
    pub async fn shutdown(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("serve returns after shutdown")
            .expect("serve task")
            .expect("serve ends without error");
    }
}

/// An ADS client of `addr`: plaintext, or TLS with `tls`.
pub async fn connect(
    addr: SocketAddr,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<AggregatedDiscoveryServiceClient<Channel>, tonic::transport::Error> {
    match tls {
        None => AggregatedDiscoveryServiceClient::connect(format!("http://{addr}")).await,
        Some(config) => Ok(AggregatedDiscoveryServiceClient::new(tls::channel(addr, config).await?)),
    }
}

pub fn node(cluster: &str) -> Node {
    Node {
        id: format!("proxy-for-{cluster}"),
        cluster: cluster.to_string(),
        ..Default::default()
    }
}

/// Name of a packed resource.
pub fn resource_name(any: &Any) -> String {
    let bytes = any.value.as_slice();
    match XdsType::from_type_url(&any.type_url).expect("a type pier serves") {
        XdsType::Cluster => Cluster::decode(bytes).unwrap().name,
        XdsType::Endpoint => ClusterLoadAssignment::decode(bytes).unwrap().cluster_name,
        XdsType::Listener => Listener::decode(bytes).unwrap().name,
        XdsType::Route => RouteConfiguration::decode(bytes).unwrap().name,
        XdsType::Secret => Secret::decode(bytes).unwrap().name,
    }
}

/// The clusters a route configuration sends traffic to.
pub fn route_targets(any: &Any) -> Vec<String> {
    use envoy_types::pb::envoy::config::route::v3::route::Action;
    use envoy_types::pb::envoy::config::route::v3::route_action::ClusterSpecifier;
    let rc = RouteConfiguration::decode(any.value.as_slice()).unwrap();
    let mut out: Vec<String> = rc
        .virtual_hosts
        .iter()
        .flat_map(|vh| &vh.routes)
        .filter_map(|r| match &r.action {
            Some(Action::Route(ra)) => match &ra.cluster_specifier {
                Some(ClusterSpecifier::Cluster(c)) => Some(vec![c.clone()]),
                Some(ClusterSpecifier::WeightedClusters(w)) => {
                    Some(w.clusters.iter().map(|c| c.name.clone()).collect())
                }
                _ => None,
            },
            _ => None,
        })
        .flatten()
        .collect();
    out.sort();
    out.dedup();
    out
}

pub fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
