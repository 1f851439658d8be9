//! The floor of a propagation run: the same Envoy applying the same change from files, no control plane.
//!
//! The resources are pier's own translation of the same state. Dynamic references are rewritten from ADS
//! to files (`path_config_source` with `watched_directory`, one directory per type): clusters and
//! listeners from `cds.pb` and `lds.pb`, the route configuration from `rds.pb`, secrets from `sds.pb`. An EDS cluster gets its
//! endpoints inline instead (a file-based EDS subscription per cluster would make Envoy re-read one file
//! once per cluster on every change, a cost pier's ADS stream does not have). Files are binary
//! `DiscoveryResponse`s written with pier's prost types and renamed into place.
//!
//! `floor-split` asks what splitting the route configuration would buy (per-hostname route
//! configurations, VHDS): the same Envoy, holding the same N routes in pier's one route configuration,
//! gets each new route in a second, small route configuration of its own (a second listener reading
//! `rds-split.pb`). The difference from `floor` is what Envoy spends on the size of the configuration it
//! is sent rather than on the change.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
use pier::envoy::pb::{cluster, endpoint, listener, route, tls};
use pier::envoy::render;
use pier::testkit::envoy::Envoy;
use pier::testkit::free_port;
use pier::testkit::workload::Workload;
use prost::Message;
use serde_json::{Value, json};

use super::propagation::{Upstreams, probe, put, shaped_route, shared_backend, time_until_at};

/// Every resource of the Gateway for the state `files`, rewritten to read from `dir`.
struct State {
    clusters: Vec<cluster::Cluster>,
    listeners: Vec<listener::Listener>,
    routes: Vec<route::RouteConfiguration>,
    secrets: Vec<tls::Secret>,
}

fn state(files: &[(String, String)], dir: &Path) -> State {
    let loaded = pier::model::load::parse_texts(files).expect("workload parses");
    let opts = pier::Options {
        guardrails: pier::options::Guardrails {
            allow_loopback: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let t = pier::translate(&loaded.model, &opts);
    let res = t.resources(Some("infra/edge")).expect("the workload's Gateway");
    let endpoints: std::collections::BTreeMap<String, endpoint::ClusterLoadAssignment> =
        res.endpoints.into_iter().map(|e| (e.cluster_name.clone(), e)).collect();
    let clusters = res
        .clusters
        .into_iter()
        .map(|mut c| {
            if let Some(cla) = endpoints.get(&c.name) {
                c.cluster_discovery_type = Some(cluster::cluster::ClusterDiscoveryType::Type(
                    cluster::cluster::DiscoveryType::Static as i32,
                ));
                c.eds_cluster_config = None;
                c.load_assignment = Some(cla.clone());
            }
            to_files(&c, dir)
        })
        .collect();
    State {
        clusters,
        listeners: res.listeners.iter().map(|l| to_files(l, dir)).collect(),
        routes: res.routes,
        secrets: res.secrets,
    }
}

/// `m` with every ADS config source replaced by the file its field reads.
fn to_files<M: Message + prost::Name + Default>(m: &M, dir: &Path) -> M {
    fn walk(v: &mut Value, key: &str, dir: &Path) {
        match v {
            Value::Object(map) => {
                if map.contains_key("ads") {
                    let file = match key {
                        "config_source" => "rds.pb",
                        "sds_config" => "sds.pb",
                        other => panic!("an ADS config source under {other:?}"),
                    };
                    map.remove("ads");
                    map.insert("path_config_source".into(), path_source(dir, file));
                    return;
                }
                for (k, child) in map.iter_mut() {
                    walk(child, k, dir);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, key, dir)),
            _ => {}
        }
    }
    let mut v = render::to_json(m);
    walk(&mut v, "", dir);
    render::from_json(&v).expect("a rewritten resource is still valid")
}

/// `dir/<type>/<type>.pb`, each type in a directory of its own: a watched directory reloads every
/// subscription watching it on any move into it, and a change to the routes must not reload the listeners.
fn path_source(dir: &Path, file: &str) -> Value {
    let sub = dir.join(file.trim_end_matches(".pb"));
    json!({ "path": sub.join(file).display().to_string(), "watched_directory": { "path": sub.display().to_string() } })
}

/// Writes `bytes` as `file` in its type's directory (see [`path_source`]).
fn write(dir: &Path, file: &str, bytes: &[u8]) {
    let sub = dir.join(file.trim_end_matches(".pb"));
    std::fs::create_dir_all(&sub).expect("a type directory");
    put(&sub, file, bytes);
}

fn response<M: Message + prost::Name + Clone>(version: usize, items: &[M]) -> Vec<u8> {
    DiscoveryResponse {
        version_info: version.to_string(),
        resources: items.iter().map(|m| envoy_types::util::pack_any(m.clone())).collect(),
        type_url: M::type_url(),
        ..Default::default()
    }
    .encode_to_vec()
}

/// The `floor-split` listener: a copy of the HTTP listener on `port` whose route configuration is
/// `split`, read from `rds-split.pb`. Returns it and the name of the route configuration it replaced.
fn split_listener(http: &listener::Listener, port: u16, dir: &Path) -> (listener::Listener, String) {
    fn walk(v: &mut Value, dir: &Path, replaced: &mut Option<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(rds)) = map.get_mut("rds") {
                    *replaced = rds.get("route_config_name").and_then(Value::as_str).map(str::to_string);
                    rds.insert("route_config_name".into(), json!("split"));
                    rds.insert(
                        "config_source".into(),
                        json!({ "path_config_source": path_source(dir, "rds-split.pb"), "resource_api_version": "V3" }),
                    );
                    return;
                }
                map.values_mut().for_each(|c| walk(c, dir, replaced));
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, dir, replaced)),
            _ => {}
        }
    }
    let mut v = render::to_json(http);
    v["name"] = json!("split");
    v["address"]["socket_address"]["port_value"] = json!(port);
    let mut replaced = None;
    walk(&mut v, dir, &mut replaced);
    let l = render::from_json(&v).expect("the split listener is valid");
    (l, replaced.expect("the HTTP listener reads its routes over RDS"))
}

/// The `split` route configuration: the virtual hosts of `from` that serve the benchmark's new routes.
fn split_routes(routes: &[route::RouteConfiguration], from: &str) -> route::RouteConfiguration {
    let big = routes
        .iter()
        .find(|r| r.name == from)
        .expect("the HTTP listener's route configuration");
    route::RouteConfiguration {
        name: "split".into(),
        virtual_hosts: big
            .virtual_hosts
            .iter()
            .filter(|v| v.domains.iter().any(|d| d.starts_with("new-")))
            .cloned()
            .collect(),
        ..big.clone()
    }
}

/// The floor for `samples` new routes with `n` present; with `split`, each new route arrives in a small
/// route configuration of its own (see the module doc).
pub async fn floor_run(
    envoy_bin: &Path,
    n: usize,
    samples: usize,
    ups: &Upstreams,
    split: bool,
    one_vhost: bool,
) -> Vec<Duration> {
    let work = tempfile::tempdir().expect("work dir");
    let dir = work.path().join("xds");
    std::fs::create_dir_all(&dir).expect("xds dir");
    let mut w = Workload::new(n);
    w.port = free_port(Ipv4Addr::LOCALHOST);
    w.one_vhost = one_vhost;
    let mut files = w.files();
    files.push(("shared.yaml".into(), shared_backend(ups.a.addr)));
    files.push(("warm.yaml".into(), shaped_route(999_999, one_vhost)));
    let s = state(&files, &dir);
    write(&dir, "sds.pb", &response(0, &s.secrets));
    write(&dir, "rds.pb", &response(0, &s.routes));
    write(&dir, "cds.pb", &response(0, &s.clusters));
    let mut listeners = s.listeners.clone();
    let mut split_from = None;
    let mut port = w.port;
    if split {
        port = free_port(Ipv4Addr::LOCALHOST);
        let http = s
            .listeners
            .iter()
            .find(|l| render::to_json(*l)["address"]["socket_address"]["port_value"] == json!(w.port))
            .expect("the workload's HTTP listener");
        let (l, from) = split_listener(http, port, &dir);
        write(&dir, "rds-split.pb", &response(0, &[split_routes(&s.routes, &from)]));
        listeners.push(l);
        split_from = Some(from);
    }
    write(&dir, "lds.pb", &response(0, &listeners));
    let boot = json!({
        "node": { "id": "floor", "cluster": "infra/edge" },
        "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } } },
        "dynamic_resources": {
            "cds_config": { "path_config_source": path_source(&dir, "cds.pb"), "resource_api_version": "V3" },
            "lds_config": { "path_config_source": path_source(&dir, "lds.pb"), "resource_api_version": "V3" },
        },
    });
    let envoy = Envoy::start(envoy_bin, &boot, work.path(), "floor")
        .await
        .expect("starting Envoy");
    envoy.wait_live(Duration::from_secs(300)).await.expect("Envoy LIVE");
    let listener = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let (host, path) = probe(999_999, one_vhost);
    time_until_at(listener, &host, &path, Instant::now(), |r| r.status == 200).await;
    let mut out = Vec::new();
    for k in 0..samples {
        files.push((format!("new-{k}.yaml"), shaped_route(k, one_vhost)));
        let s = state(&files, &dir);
        // A new route to an existing backend changes the route configuration only.
        let (file, rds) = match &split_from {
            Some(from) => ("rds-split.pb", response(k + 1, &[split_routes(&s.routes, from)])),
            None => ("rds.pb", response(k + 1, &s.routes)),
        };
        let t0 = Instant::now();
        write(&dir, file, &rds);
        let (host, path) = probe(k, one_vhost);
        out.push(time_until_at(listener, &host, &path, t0, |r| r.status == 200).await);
    }
    drop(envoy);
    out
}
