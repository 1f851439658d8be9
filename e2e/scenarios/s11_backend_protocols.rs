//! Scenario 11c: how an HTTPRoute's backends are reached. First WebSocket upgrades (the traffic half of
//! upstream's HTTPRouteBackendProtocolWebSocket). A client asks for `Upgrade: websocket`; the upstream answers
//! `101 Switching Protocols` and then echoes bytes, so an echo that comes back proves Envoy both forwarded the
//! upgrade and switched the connection to a byte stream. Checked for a Service port with `appProtocol:
//! kubernetes.io/ws` and for one without `appProtocol`; the upstream sees an HTTP/1.1 upgrade request, and a
//! plain request on the same route is still served normally. Also the traffic half of HTTPRouteWeight's
//! weight 0: a backendRef weighted 0 beside one weighted 1 receives nothing; and a Service whose only
//! endpoint is not ready answers 503 (Gateway API's SHOULD), without reaching it.

use pier::testkit::http::{self, tally};
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::json;

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{HOST, Scene};

both_modes!(run);

async fn run(mode: Mode) {
    let mut scene = Scene::new("s11-protocols", mode).await;
    let declared = Upstream::http("ws-declared", lo(2)).await;
    let undeclared = Upstream::http("ws-undeclared", lo(3)).await;
    let mut docs = vec![gateway_class(), gateway("gw", scene.port)];
    let [mut ws_service, ws_slice] = service_at(&declared.name, &declared.ip(), declared.port());
    ws_service["spec"]["ports"][0]["appProtocol"] = json!("kubernetes.io/ws");
    docs.extend([ws_service, ws_slice]);
    docs.extend(service_at(&undeclared.name, &undeclared.ip(), undeclared.port()));
    let zero = Upstream::http("weight-zero", lo(4)).await;
    docs.extend(service_at(&zero.name, &zero.ip(), zero.port()));
    let unready = Upstream::http("unready", lo(5)).await;
    docs.push(service("unready", "http", 80));
    docs.push(endpoint_slice(
        "unready-1",
        "unready",
        "http",
        unready.port(),
        &[(&unready.ip(), false)],
    ));
    docs.push(http_route(
        "ws",
        "gw",
        vec![
            rule("/declared", vec![service_ref("ws-declared", 80)]),
            rule("/undeclared", vec![service_ref("ws-undeclared", 80)]),
            rule("/unready", vec![service_ref("unready", 80)]),
            rule(
                "/zero",
                vec![
                    weighted(service_ref("weight-zero", 80), 0),
                    weighted(service_ref("ws-undeclared", 80), 1),
                ],
            ),
        ],
    ));
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/declared", "ws-declared").await;
    scene.wait_for_upstream("/undeclared", "ws-undeclared").await;

    for upstream in [&declared, &undeclared] {
        let path = format!("/{}/socket", upstream.name.trim_start_matches("ws-"));
        let payload = format!("bytes for {} through Envoy", upstream.name);
        let (head, echoed) = http::upgrade_echo(scene.listener(), HOST, &path, payload.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            (head.status, head.upstream()),
            (101, Some(upstream.name.as_str())),
            "{path}: {head:?}"
        );
        assert_eq!(String::from_utf8_lossy(&echoed), payload, "{path}: the echo");
        let seen = upstream.requests();
        let upgrade = seen
            .iter()
            .find(|s| s.path == path)
            .unwrap_or_else(|| panic!("{path} never reached {}: {seen:?}", upstream.name));
        assert_eq!(
            (upgrade.version.as_str(), upgrade.header("upgrade")),
            ("HTTP/1.1", Some("websocket")),
            "{path}: what {} saw",
            upstream.name
        );
    }

    let t = tally(scene.listener(), HOST, "/zero", 20).await;
    assert_eq!(t.get("ws-undeclared"), 20, "weight 0 beside weight 1: {t}");
    assert!(zero.requests().is_empty(), "the weight-0 backend received traffic");

    let r = scene.get("/unready").await.unwrap();
    assert_eq!(
        (r.status, r.upstream()),
        (503, None),
        "a Service without ready endpoints: {r:?}"
    );
    assert!(unready.requests().is_empty(), "the not-ready endpoint received traffic");
}
