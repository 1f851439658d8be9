//! Scenario 11f: HTTP listener isolation (the traffic half of upstream's GatewayHTTPListenerIsolation). Four
//! HTTP listeners share one port and differ by hostname — none, `*.e2e.test`, `*.foo.e2e.test`,
//! `abc.foo.e2e.test` — and each has its own route (attached by `sectionName`) on its own path. A request is
//! served by the most specific listener its Host matches and only by that listener's routes: a path another
//! listener's route would take gets 404, even when that other listener's hostname also matches the Host.
//! A route whose hostnames reach beyond its listener's serves only the part inside (Gateway API: route
//! hostnames that do not match the listener are ignored).

use pier::testkit::http::outcome;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::Scene;

both_modes!(run);

/// `(listener name, listener hostname, its route's path prefix and upstream)`.
const LISTENERS: [(&str, Option<&str>, &str); 4] = [
    ("empty", None, "empty"),
    ("wild", Some("*.e2e.test"), "wild"),
    ("foo-wild", Some("*.foo.e2e.test"), "foo-wild"),
    ("abc", Some("abc.foo.e2e.test"), "abc"),
];

fn gateway(port: u16) -> Value {
    let listeners: Vec<Value> = LISTENERS
        .iter()
        .map(|(name, hostname, _)| {
            let mut l = json!({"name": name, "protocol": "HTTP", "port": port});
            if let Some(hostname) = hostname {
                l["hostname"] = json!(hostname);
            }
            l
        })
        .collect();
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS, "generation": 1},
        "spec": {"gatewayClassName": "pier", "listeners": listeners}})
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s11-isolation", mode).await;
    // Kept until the end: dropping an upstream stops it.
    let mut upstreams = Vec::new();
    let mut docs = vec![gateway_class(), gateway(scene.port)];
    for (i, (listener, _, name)) in LISTENERS.iter().enumerate() {
        let up = Upstream::http(name, lo(2 + i as u8)).await;
        docs.extend(service_at(name, &up.ip(), up.port()));
        let mut route = http_route(name, "gw", vec![rule(&format!("/{name}"), vec![service_ref(name, 80)])]);
        route["spec"]["parentRefs"][0]["sectionName"] = json!(listener);
        docs.push(route);
        upstreams.push(up);
    }
    // A route on the `*.e2e.test` listener whose hostnames reach outside it: `outside.test` is ignored.
    let inter = Upstream::http("inter", lo(6)).await;
    docs.extend(service_at("inter", &inter.ip(), inter.port()));
    let mut route = http_route("inter", "gw", vec![rule("/inter", vec![service_ref("inter", 80)])]);
    route["spec"]["parentRefs"][0]["sectionName"] = json!("wild");
    route["spec"]["hostnames"] = json!(["inter.e2e.test", "outside.test"]);
    docs.push(route);
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    // The suite's Host (www.e2e.test) belongs to the `*.e2e.test` listener.
    scene.wait_for_upstream("/wild", "wild").await;

    // `(Host, path, upstream or the status Envoy answers itself)`.
    let cases = [
        ("other.test", "/empty", "empty"),
        ("x.e2e.test", "/wild", "wild"),
        ("a.b.e2e.test", "/wild", "wild"),
        ("x.foo.e2e.test", "/foo-wild", "foo-wild"),
        ("abc.foo.e2e.test", "/abc", "abc"),
        // Isolation: the Host's own listener has no such route.
        ("x.e2e.test", "/empty", "status:404"),
        ("other.test", "/wild", "status:404"),
        ("x.foo.e2e.test", "/wild", "status:404"),
        ("x.foo.e2e.test", "/empty", "status:404"),
        ("abc.foo.e2e.test", "/foo-wild", "status:404"),
        ("abc.foo.e2e.test", "/wild", "status:404"),
        ("abc.foo.e2e.test", "/empty", "status:404"),
        ("x.e2e.test", "/abc", "status:404"),
        // Hostname intersection: the route serves its hostname inside the listener's, and only that one.
        ("inter.e2e.test", "/inter", "inter"),
        ("x.e2e.test", "/inter", "status:404"),
        ("outside.test", "/inter", "status:404"),
    ];
    let mut wrong = Vec::new();
    for (host, path, want) in cases {
        let got = outcome(&pier::testkit::http::get(scene.listener(), host, path).await);
        if got != want {
            wrong.push(format!("Host {host} {path}: want {want}, got {got}"));
        }
    }
    assert!(wrong.is_empty(), "listener isolation broken:\n{}", wrong.join("\n"));
}
