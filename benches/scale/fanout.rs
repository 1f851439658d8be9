//! `fanout STREAMS ROUTES SAMPLES [delta]`: one change reaching a fleet. `pier serve` (the release binary)
//! holds the workload of ROUTES routes; STREAMS ADS clients (state of the world, or delta), each on its
//! own HTTP/2 connection as separate Envoys would be, subscribe to what Envoy subscribes to (clusters
//! and listeners by wildcard, then the load assignments and route configurations they name, from
//! `/debug/config_dump`) and ACK every response at once. Each sample adds a route file and times, per
//! stream, how long until it has ACKed the route configuration that carries it: p50, p99 and max (all
//! ACKed). Resident memory of pier is read before the streams connect and once they are idle, for the
//! cost per idle stream. The CPU time pier and this tool each spent from a change until every stream
//! ACKed it says which of them the figure measures: both run on the same two cores here, and the
//! clients' side (10,000 HTTP/2 connections receiving every cluster) can be the busier one.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DiscoveryRequest};
use pier::testkit::workload::Workload;
use pier::xds::XdsType;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use crate::propagation::{Pier, new_route, put};

/// What each stream reports: the route-configuration version it has ACKed, and when.
type Acked = watch::Sender<(String, Instant)>;

pub async fn run(pier_bin: &Path, streams: usize, routes: usize, samples: usize, delta: bool) -> serde_json::Value {
    let work = tempfile::tempdir().expect("work dir");
    let dir = work.path().join("config");
    std::fs::create_dir_all(&dir).expect("config dir");
    for (name, text) in Workload::new(routes).files() {
        std::fs::write(dir.join(name), text).expect("workload file");
    }
    std::fs::write(
        dir.join("shared.yaml"),
        crate::propagation::shared_backend(([127, 0, 0, 2], 80).into()),
    )
    .expect("shared backend");
    let pier = Pier::start(pier_bin, &dir, work.path(), &[]).await;
    let (eds, rds) = subscriptions(&pier).await;
    let idle_before = rss_kib(pier.pid());

    let mut acks = Vec::with_capacity(streams);
    for i in 0..streams {
        let (tx, rx) = watch::channel((String::new(), Instant::now()));
        if delta {
            tokio::spawn(delta_client(pier.xds, i, eds.clone(), rds.clone(), tx));
        } else {
            tokio::spawn(client(pier.xds, i, eds.clone(), rds.clone(), tx));
        }
        acks.push(rx);
    }
    synced(&mut acks).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_after = rss_kib(pier.pid());

    let mut per_stream = Vec::new();
    let mut all = Vec::new();
    let mut first = Vec::new();
    let mut cpu = Vec::new();
    for k in 0..samples {
        let (pier_cpu, tool_cpu) = (cpu_ms(pier.pid()), cpu_ms(std::process::id()));
        let (each, last) = time_change(&mut acks, || {
            put(&dir, &format!("new-{k}.yaml"), new_route(k).as_bytes())
        })
        .await;
        cpu.push(serde_json::json!({
            "wall_ms": last.as_millis(),
            "pier_cpu_ms": cpu_ms(pier.pid()).saturating_sub(pier_cpu),
            "tool_cpu_ms": cpu_ms(std::process::id()).saturating_sub(tool_cpu),
        }));
        if k == 0 {
            first.clone_from(&each);
        }
        per_stream.extend(each);
        all.push(last);
    }
    let routes_only = per_stream.get(first.len()..).unwrap_or_default();
    let per_stream_kib = idle_after.saturating_sub(idle_before) as f64 / streams as f64;
    serde_json::json!({
        "streams": streams, "routes": routes, "samples": samples, "mode": if delta { "delta" } else { "sotw" },
        "ack_ms": crate::summary(&per_stream), "all_acked_ms": crate::summary(&all),
        "cluster_added_ack_ms": crate::summary(&first), "route_only_ack_ms": crate::summary(routes_only),
        "pier_rss_kib": {"before_streams": idle_before, "idle_streams": idle_after},
        "cpu_per_sample": cpu,
        "rss_kib_per_idle_stream": (per_stream_kib * 10.0).round() / 10.0,
    })
}

/// Waits (two minutes at most) until every stream has ACKed a route configuration: connected and synced.
pub async fn synced(acks: &mut [watch::Receiver<(String, Instant)>]) {
    for rx in acks {
        tokio::time::timeout(Duration::from_secs(120), rx.wait_for(|(v, _)| !v.is_empty()))
            .await
            .expect("every stream syncs within 2 minutes")
            .expect("stream task alive");
    }
}

/// Makes `change` and waits (a minute at most) until every stream has ACKed a newer route configuration:
/// how long each took, and the slowest.
pub async fn time_change(
    acks: &mut [watch::Receiver<(String, Instant)>],
    change: impl FnOnce(),
) -> (Vec<Duration>, Duration) {
    let before: Vec<String> = acks.iter().map(|rx| rx.borrow().0.clone()).collect();
    let t0 = Instant::now();
    change();
    let mut each = Vec::with_capacity(acks.len());
    for (rx, old) in acks.iter_mut().zip(&before) {
        let at = tokio::time::timeout(Duration::from_secs(60), rx.wait_for(|(v, _)| v != old))
            .await
            .expect("every stream ACKs the change within a minute")
            .expect("stream task alive")
            .1;
        each.push(at.saturating_duration_since(t0));
    }
    let last = each.iter().copied().max().unwrap_or_default();
    (each, last)
}

/// The load assignments and route configurations of the workload's Gateway, by name.
async fn subscriptions(pier: &Pier) -> (Arc<Vec<String>>, Arc<Vec<String>>) {
    let url = "/debug/config_dump?gateway=infra/edge";
    let t0 = Instant::now();
    loop {
        if let Ok(r) = pier::testkit::http::get(pier.admin, "localhost", url).await
            && r.status == 200
        {
            let dump: serde_json::Value = serde_json::from_str(&r.body).expect("config_dump is JSON");
            let names = |ty: &str, field: &str| {
                let list = dump[ty].as_array().cloned().unwrap_or_default();
                Arc::new(
                    list.iter()
                        .filter_map(|r| r[field].as_str().map(String::from))
                        .collect::<Vec<_>>(),
                )
            };
            return (names("endpoints", "clusterName"), names("routes", "name"));
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "pier published nothing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One proxy: subscribes as Envoy does and ACKs every response; reports its route-configuration ACKs.
async fn client(xds: SocketAddr, i: usize, eds: Arc<Vec<String>>, rds: Arc<Vec<String>>, acked: Acked) {
    let (tx, rx) = mpsc::channel(16);
    let request = |ty: XdsType, names: &[String], version: &str, nonce: &str| DiscoveryRequest {
        type_url: ty.type_url().to_string(),
        resource_names: names.to_vec(),
        version_info: version.to_string(),
        response_nonce: nonce.to_string(),
        ..Default::default()
    };
    let mut first = request(XdsType::Cluster, &[], "", "");
    first.node = Some(Node {
        id: format!("fanout-{i}"),
        cluster: "infra/edge".into(),
        ..Default::default()
    });
    for req in [
        first,
        request(XdsType::Listener, &[], "", ""),
        request(XdsType::Endpoint, &eds, "", ""),
        request(XdsType::Route, &rds, "", ""),
    ] {
        tx.send(req).await.expect("request stream open");
    }
    let mut responses = ads::<_, Reply>(xds, SOTW, rx).await;
    while let Ok(Some(resp)) = responses.message().await {
        let Some(ty) = XdsType::from_type_url(&resp.type_url) else {
            continue;
        };
        let names: &[String] = match ty {
            XdsType::Endpoint => &eds,
            XdsType::Route => &rds,
            _ => &[],
        };
        if tx
            .send(request(ty, names, &resp.version_info, &resp.nonce))
            .await
            .is_err()
        {
            return;
        }
        if ty == XdsType::Route {
            acked.send_replace((resp.version_info.clone(), Instant::now()));
        }
    }
}

/// One delta proxy: wildcard clusters and listeners, the load assignments and route configurations by
/// name, every response ACKed at once; reports its route-configuration ACKs.
async fn delta_client(xds: SocketAddr, i: usize, eds: Arc<Vec<String>>, rds: Arc<Vec<String>>, acked: Acked) {
    let (tx, rx) = mpsc::channel(16);
    let subscribe = |ty: XdsType, names: &[String]| DeltaDiscoveryRequest {
        type_url: ty.type_url().to_string(),
        resource_names_subscribe: names.to_vec(),
        ..Default::default()
    };
    let mut first = subscribe(XdsType::Cluster, &[]);
    first.node = Some(Node {
        id: format!("fanout-{i}"),
        cluster: "infra/edge".into(),
        ..Default::default()
    });
    for req in [
        first,
        subscribe(XdsType::Listener, &[]),
        subscribe(XdsType::Endpoint, &eds),
        subscribe(XdsType::Route, &rds),
    ] {
        tx.send(req).await.expect("request stream open");
    }
    let mut responses = ads::<_, Reply>(xds, DELTA, rx).await;
    while let Ok(Some(resp)) = responses.message().await {
        let Some(ty) = XdsType::from_type_url(&resp.type_url) else {
            continue;
        };
        let ack = DeltaDiscoveryRequest {
            type_url: resp.type_url.clone(),
            response_nonce: resp.nonce.clone(),
            ..Default::default()
        };
        if tx.send(ack).await.is_err() {
            return;
        }
        if ty == XdsType::Route && !resp.resources.is_empty() {
            acked.send_replace((resp.version_info.clone(), Instant::now()));
        }
    }
}

const SOTW: &str = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
const DELTA: &str = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

/// What a client reads of a response, SotW or delta: the version (`version_info` and
/// `system_version_info` are both field 1), the type, the nonce, and how many resources came. Each
/// resource decodes as an empty message, which skips its bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct Reply {
    #[prost(string, tag = "1")]
    version_info: String,
    #[prost(message, repeated, tag = "2")]
    resources: Vec<Skipped>,
    #[prost(string, tag = "4")]
    type_url: String,
    #[prost(string, tag = "5")]
    nonce: String,
}

// prost's derive needs braces (it builds the value as `Skipped {}`).
#[allow(clippy::empty_structs_with_brackets)]
#[derive(Clone, PartialEq, prost::Message)]
struct Skipped {}

/// One ADS call on a connection of its own, sending what `rx` yields.
async fn ads<Req, Resp>(xds: SocketAddr, path: &'static str, rx: mpsc::Receiver<Req>) -> tonic::Streaming<Resp>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{xds}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connecting to pier");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("connection ready");
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
    grpc.streaming(tonic::Request::new(ReceiverStream::new(rx)), path, codec)
        .await
        .expect("ADS stream")
        .into_inner()
}

/// User and system CPU time of process `pid` so far, in milliseconds (`/proc` counts in 1/100 s).
fn cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which may hold spaces, start at the state (field 3).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    ticks * 10
}

pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
