//! Scenario 11b: HTTPRoute filters through a real Envoy, checked where they take effect — at the client for
//! what Envoy answers itself, at the upstream for what it forwards:
//!
//! - `RequestRedirect`: the status code and `Location` (scheme `https` without a port → no port in
//!   `Location`, scheme `http` likewise even though the listener is not on 80, an explicit port kept; a
//!   hostname-only or path-only redirect keeps the scheme `http` and carries the listener's port; a full-path
//!   replacement keeps the query; prefix replacements as the URLRewrite table below); the upstream never
//!   sees a redirected request;
//! - `URLRewrite`: the upstream sees the rewritten Host and path: the full path replaced (query kept), and
//!   prefixes replaced exactly as the `ReplacePrefixMatch` table in Gateway API's `HTTPPathModifier` doc
//!   says (trailing slashes on either side, empty and `/` replacements);
//! - `RequestHeaderModifier`: the upstream sees the set header overwritten, the added one appended after the
//!   client's, the removed one gone and the others untouched; `ResponseHeaderModifier`: the client sees
//!   the upstream's header overwritten, one added and one removed;
//! - a backendRef's own RequestHeaderModifier reaches that backend;
//! - a rule without backendRefs answers 500.

use pier::testkit::http::{self, Request};
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{HOST, Scene};

both_modes!(run);

fn redirect(prefix: &str, redirect: Value) -> Value {
    let mut r = rule(prefix, vec![service_ref("plain", 80)]);
    r["filters"] = json!([{"type": "RequestRedirect", "requestRedirect": redirect}]);
    r
}

fn rewrite(prefix: &str, url_rewrite: Value) -> Value {
    let mut r = rule(prefix, vec![service_ref("rewrite", 80)]);
    r["filters"] = json!([{"type": "URLRewrite", "urlRewrite": url_rewrite}]);
    r
}

fn header_rules() -> Value {
    let mut r = rule("/headers", vec![service_ref("headers", 80)]);
    r["filters"] = json!([
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {
            "set": [{"name": "x-set", "value": "set-by-route"}],
            "add": [{"name": "x-add", "value": "added-by-route"}],
            "remove": ["x-remove"]}},
        {"type": "ResponseHeaderModifier", "responseHeaderModifier": {
            "set": [{"name": "content-type", "value": "application/x-e2e"}],
            "add": [{"name": "x-resp-add", "value": "added-to-response"}],
            "remove": ["x-upstream"]}},
    ]);
    r
}

/// The rows of the `ReplacePrefixMatch` table in Gateway API's `HTTPPathModifier` doc: `(match prefix,
/// replacement)`, one rule each, `foo` spelled `p1`..`p6` so that every row has its own prefix.
const PREFIX_TABLE: [(&str, &str); 6] = [
    ("/p1", "/xyz"),
    ("/p2", "/xyz/"),
    ("/p3/", "/xyz"),
    ("/p4/", "/xyz/"),
    ("/p5", ""),
    ("/p6", "/"),
];

/// `(request path, path the upstream must see)` for [`PREFIX_TABLE`], as that doc's table has them.
const PREFIX_CASES: [(&str, &str); 12] = [
    ("/p1/bar", "/xyz/bar"),
    ("/p1", "/xyz"),
    ("/p1/", "/xyz/"),
    ("/p2/bar", "/xyz/bar"),
    ("/p3/bar", "/xyz/bar"),
    ("/p4/bar", "/xyz/bar"),
    ("/p5/bar", "/bar"),
    ("/p5/", "/"),
    ("/p5", "/"),
    ("/p6/", "/"),
    ("/p6", "/"),
    ("/p6/bar?k=v", "/bar?k=v"),
];

/// [`PREFIX_TABLE`]'s prefixes for the redirect rules: `/p1` → `/r1`.
fn redirect_prefix(path: &str) -> String {
    path.replacen("/p", "/r", 1)
}

fn filter_route() -> Value {
    let prefix_rewrites = PREFIX_TABLE.iter().map(|(prefix, replacement)| {
        rewrite(
            prefix,
            json!({"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": replacement}}),
        )
    });
    // The same table for redirects: the Location carries the modified path.
    let prefix_redirects = PREFIX_TABLE.iter().map(|(prefix, replacement)| {
        redirect(
            &redirect_prefix(prefix),
            json!({"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": replacement}}),
        )
    });
    let mut per_backend = rule("/per-backend", vec![service_ref("headers", 80)]);
    per_backend["backendRefs"][0]["filters"] = json!([{"type": "RequestHeaderModifier",
        "requestHeaderModifier": {"set": [{"name": "x-backend-filter", "value": "applied"}]}}]);
    http_route(
        "filters",
        "gw",
        prefix_rewrites
            .chain(prefix_redirects)
            .chain(vec![
                per_backend,
                redirect("/to-https", json!({"scheme": "https", "statusCode": 301})),
                redirect("/moved", json!({"hostname": "new.e2e.test", "statusCode": 302})),
                redirect(
                    "/old",
                    json!({"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/landing"}}),
                ),
                redirect(
                    "/gone",
                    json!({"path": {"type": "ReplaceFullPath", "replaceFullPath": "/target"}, "statusCode": 301}),
                ),
                redirect("/to-http", json!({"scheme": "http", "statusCode": 308})),
                redirect("/to-8443", json!({"scheme": "https", "port": 8443})),
                rewrite(
                    "/rewrite",
                    json!({"hostname": "rewritten.e2e.test",
                    "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/new"}}),
                ),
                rewrite(
                    "/full",
                    json!({"path": {"type": "ReplaceFullPath", "replaceFullPath": "/replaced"}}),
                ),
                header_rules(),
                json!({"matches": [{"path": {"type": "PathPrefix", "value": "/nobackends"}}]}),
                rule("/", vec![service_ref("plain", 80)]),
            ])
            .collect(),
    )
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s11-filters", mode).await;
    let plain = Upstream::http("plain", lo(2)).await;
    let rewritten = Upstream::http("rewrite", lo(3)).await;
    let headers = Upstream::http("headers", lo(4)).await;
    let mut docs = vec![gateway_class(), gateway("gw", scene.port)];
    for up in [&plain, &rewritten, &headers] {
        docs.extend(service_at(&up.name, &up.ip(), up.port()));
    }
    docs.push(filter_route());
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    scene.wait_for_upstream("/", "plain").await;
    let port = scene.port;

    // RequestRedirect: Envoy answers; Location per Gateway API's port rules.
    let redirects = [
        ("/to-https/page", 301, "https://www.e2e.test/to-https/page".to_string()),
        ("/moved/page", 302, format!("http://new.e2e.test:{port}/moved/page")),
        ("/old/page", 302, format!("http://www.e2e.test:{port}/landing/page")),
        ("/gone/a/b?k=v", 301, format!("http://www.e2e.test:{port}/target?k=v")),
        ("/to-http/page", 308, "http://www.e2e.test/to-http/page".to_string()),
        (
            "/to-8443/page",
            302,
            "https://www.e2e.test:8443/to-8443/page".to_string(),
        ),
    ];
    for (path, status, location) in &redirects {
        let r = scene.get(path).await.unwrap();
        assert_eq!(
            (r.status, r.header("location"), r.upstream()),
            (*status, Some(location.as_str()), None),
            "redirect {path}: {r:?}"
        );
    }
    let mut wrong = Vec::new();
    for (path, want) in PREFIX_CASES {
        let path = redirect_prefix(path);
        let location = format!("http://www.e2e.test:{port}{want}");
        let r = scene.get(&path).await.unwrap();
        if (r.status, r.header("location")) != (302, Some(location.as_str())) {
            wrong.push(format!(
                "{path}: want 302 to {location}, got {} to {:?}",
                r.status,
                r.header("location")
            ));
        }
    }
    assert!(wrong.is_empty(), "wrong redirects:\n{}", wrong.join("\n"));
    assert!(
        plain.requests().iter().all(|s| s.path == "/"),
        "a redirected request reached an upstream: {:?}",
        plain.requests()
    );

    // URLRewrite: the upstream sees the rewritten path and Host.
    let mut cases = vec![
        ("/rewrite/page?k=v", "/new/page?k=v", "rewritten.e2e.test"),
        ("/rewrite", "/new", "rewritten.e2e.test"),
        ("/full/any/thing?k=v", "/replaced?k=v", HOST),
    ];
    cases.extend(PREFIX_CASES.iter().map(|(path, want)| (*path, *want, HOST)));
    let mut wrong = Vec::new();
    for (path, want_path, want_host) in cases {
        let before = rewritten.requests().len();
        let r = scene.get(path).await.unwrap();
        assert_eq!((r.status, r.upstream()), (200, Some("rewrite")), "{path}: {r:?}");
        let seen = rewritten.requests();
        assert_eq!(seen.len(), before + 1, "{path}");
        let seen = &seen[before];
        if (seen.path.as_str(), seen.host.as_deref()) != (want_path, Some(want_host)) {
            wrong.push(format!(
                "{path}: want {want_path} on {want_host}, upstream saw {} on {:?}",
                seen.path, seen.host
            ));
        }
    }
    assert!(wrong.is_empty(), "wrong rewrites:\n{}", wrong.join("\n"));

    // Header modifiers: the request side at the upstream, the response side at the client.
    let request = Request::get(HOST, "/headers/x")
        .header("x-set", "from-client")
        .header("x-add", "from-client")
        .header("x-remove", "from-client")
        .header("x-keep", "from-client");
    let r = http::send(scene.listener(), &request).await.unwrap();
    assert_eq!((r.status, r.body.as_str()), (200, "headers\n"), "{r:?}");
    assert_eq!(r.upstream(), None, "x-upstream removed from the response");
    assert_eq!(r.header_all("content-type"), ["application/x-e2e"]);
    assert_eq!(r.header("x-resp-add"), Some("added-to-response"));
    let seen = headers.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let seen = &seen[0];
    assert_eq!(seen.header_all("x-set"), ["set-by-route"]);
    // Envoy may forward an appended value as its own line or joined to the client's: the same header.
    assert_eq!(seen.header_all("x-add").join(","), "from-client,added-by-route");
    assert_eq!(seen.header("x-remove"), None);
    assert_eq!(seen.header("x-keep"), Some("from-client"));

    // A backendRef's own filter applies to the requests sent to that backend.
    let r = scene.get("/per-backend/x").await.unwrap();
    assert_eq!(r.body, "headers\n", "{r:?}");
    let seen = headers.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[1].path.as_str(), seen[1].header("x-backend-filter")),
        ("/per-backend/x", Some("applied"))
    );

    // No backendRefs: 500 from Envoy itself.
    let r = scene.get("/nobackends/x").await.unwrap();
    assert_eq!((r.status, r.upstream()), (500, None), "{r:?}");
}
