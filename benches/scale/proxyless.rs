//! `proxyless CLIENTS SAMPLES`: one change reaching a fleet of proxyless gRPC clients. `pier serve` (the
//! release binary) holds one Gateway whose GRPCRoute has the exact hostname `echo.bench`, so gRPC
//! clients ask for `echo.bench:8080`. CLIENTS ADS clients, each on its own HTTP/2 connection as separate
//! processes would be, speak as a gRPC client does (`node.user_agent_name` a gRPC library's, every type
//! named, never a wildcard: the listener, its route configuration, the clusters and load assignments it
//! reaches, as `/debug/config_dump` lists them) and ACK every response at once. Each sample rewrites the
//! GRPCRoute with one more rule and times, per client, how long until it has ACKed the route
//! configuration that carries it: p50, p99 and max. Resident memory of pier is read before the clients
//! connect and once they are idle, for the cost per idle client.
//!
//! Synthetic clients, not 1,000 grpcio processes (one process's channels share one xDS stream, so only
//! separate processes would be separate streams, and a thousand Python interpreters would measure this
//! machine, not pier). The e2e suite (`s26`) holds the real clients to the same protocol.
//!
//! With `tls`, Service `b` (which every added rule reaches) is verified by a BackendTLSPolicy, and every
//! odd-numbered client declares its CA's certificate provider (`pier.dev/certificate-providers`): the
//! others are each served their own variant of the Gateway's half (`xds::cache::guards`), rebuilt on
//! every publish. Comparing the two runs prices that.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use pier::xds::XdsType;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use crate::fanout::{rss_kib, synced, time_change};
use crate::propagation::{Pier, put};

const TARGET: &str = "echo.bench:8080";

/// Names a client asks for, per type.
#[derive(Debug, Default)]
struct Names {
    clusters: Vec<String>,
    endpoints: Vec<String>,
}

/// The certificate provider instance of Service `b`'s CA, with `tls`.
const INSTANCE: &str = "ca/configmap/bench/b-ca";

pub async fn run(pier_bin: &Path, clients: usize, samples: usize, tls: bool) -> serde_json::Value {
    let work = tempfile::tempdir().expect("work dir");
    let dir = work.path().join("config");
    std::fs::create_dir_all(&dir).expect("config dir");
    put(&dir, "base.yaml", base().as_bytes());
    if tls {
        put(&dir, "tls.yaml", b_tls().as_bytes());
    }
    // With `tls`, a rule reaches `b` from the start, so clients ask for its cluster.
    let first = usize::from(tls);
    put(&dir, "route.yaml", route(first).as_bytes());
    let pier = Pier::start(pier_bin, &dir, work.path(), &[]).await;
    let names = Arc::new(names(&pier).await);
    let before = rss_kib(pier.pid());
    let mut acks = Vec::with_capacity(clients);
    for i in 0..clients {
        let (tx, rx) = watch::channel((String::new(), Instant::now()));
        let declared = if tls && i % 2 == 1 { vec![INSTANCE] } else { Vec::new() };
        tokio::spawn(client(pier.xds, i, declared, names.clone(), tx));
        acks.push(rx);
    }
    synced(&mut acks).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_kib(pier.pid());
    let mut per_client = Vec::new();
    let mut all = Vec::new();
    for k in 1..=samples {
        let (each, last) = time_change(&mut acks, || put(&dir, "route.yaml", route(first + k).as_bytes())).await;
        per_client.extend(each);
        all.push(last);
    }
    let per = idle.saturating_sub(before) as f64 / clients as f64;
    serde_json::json!({
        "clients": clients, "samples": samples, "tls": tls,
        "ack_ms": crate::summary(&per_client), "all_acked_ms": crate::summary(&all),
        "pier_rss_kib": {"before_clients": before, "idle_clients": idle},
        "rss_kib_per_idle_client": (per * 10.0).round() / 10.0,
    })
}

/// The clusters and load assignments the target reaches, from the proxyless half of the config dump.
async fn names(pier: &Pier) -> Names {
    let t0 = Instant::now();
    loop {
        if let Ok(r) = pier::testkit::http::get(pier.admin, "localhost", "/debug/config_dump?gateway=bench/gw").await
            && r.status == 200
        {
            let dump: serde_json::Value = serde_json::from_str(&r.body).expect("config_dump is JSON");
            let list = |ty: &str, field: &str| -> Vec<String> {
                let items = dump["proxyless"][ty].as_array().cloned().unwrap_or_default();
                items
                    .iter()
                    .filter_map(|r| r[field].as_str().map(String::from))
                    .collect()
            };
            let names = Names {
                clusters: list("clusters", "name"),
                endpoints: list("endpoints", "clusterName"),
            };
            if !names.clusters.is_empty() {
                return names;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "pier published no proxyless target"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One gRPC client: every type by name, every response ACKed; reports its route-configuration ACKs.
async fn client(
    xds: SocketAddr,
    i: usize,
    declared: Vec<&str>,
    names: Arc<Names>,
    acked: watch::Sender<(String, Instant)>,
) {
    let mut ads = AggregatedDiscoveryServiceClient::connect(format!("http://{xds}"))
        .await
        .expect("connecting to pier");
    let (tx, rx) = mpsc::channel(16);
    let wanted = |ty: XdsType| -> Vec<String> {
        match ty {
            XdsType::Listener | XdsType::Route => vec![TARGET.to_string()],
            XdsType::Cluster => names.clusters.clone(),
            XdsType::Endpoint => names.endpoints.clone(),
            XdsType::Secret => Vec::new(),
        }
    };
    let request = |ty: XdsType, version: &str, nonce: &str| DiscoveryRequest {
        type_url: ty.type_url().to_string(),
        resource_names: wanted(ty),
        version_info: version.to_string(),
        response_nonce: nonce.to_string(),
        ..Default::default()
    };
    let mut first = request(XdsType::Listener, "", "");
    first.node = Some(Node {
        id: format!("proxyless-{i}"),
        cluster: "bench/gw".into(),
        user_agent_name: "gRPC C-core bench".into(),
        metadata: Some(pier::xds::agent::Trust::metadata(&declared)),
        ..Default::default()
    });
    for req in [
        first,
        request(XdsType::Route, "", ""),
        request(XdsType::Cluster, "", ""),
        request(XdsType::Endpoint, "", ""),
    ] {
        tx.send(req).await.expect("request stream open");
    }
    let mut responses = ads
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .expect("ADS stream")
        .into_inner();
    while let Ok(Some(resp)) = responses.message().await {
        let Some(ty) = XdsType::from_type_url(&resp.type_url) else {
            continue;
        };
        if tx.send(request(ty, &resp.version_info, &resp.nonce)).await.is_err() {
            return;
        }
        if ty == XdsType::Route && !resp.resources.is_empty() {
            acked.send_replace((resp.version_info.clone(), Instant::now()));
        }
    }
}

/// Service `b` verified against a fresh CA in ConfigMap `b-ca`.
fn b_tls() -> String {
    let pem = pier::testkit::pki::Ca::new("bench CA").cert_pem();
    let pem = pem.trim_end().replace('\n', "\\n");
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b-ca, namespace: bench}}\n\
         data: {{ca.crt: \"{pem}\\n\"}}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {{name: b-tls, namespace: bench}}\n\
         spec: {{targetRefs: [{{group: '', kind: Service, name: b}}], validation: {{hostname: b.bench, \
         caCertificateRefs: [{{group: '', kind: ConfigMap, name: b-ca}}]}}}}\n"
    )
}

fn base() -> String {
    let mut out = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\n\
         spec: {controllerName: pier.dev/gateway-controller}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: bench}\n\
         spec: {gatewayClassName: pier, listeners: [{name: grpc, protocol: HTTP, port: 8080}]}\n",
    );
    for svc in ["a", "b"] {
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {svc}, namespace: bench}}\n\
             spec: {{ports: [{{name: grpc, port: 80, appProtocol: kubernetes.io/h2c}}]}}\n---\n\
             apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {{name: {svc}-1, namespace: bench, labels: {{kubernetes.io/service-name: {svc}}}}}\n\
             addressType: IPv4\nports: [{{name: grpc, port: 50051}}]\n\
             endpoints: [{{addresses: [127.0.0.2], conditions: {{ready: true}}}}]\n"
        ));
    }
    out
}

/// The GRPCRoute after `k` changes: a catch-all rule and `k` method rules.
fn route(k: usize) -> String {
    let mut rules = String::from("  - backendRefs: [{name: a, port: 80}]\n");
    for i in 0..k {
        rules.push_str(&format!(
            "  - matches: [{{method: {{service: bench.Echo, method: M{i}}}}}]\n    backendRefs: [{{name: b, port: 80}}]\n"
        ));
    }
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {{name: echo, namespace: bench}}\n\
         spec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [echo.bench]\n  rules:\n{rules}"
    )
}
