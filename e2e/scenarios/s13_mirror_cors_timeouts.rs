//! Scenario 13: the HTTPRoute rule features that act on the request's way through Envoy:
//!
//! - `RequestMirror` (percent 100): the client gets the primary's answer and the mirror upstream receives a
//!   copy of every request (path and headers), which nobody waits for;
//! - `CORS`: a preflight from an allowed origin is answered by Envoy with the allow headers (the upstream never
//!   sees it); from another origin it gets none; a simple request from an allowed origin carries the
//!   allow-origin and expose headers on the upstream's answer; a `https://*.e2e.test` origin takes
//!   subdomains (one label or more), not `https://e2e.test` nor `http://` origins, and allows credentials;
//!   a preflight to a route without CORS is forwarded like any request and gets no allow headers;
//! - a mirror to a missing Service is left out and the request still served;
//! - `timeouts.backendRequest` and `timeouts.request` against an upstream that holds its answer back (the
//!   testkit's `delay/<ms>`, far longer than the timeout): 504 from Envoy, after the request reached it;
//! - `retry` (codes 503): an upstream that fails the first attempt (`fail-once/<key>`) is asked again and the
//!   client gets its 200; the same upstream without `retry` gives the client the 503; with `retry` and
//!   `timeouts.backendRequest` (upstream's HTTPRouteRetryWithTimeouts), a try the timeout cuts short
//!   (`delay-once/<key>`) is retried and the second try's 200 reaches the client.

use pier::testkit::http::{self, Request};
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// How long the slow upstream holds a timed-out request: far beyond the 500 ms timeouts, well within the
/// client's own request timeout.
const HOLD_MS: u64 = 5000;
const ALLOWED_ORIGIN: &str = "https://app.e2e.test";

fn with(mut rule: Value, key: &str, value: Value) -> Value {
    rule[key] = value;
    rule
}

fn feature_route() -> Value {
    http_route(
        "features",
        "gw",
        vec![
            with(
                rule("/mirror", vec![service_ref("primary", 80)]),
                "filters",
                json!([{"type": "RequestMirror", "requestMirror": {
                    "backendRef": service_ref("shadow", 80), "percent": 100}}]),
            ),
            with(
                rule("/cors", vec![service_ref("cors", 80)]),
                "filters",
                json!([{"type": "CORS", "cors": {
                    "allowOrigins": [ALLOWED_ORIGIN],
                    "allowMethods": ["GET", "PUT"],
                    "allowHeaders": ["x-custom"],
                    "exposeHeaders": ["x-exposed"],
                    "maxAge": 60}}]),
            ),
            with(
                rule("/cors-wild", vec![service_ref("cors", 80)]),
                "filters",
                json!([{"type": "CORS", "cors": {
                    "allowOrigins": ["https://*.e2e.test"],
                    "allowMethods": ["GET"],
                    "allowCredentials": true}}]),
            ),
            with(
                rule("/mirror-missing", vec![service_ref("primary", 80)]),
                "filters",
                json!([{"type": "RequestMirror", "requestMirror": {"backendRef": service_ref("gone", 80)}}]),
            ),
            with(
                rule("/backend-timeout", vec![service_ref("slow", 80)]),
                "timeouts",
                json!({"backendRequest": "500ms"}),
            ),
            with(
                rule("/request-timeout", vec![service_ref("slow", 80)]),
                "timeouts",
                json!({"request": "500ms"}),
            ),
            with(
                rule("/retry", vec![service_ref("flaky", 80)]),
                "retry",
                json!({"attempts": 2, "codes": [503]}),
            ),
            rule("/no-retry", vec![service_ref("flaky", 80)]),
            // HTTPRouteRetryWithTimeouts' first rule: a try cut by backendRequest is retried.
            with(
                with(
                    rule("/retry-timeout", vec![service_ref("slow", 80)]),
                    "retry",
                    json!({"attempts": 2}),
                ),
                "timeouts",
                json!({"backendRequest": "500ms"}),
            ),
        ],
    )
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s13", mode).await;
    let primary = Upstream::http("primary", lo(2)).await;
    let shadow = Upstream::http("shadow", lo(3)).await;
    let cors = Upstream::http("cors", lo(4)).await;
    let slow = Upstream::http("slow", lo(5)).await;
    let flaky = Upstream::http("flaky", lo(6)).await;
    let mut docs = vec![gateway_class(), gateway("gw", scene.port)];
    for up in [&primary, &shadow, &cors, &slow, &flaky] {
        docs.extend(service_at(&up.name, &up.ip(), up.port()));
    }
    docs.push(feature_route());
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/mirror/warm-up", "primary").await;
    let listener = scene.listener();

    // RequestMirror: the primary answers, the shadow gets a copy of each request.
    const MIRRORED: usize = 5;
    for i in 0..MIRRORED {
        let request = Request::get(HOST, &format!("/mirror/{i}")).header("x-probe", &i.to_string());
        let r = http::send(listener, &request).await.unwrap();
        assert_eq!(
            (r.status, r.upstream(), r.body.as_str()),
            (200, Some("primary"), "primary\n")
        );
    }
    let copies = eventually("the shadow saw every mirrored request", CONVERGE, || async {
        let seen: Vec<_> = shadow
            .requests()
            .into_iter()
            .filter(|s| s.path != "/mirror/warm-up")
            .collect();
        if seen.len() >= MIRRORED {
            Ok(seen)
        } else {
            Err(format!("{} of {MIRRORED}: {seen:?}", seen.len()))
        }
    })
    .await;
    let mut copies: Vec<(String, Option<String>)> = copies
        .into_iter()
        .map(|s| (s.path.clone(), s.header("x-probe").map(str::to_string)))
        .collect();
    copies.sort();
    let want: Vec<(String, Option<String>)> = (0..MIRRORED)
        .map(|i| (format!("/mirror/{i}"), Some(i.to_string())))
        .collect();
    assert_eq!(copies, want, "one copy of each request, as sent");
    assert_eq!(
        primary
            .requests()
            .iter()
            .filter(|s| s.path != "/mirror/warm-up")
            .count(),
        MIRRORED,
        "the primary served each request once"
    );

    // CORS: Envoy answers an allowed preflight itself.
    let preflight = |origin: &str| {
        Request::get(HOST, "/cors/x")
            .method("OPTIONS")
            .header("origin", origin)
            .header("access-control-request-method", "PUT")
            .header("access-control-request-headers", "x-custom")
    };
    let r = http::send(listener, &preflight(ALLOWED_ORIGIN)).await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, None), "allowed preflight: {r:?}");
    assert_eq!(r.header("access-control-allow-origin"), Some(ALLOWED_ORIGIN), "{r:?}");
    assert_eq!(r.header("access-control-allow-methods"), Some("GET,PUT"), "{r:?}");
    assert_eq!(r.header("access-control-allow-headers"), Some("x-custom"), "{r:?}");
    assert_eq!(r.header("access-control-max-age"), Some("60"), "{r:?}");
    assert!(
        cors.requests().is_empty(),
        "the upstream saw the preflight: {:?}",
        cors.requests()
    );
    let r = http::send(listener, &preflight("https://evil.e2e.test")).await.unwrap();
    for name in [
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-allow-headers",
        "access-control-max-age",
    ] {
        assert_eq!(r.header(name), None, "disallowed origin got {name}: {r:?}");
    }
    let simple = Request::get(HOST, "/cors/simple").header("origin", ALLOWED_ORIGIN);
    let r = http::send(listener, &simple).await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("cors")), "{r:?}");
    assert_eq!(r.header("access-control-allow-origin"), Some(ALLOWED_ORIGIN), "{r:?}");
    assert_eq!(r.header("access-control-expose-headers"), Some("x-exposed"), "{r:?}");

    // A wildcard origin takes subdomains of any depth, not the bare domain nor another scheme; credentials
    // allowed.
    for (origin, allowed) in [
        ("https://a.e2e.test", true),
        ("https://a.b.e2e.test", true),
        ("https://e2e.test", false),
        ("http://a.e2e.test", false),
    ] {
        let request = Request::get(HOST, "/cors-wild/x")
            .method("OPTIONS")
            .header("origin", origin)
            .header("access-control-request-method", "GET");
        let r = http::send(listener, &request).await.unwrap();
        let want = allowed.then_some(origin);
        assert_eq!(r.header("access-control-allow-origin"), want, "{origin}: {r:?}");
        let credentials = allowed.then_some("true");
        assert_eq!(
            r.header("access-control-allow-credentials"),
            credentials,
            "{origin}: {r:?}"
        );
    }

    // A route without CORS: a preflight is just another request, forwarded and answered without allow headers.
    let mut elsewhere = preflight(ALLOWED_ORIGIN);
    elsewhere.path = "/no-retry/preflight".to_string();
    let r = http::send(listener, &elsewhere).await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("flaky")), "{r:?}");
    assert_eq!(r.header("access-control-allow-origin"), None, "{r:?}");

    // A mirror whose backend does not exist is left out; the request is still served.
    let r = scene.get("/mirror-missing/x").await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("primary")), "{r:?}");

    // Timeouts: the request reaches the slow upstream, which holds it; Envoy gives up with 504.
    let r = scene.get("/backend-timeout/fast").await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("slow")), "{r:?}");
    for prefix in ["/backend-timeout", "/request-timeout"] {
        let path = format!("{prefix}/delay/{HOLD_MS}");
        let r = scene.get(&path).await.unwrap();
        assert_eq!((r.status, r.upstream()), (504, None), "{path}: {r:?}");
        assert_eq!(r.body, "upstream request timeout", "{path}");
        let reached = slow.requests().iter().filter(|s| s.path == path).count();
        assert_eq!(reached, 1, "{path}: the timed-out request reached the upstream once");
    }

    // Retry on 503: the second attempt succeeds; without `retry` the 503 goes to the client.
    let r = scene.get("/retry/fail-once/a").await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("flaky")), "{r:?}");
    let attempts = flaky
        .requests()
        .iter()
        .filter(|s| s.path == "/retry/fail-once/a")
        .count();
    assert_eq!(attempts, 2, "one failed attempt, one retry");
    let r = scene.get("/no-retry/fail-once/b").await.unwrap();
    assert_eq!((r.status, r.upstream()), (503, Some("flaky")), "{r:?}");
    let attempts = flaky
        .requests()
        .iter()
        .filter(|s| s.path == "/no-retry/fail-once/b")
        .count();
    assert_eq!(attempts, 1, "no retry without `retry`");

    // Retry after a per-try timeout: the first try is held past backendRequest, the second is answered.
    let path = "/retry-timeout/delay-once/c";
    let r = scene.get(path).await.unwrap();
    let tries = slow.requests().iter().filter(|s| s.path == path).count();
    assert_eq!(
        (r.status, r.upstream(), tries),
        (200, Some("slow"), 2),
        "a try cut by backendRequest is retried: {r:?}"
    );
}
