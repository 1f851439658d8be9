//! Scenario 14: Envoy resolves every name pier hands it as absolute. Envoy runs with a Pod's resolver
//! settings — the search list `svc.cluster.local` and `ndots:5`, which c-ares reads from LOCALDOMAIN and
//! RES_OPTIONS as it would from a Pod's resolv.conf — so a short name like `api.e2e.test` would be tried
//! as `api.e2e.test.svc.cluster.local` first. The test's DNS answers that completion with an "internal"
//! upstream and the name itself with the "external" one. Traffic must reach the external upstream only,
//! and the completion must never be asked for.
//!
//! A control cluster in the same bootstrap, with search domains left on, shows the settings are live:
//! its single-label name is completed through the search list, so the test could fail.

use std::net::SocketAddr;
use std::time::Duration;

use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::Scene;
use crate::harness::{Mode, eventually};

both_modes!(run);

const SEARCH: &str = "svc.cluster.local";

async fn run(mode: Mode) {
    let mut scene = Scene::new("s14", mode).await;
    let external = Upstream::http("external", lo(4)).await;
    // The same port on another address: a completed name would reach it, and only the address differs.
    let internal = Upstream::bind("internal", SocketAddr::from((lo(3), external.port())), None)
        .await
        .expect("binding the internal upstream");
    scene.dns.set(&format!("api.e2e.test.{SEARCH}"), &[lo(3)]);
    scene.dns.set(&format!("control.{SEARCH}"), &[lo(3)]);
    scene.dns.set("api.e2e.test", &[lo(4)]);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            xbackend_hostname("api", "api.e2e.test", external.port(), None),
            http_route("egress", "gw", vec![rule("/api", vec![xbackend_ref("api")])]),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    let dns = scene.dns.addr;
    let env = [("LOCALDOMAIN", SEARCH), ("RES_OPTIONS", "ndots:5")];
    scene
        .start_envoy_with(
            "default/gw",
            |boot| add_control_cluster(boot, dns, internal.port()),
            &env,
        )
        .await;

    scene.wait_for_upstream("/api", "external").await;
    for _ in 0..5 {
        let r = scene.get("/api").await.expect("a response");
        assert_eq!(r.upstream(), Some("external"), "{r:?}");
    }
    assert_eq!(internal.connections(), 0, "a search-domain completion was connected to");
    assert_eq!(
        scene.dns.queries(&format!("api.e2e.test.{SEARCH}")),
        0,
        "the name was completed"
    );

    // The control: the same resolver settings do complete a name when search domains are on.
    eventually(
        "the control cluster's name is completed through the search list",
        Duration::from_secs(20),
        || async {
            let asked = scene.dns.queries(&format!("control.{SEARCH}"));
            if asked > 0 {
                Ok(())
            } else {
                Err("not asked yet".to_string())
            }
        },
    )
    .await;
}

/// A STRICT_DNS cluster for the single label `control`, resolved by the test's DNS with search domains
/// left on (c-ares' default).
fn add_control_cluster(boot: &mut Value, dns: std::net::SocketAddr, port: u16) {
    let cluster = json!({
        "name": "search-control",
        "type": "STRICT_DNS",
        "connect_timeout": "1s",
        "dns_refresh_rate": "1s",
        "typed_dns_resolver_config": {
            "name": "envoy.network.dns_resolver.cares",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
                "resolvers": [{ "socket_address": { "address": dns.ip().to_string(), "port_value": dns.port(), "protocol": "UDP" } }],
                "use_resolvers_as_fallback": false,
            }
        },
        "load_assignment": {
            "cluster_name": "search-control",
            "endpoints": [{ "lb_endpoints": [{ "endpoint": { "address": { "socket_address": {
                "address": "control", "port_value": port
            } } } }] }]
        }
    });
    boot["static_resources"]["clusters"]
        .as_array_mut()
        .expect("the bootstrap's static clusters")
        .push(cluster);
}
