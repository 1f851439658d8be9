//! Scenario 11a: HTTPRoute matching and Gateway API precedence through a real Envoy. One Gateway, several
//! HTTPRoutes, one upstream per rule (so the upstream that answers names the rule that matched):
//!
//! - an `Exact` path beats a `PathPrefix` of the same path; the longer of two prefixes wins;
//! - prefixes match whole segments: `/abc` takes `/abc` and `/abc/d`, never `/abcd`;
//! - a method match beats the same path without one; two header matches beat one (names case-insensitive);
//! - a query-parameter match takes only the requests carrying the parameter's value;
//! - two routes with the same match: the older (`creationTimestamp`) wins, even though its name sorts last,
//!   and once it is deleted the other takes over;
//! - a trailing `/` of a prefix is ignored (`/trail/` takes `/trail`, not `/trailer`); a RegularExpression
//!   path must match the whole path, and a header may be matched by a RegularExpression; of two header
//!   matches with one name only the first counts; paths and query-parameter names are case-sensitive; a
//!   query parameter may be matched by a RegularExpression; a method beats headers, a header beats query
//!   parameters;
//! - hostnames come before paths: a route for the exact request host beats one for a wildcard, which beats
//!   one without hostnames — even when the less specific route has the longer path; a wildcard does not
//!   take its bare domain.
//!
//! Every losing candidate is written where a naive ordering would pick it: in the older route, in the
//! earlier rule, or in the route whose name sorts first. Requests that no specific rule claims fall through
//! to a catch-all `PathPrefix /`.

use pier::testkit::http::{self, Request};
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{HOST, Scene};

both_modes!(run);

/// The rules' upstreams, in the order of their addresses (127.0.0.2 and up).
const UPSTREAMS: [&str; 19] = [
    "fallback",
    "exact",
    "prefix",
    "short",
    "long",
    "abc",
    "any-method",
    "post",
    "one-header",
    "two-headers",
    "query",
    "tie-older",
    "tie-newer",
    "trail",
    "regex",
    "host-exact",
    "host-wild",
    "host-any",
    "first-header",
];

/// A rule with `matches` (a JSON list) forwarding to Service `service`.
fn rule_to(matches: Value, service: &str) -> Value {
    json!({"matches": matches, "backendRefs": [service_ref(service, 80)]})
}

fn path(kind: &str, value: &str) -> Value {
    json!({"path": {"type": kind, "value": value}})
}

fn routes() -> Vec<Value> {
    let prefix = |value: &str| path("PathPrefix", value);
    let with = |mut m: Value, key: &str, extra: Value| {
        m[key] = extra;
        m
    };
    vec![
        created(
            http_route("catch-all", "gw", vec![rule_to(json!([prefix("/")]), "fallback")]),
            "2020-01-01T00:00:00Z",
        ),
        // The losers of the path contests live in the older route: age must not beat specificity.
        created(
            http_route(
                "older-paths",
                "gw",
                vec![
                    rule_to(json!([prefix("/exact")]), "prefix"),
                    rule_to(json!([prefix("/p")]), "short"),
                ],
            ),
            "2021-01-01T00:00:00Z",
        ),
        created(
            http_route(
                "newer-paths",
                "gw",
                vec![
                    rule_to(json!([path("Exact", "/exact")]), "exact"),
                    rule_to(json!([prefix("/p/long")]), "long"),
                    rule_to(json!([prefix("/abc")]), "abc"),
                ],
            ),
            "2022-01-01T00:00:00Z",
        ),
        // Within one route the less specific rule comes first: rule order must not beat specificity.
        created(
            http_route(
                "specifics",
                "gw",
                vec![
                    rule_to(json!([prefix("/method")]), "any-method"),
                    rule_to(json!([with(prefix("/method"), "method", json!("POST"))]), "post"),
                    rule_to(
                        json!([with(prefix("/hdr"), "headers", json!([{"name": "x-a", "value": "1"}]))]),
                        "one-header",
                    ),
                    rule_to(
                        json!([with(
                            prefix("/hdr"),
                            "headers",
                            json!([{"name": "x-a", "value": "1"}, {"name": "X-B", "value": "2"}])
                        )]),
                        "two-headers",
                    ),
                    rule_to(
                        json!([with(
                            prefix("/query"),
                            "queryParams",
                            json!([{"name": "q", "value": "yes"}])
                        )]),
                        "query",
                    ),
                ],
            ),
            "2021-06-01T00:00:00Z",
        ),
        // Same match in two routes: `a-tie-newer` sorts first by name, `z-tie-older` is older and wins.
        created(
            http_route("a-tie-newer", "gw", vec![rule_to(json!([prefix("/tie")]), "tie-newer")]),
            "2023-01-01T00:00:00Z",
        ),
        created(
            http_route("z-tie-older", "gw", vec![rule_to(json!([prefix("/tie")]), "tie-older")]),
            "2020-06-01T00:00:00Z",
        ),
        created(
            http_route(
                "shapes",
                "gw",
                vec![
                    rule_to(json!([prefix("/trail/")]), "trail"),
                    rule_to(json!([path("RegularExpression", "/re/[0-9]+")]), "regex"),
                    rule_to(
                        json!([with(
                            prefix("/hre"),
                            "headers",
                            json!([{"type": "RegularExpression", "name": "x-env", "value": "dev|test"}])
                        )]),
                        "regex",
                    ),
                    // Only the first entry per (case-insensitive) header name counts.
                    rule_to(
                        json!([with(
                            prefix("/dup"),
                            "headers",
                            json!([{"name": "x-dup", "value": "1"}, {"name": "X-Dup", "value": "2"}])
                        )]),
                        "first-header",
                    ),
                    rule_to(
                        json!([with(
                            prefix("/qre"),
                            "queryParams",
                            json!([{"type": "RegularExpression", "name": "v", "value": "[0-9]+"}])
                        )]),
                        "regex",
                    ),
                    // Across the criteria, the less decisive rule first: headers before a method, query
                    // parameters before a header.
                    rule_to(
                        json!([with(
                            prefix("/mix"),
                            "headers",
                            json!([{"name": "x-a", "value": "1"}, {"name": "x-b", "value": "2"}])
                        )]),
                        "two-headers",
                    ),
                    rule_to(json!([with(prefix("/mix"), "method", json!("POST"))]), "post"),
                    rule_to(
                        json!([with(
                            prefix("/mix2"),
                            "queryParams",
                            json!([{"name": "q", "value": "1"}, {"name": "r", "value": "2"}])
                        )]),
                        "query",
                    ),
                    rule_to(
                        json!([with(prefix("/mix2"), "headers", json!([{"name": "x-a", "value": "1"}]))]),
                        "one-header",
                    ),
                ],
            ),
            "2021-01-01T00:00:00Z",
        ),
        // The most specific host gets the newest route and the shortest path.
        created(
            with_hostnames(
                http_route(
                    "host-exact",
                    "gw",
                    vec![rule_to(json!([prefix("/host")]), "host-exact")],
                ),
                &["www.e2e.test"],
            ),
            "2024-01-01T00:00:00Z",
        ),
        created(
            with_hostnames(
                http_route("host-wild", "gw", vec![rule_to(json!([prefix("/host")]), "host-wild")]),
                &["*.e2e.test"],
            ),
            "2023-06-01T00:00:00Z",
        ),
        created(
            http_route(
                "host-any",
                "gw",
                vec![rule_to(json!([prefix("/host/deep")]), "host-any")],
            ),
            "2020-03-01T00:00:00Z",
        ),
    ]
}

fn with_hostnames(mut route: Value, hostnames: &[&str]) -> Value {
    route["spec"]["hostnames"] = json!(hostnames);
    route
}

/// `(request, upstream that must answer it)`.
fn cases() -> Vec<(Request, &'static str)> {
    let get = |path: &str| Request::get(HOST, path);
    vec![
        (get("/exact"), "exact"),
        (get("/exact/sub"), "prefix"),
        (get("/exact/"), "prefix"),
        (get("/EXACT"), "fallback"),
        (get("/p"), "short"),
        (get("/p/other"), "short"),
        (get("/p/long"), "long"),
        (get("/p/long/x"), "long"),
        (get("/p/longer"), "short"),
        (get("/abc"), "abc"),
        (get("/abc/d"), "abc"),
        (get("/abcd"), "fallback"),
        (get("/method"), "any-method"),
        (get("/method").method("POST"), "post"),
        (get("/method").method("PUT"), "any-method"),
        (get("/hdr").header("X-A", "1"), "one-header"),
        (get("/hdr").header("x-a", "1").header("x-b", "2"), "two-headers"),
        (get("/hdr").header("x-a", "1").header("x-b", "3"), "one-header"),
        (get("/hdr").header("x-a", "2").header("x-b", "2"), "fallback"),
        (get("/hdr"), "fallback"),
        (get("/query?q=yes"), "query"),
        (get("/query?x=1&q=yes"), "query"),
        (get("/query?q=no"), "fallback"),
        (get("/query"), "fallback"),
        (get("/query?Q=yes"), "fallback"),
        (get("/tie"), "tie-older"),
        (get("/tie/x"), "tie-older"),
        (get("/trail"), "trail"),
        (get("/trail/"), "trail"),
        (get("/trail/x"), "trail"),
        (get("/trailer"), "fallback"),
        (get("/re/123"), "regex"),
        (get("/re/123/x"), "fallback"),
        (get("/re/abc"), "fallback"),
        (get("/hre").header("x-env", "test"), "regex"),
        (get("/hre").header("x-env", "prod"), "fallback"),
        (get("/dup").header("x-dup", "1"), "first-header"),
        (get("/dup").header("x-dup", "2"), "fallback"),
        (get("/qre?v=42"), "regex"),
        (get("/qre?v=x"), "fallback"),
        (get("/mix").method("POST").header("x-a", "1").header("x-b", "2"), "post"),
        (get("/mix").header("x-a", "1").header("x-b", "2"), "two-headers"),
        (get("/mix2?q=1&r=2").header("x-a", "1"), "one-header"),
        (get("/mix2?q=1&r=2"), "query"),
        (get("/host/deep"), "host-exact"),
        (Request::get("api.e2e.test", "/host/deep"), "host-wild"),
        (Request::get("a.b.e2e.test", "/host"), "host-wild"),
        (Request::get("e2e.test", "/host/deep"), "host-any"),
        (Request::get("e2e.test", "/host"), "fallback"),
        (Request::get("other.test", "/host/deep/x"), "host-any"),
        (Request::get("api.e2e.test", "/tie"), "tie-older"),
    ]
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s11-matching", mode).await;
    let mut upstreams = Vec::new();
    let mut docs = vec![gateway_class(), gateway("gw", scene.port)];
    for (i, name) in UPSTREAMS.iter().enumerate() {
        let up = Upstream::http(name, lo(2 + i as u8)).await;
        docs.extend(service_at(name, &up.ip(), up.port()));
        upstreams.push(up);
    }
    docs.extend(routes());
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    // One route configuration carries every rule, and LIVE means every cluster warmed: once the catch-all
    // answers, every case is decided.
    scene.wait_for_upstream("/", "fallback").await;

    let mut wrong = Vec::new();
    for (request, want) in cases() {
        let r = http::send(scene.listener(), &request)
            .await
            .unwrap_or_else(|e| panic!("{} {}: {e}", request.method, request.path));
        if r.status != 200 || r.upstream() != Some(want) {
            wrong.push(format!(
                "{} {}{} {:?}: want {want}, got status {} from {:?}",
                request.method,
                request.host,
                request.path,
                request.headers,
                r.status,
                r.upstream()
            ));
        }
    }
    assert!(wrong.is_empty(), "misrouted requests:\n{}", wrong.join("\n"));

    // The upstreams saw the requests as sent (matching rewrote nothing).
    let post = &upstreams[UPSTREAMS.iter().position(|n| *n == "post").unwrap()];
    let seen: Vec<(String, String)> = post.requests().into_iter().map(|s| (s.method, s.path)).collect();
    assert_eq!(
        seen,
        [("POST".into(), "/method".into()), ("POST".into(), "/mix".into())]
    );
    let query = &upstreams[UPSTREAMS.iter().position(|n| *n == "query").unwrap()];
    let paths: Vec<String> = query.requests().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/query?q=yes", "/query?x=1&q=yes", "/mix2?q=1&r=2"]);
    let newer = &upstreams[UPSTREAMS.iter().position(|n| *n == "tie-newer").unwrap()];
    assert!(newer.requests().is_empty(), "the newer tied route received traffic");

    // The older tied route deleted: its rival takes over once the new route configuration arrives.
    let without_older: Vec<Value> = docs
        .into_iter()
        .filter(|d| d["metadata"]["name"] != "z-tie-older")
        .collect();
    scene.write("00-gateway.yaml", &without_older);
    scene.wait_for_upstream("/tie", "tie-newer").await;
}
