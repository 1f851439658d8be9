//! Scenario 25: session persistence (GEP-1619) through Envoy, with three endpoints behind one backend —
//! a cookie session set on an HTTPRoute rule (to a Service), and a cookie session (with a cookie path)
//! and a header session set on XBackends of type EndpointSelector (the rules set none, so the Backends'
//! apply). For each:
//!
//! - without a token, requests spread over the endpoints;
//! - the first answer hands out the token (`set-cookie: sid=…` or `x-session: …`);
//! - 20 requests carrying it all reach the endpoint that answered;
//! - once that endpoint is removed from the EndpointSlices, a request carrying the old token is served by
//!   another endpoint and gets a new token (non-strict: the session moves), which then sticks.

use std::collections::BTreeSet;

use pier::testkit::http::{Request, Response, send, tally};
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// One slice per endpoint (each upstream listens on its own port).
fn slices(endpoints: &[&Upstream]) -> Vec<Value> {
    endpoints
        .iter()
        .map(|u| endpoint_slice(&format!("web-{}", u.name), "web", "http", u.port(), &[(&u.ip(), true)]))
        .collect()
}

/// How a session's token travels.
#[derive(Clone, Copy, Debug)]
enum Token {
    Cookie,
    Header,
}

impl Token {
    /// The token an answer hands out, as the client sends it back: (header name, value).
    fn issued(self, r: &Response) -> Option<(String, String)> {
        match self {
            Token::Cookie => {
                let cookie = r.header_all("set-cookie").into_iter().find(|c| c.starts_with("sid="))?;
                let pair = cookie.split(';').next()?.trim().to_string();
                Some(("cookie".to_string(), pair))
            }
            Token::Header => r.header("x-session").map(|v| ("x-session".to_string(), v.to_string())),
        }
    }
}

async fn request(scene: &Scene, path: &str, token: Option<&(String, String)>) -> Response {
    let mut req = Request::get(HOST, path);
    if let Some((name, value)) = token {
        req = req.header(name, value);
    }
    let r = send(scene.listener(), &req).await.expect("Envoy answers");
    assert_eq!(r.status, 200, "{path}: {r:?}");
    r
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s25", mode).await;
    let pods = [
        Upstream::http("pod-a", lo(2)).await,
        Upstream::http("pod-b", lo(3)).await,
        Upstream::http("pod-c", lo(4)).await,
    ];
    let mut header_backend = xbackend_selector("web-header", "web", 80);
    header_backend["spec"]["sessionPersistence"] = json!({"type": "Header", "header": {"name": "X-Session"}});
    let mut cookie_backend = xbackend_selector("web-cookie", "web", 80);
    cookie_backend["spec"]["sessionPersistence"] =
        json!({"type": "Cookie", "cookie": {"name": "sid", "path": "/backend-cookie"}});
    let mut cookie_rule = rule("/rule-cookie", vec![service_ref("web", 80)]);
    cookie_rule["sessionPersistence"] = json!({"type": "Cookie", "cookie": {"name": "sid"}});
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            service("web", "http", 80),
            header_backend,
            cookie_backend,
            http_route(
                "web",
                "gw",
                vec![
                    cookie_rule,
                    rule("/backend-cookie", vec![xbackend_ref("web-cookie")]),
                    rule("/backend-header", vec![xbackend_ref("web-header")]),
                ],
            ),
        ],
    );
    scene.write("20-slices.yaml", &slices(&[&pods[0], &pods[1], &pods[2]]));
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    for (path, token) in [
        ("/rule-cookie", Token::Cookie),
        ("/backend-cookie", Token::Cookie),
        ("/backend-header", Token::Header),
    ] {
        scene.write("20-slices.yaml", &slices(&[&pods[0], &pods[1], &pods[2]]));
        for p in &pods {
            scene.wait_for_upstream(path, &p.name).await;
        }
        let spread = tally(scene.listener(), HOST, path, 30).await;
        assert!(spread.0.len() >= 2, "{path} without a token spreads: {spread}");

        let first = request(&scene, path, None).await;
        let issued = token
            .issued(&first)
            .unwrap_or_else(|| panic!("{path}: no {token:?} token in {first:?}"));
        let home = first.upstream().unwrap().to_string();
        if let Token::Cookie = token {
            let path_attr = if path == "/backend-cookie" { path } else { "/" };
            let cookie = first.header_all("set-cookie").join(" | ");
            assert!(cookie.contains(&format!("Path={path_attr}")), "{path}: {cookie}");
            assert!(!cookie.contains("Max-Age"), "a Session cookie: {cookie}");
        }
        for i in 0..20 {
            let r = request(&scene, path, Some(&issued)).await;
            assert_eq!(r.upstream(), Some(home.as_str()), "{path}: request {i} with the token");
        }

        // The session's endpoint goes away: the session moves, with a new token.
        let rest: Vec<&Upstream> = pods.iter().filter(|p| p.name != home).collect();
        scene.write("20-slices.yaml", &slices(&rest));
        let (moved, renewed) = eventually(&format!("{path}: the session leaves {home}"), CONVERGE, || async {
            let r = request(&scene, path, Some(&issued)).await;
            match (r.upstream(), token.issued(&r)) {
                (Some(u), Some(t)) if u != home && t != issued => Ok((u.to_string(), t)),
                (u, t) => Err(format!("served by {u:?}, token {t:?}")),
            }
        })
        .await;
        let seen: BTreeSet<String> = {
            let mut s = BTreeSet::new();
            for _ in 0..10 {
                s.insert(
                    request(&scene, path, Some(&renewed))
                        .await
                        .upstream()
                        .unwrap()
                        .to_string(),
                );
            }
            s
        };
        assert_eq!(
            seen,
            BTreeSet::from([moved.clone()]),
            "{path}: the new token sticks to {moved}"
        );
    }
}
