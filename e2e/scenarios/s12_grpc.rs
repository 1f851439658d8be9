//! Scenario 12: a GRPCRoute through a real Envoy. The client speaks HTTP/2 with prior knowledge (h2c) to
//! Envoy's plain HTTP listener and makes unary-shaped calls: `POST /<service>/<method>`, `content-type:
//! application/grpc`, one 5-byte gRPC frame (an empty message). The backends are Services without
//! `appProtocol`, so pier must give Envoy HTTP/2 twin clusters (`.../h2`) for them:
//!
//! - an exact service+method match, a service-only match (every method of that service, nothing of a service
//!   whose name merely starts the same way) and a method regular expression each reach their own upstream,
//!   which sees HTTP/2, the path, `content-type` and the 5-byte body;
//! - a method-only match takes that method of any service, but loses to a service match (more characters of
//!   the service); a header match takes only calls carrying the header (name case-insensitive), and its
//!   rule's RequestHeaderModifier / ResponseHeaderModifier reach the upstream / the client;
//! - an HTTPRoute on another hostname shares one of the Services over HTTP/1.1 (its plain cluster), while a
//!   newer HTTPRoute on the GRPCRoute's hostname is refused and serves nothing (and its status says
//!   `Accepted=False/HostnameConflict`); an HTTP/1.1 request reaches a Service with `appProtocol:
//!   kubernetes.io/h2c` over HTTP/2;
//! - a RequestMirror copy of a call reaches its Service (no `appProtocol`) over HTTP/2 as well;
//! - a rule whose only backendRef is a missing Service answers `grpc-status: 14` (UNAVAILABLE) and a call no
//!   rule matches `grpc-status: 12` (UNIMPLEMENTED), both as trailers-only responses: HTTP 200 with the
//!   status in the response headers and no body.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::upstream::Upstream;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

/// The HTTPRoute's hostname (the GRPCRoute has [`HOST`]).
const WEB_HOST: &str = "web.e2e.test";
/// An empty gRPC message: not compressed (flag 0), length 0.
pub(super) const EMPTY_FRAME: [u8; 5] = [0, 0, 0, 0, 0];
/// Longest one call may take, connect to end of stream.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Request headers of a call, `(name, value)`.
pub(super) type Metadata<'a> = &'a [(&'a str, &'a str)];

/// What the client got back from one call.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) headers: hyper::HeaderMap,
    pub(super) trailers: Option<hyper::HeaderMap>,
    pub(super) body_len: usize,
}

impl Answer {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(super) fn upstream(&self) -> Option<&str> {
        self.header("x-upstream")
    }
}

/// One call on a fresh HTTP/2 connection (prior knowledge, no upgrade), so every call is routed on its own.
pub(super) async fn call(addr: SocketAddr, path: &str) -> Result<Answer, String> {
    call_with(addr, path, &[]).await
}

/// [`call`] with extra request headers (metadata).
async fn call_with(addr: SocketAddr, path: &str, metadata: Metadata<'_>) -> Result<Answer, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    call_over(tcp, path, metadata).await
}

/// One call over an established connection (TCP, or TLS that negotiated `h2`), which it then closes.
pub(super) async fn call_over<S>(io: S, path: &str, metadata: Metadata<'_>) -> Result<Answer, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let attempt = async {
        let (mut sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
        // The connection task ends when `sender` is dropped.
        tokio::spawn(connection);
        let mut request = hyper::Request::post(format!("http://{HOST}{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        for (name, value) in metadata {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from_static(&EMPTY_FRAME)))
            .map_err(|e| e.to_string())?;
        let response = sender.send_request(request).await.map_err(|e| format!("send: {e}"))?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| format!("body: {e}"))?;
        Ok(Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            trailers: body.trailers().cloned(),
            body_len: body.to_bytes().len(),
        })
    };
    tokio::time::timeout(CALL_TIMEOUT, attempt)
        .await
        .map_err(|_| format!("POST {path}: no answer within {CALL_TIMEOUT:?}"))?
}

fn method_rule(method: Value, service: &str) -> Value {
    json!({"matches": [{"method": method}], "backendRefs": [service_ref(service, 80)]})
}

/// The GRPCRoute (on [`HOST`]) and two HTTPRoutes: one on another hostname sharing a Service with it, and
/// a newer one on the GRPCRoute's hostname, which pier must refuse (`HostnameConflict`).
fn routes() -> Vec<Value> {
    let mut grpc = grpc_route(
        "grpc",
        "gw",
        vec![
            // A method-only match first: rule order must not beat the service characters of the next rules.
            method_rule(json!({"type": "Exact", "method": "Ping"}), "grpc-method"),
            method_rule(
                json!({"type": "Exact", "service": "pkg.Svc", "method": "Method"}),
                "grpc-exact",
            ),
            method_rule(json!({"type": "Exact", "service": "pkg.Other"}), "grpc-service"),
            method_rule(
                json!({"type": "RegularExpression", "service": "pkg\\.Re[a-z]+", "method": "Get.*"}),
                "grpc-regex",
            ),
            json!({"matches": [{"method": {"type": "Exact", "service": "pkg.Hdr"},
                    "headers": [{"name": "x-tenant", "value": "blue"}]}],
                "filters": [
                    {"type": "RequestHeaderModifier",
                        "requestHeaderModifier": {"add": [{"name": "x-via", "value": "pier"}]}},
                    {"type": "ResponseHeaderModifier",
                        "responseHeaderModifier": {"set": [{"name": "x-answered-via", "value": "pier"}]}}],
                "backendRefs": [service_ref("grpc-header", 80)]}),
            method_rule(json!({"type": "Exact", "service": "pkg.Broken"}), "missing"),
            json!({"matches": [{"method": {"type": "Exact", "service": "pkg.Mirror"}}],
                "filters": [{"type": "RequestMirror",
                    "requestMirror": {"backendRef": service_ref("grpc-shadow", 80)}}],
                "backendRefs": [service_ref("grpc-exact", 80)]}),
        ],
    );
    grpc["spec"]["hostnames"] = json!([HOST]);
    let mut web = http_route(
        "web",
        "gw",
        vec![
            rule("/", vec![service_ref("grpc-exact", 80)]),
            rule("/h2c", vec![service_ref("h2c-web", 80)]),
        ],
    );
    web["spec"]["hostnames"] = json!([WEB_HOST]);
    let mut conflict = http_route("conflict", "gw", vec![rule("/", vec![service_ref("grpc-exact", 80)])]);
    conflict["spec"]["hostnames"] = json!([HOST]);
    vec![
        created(grpc, "2020-01-01T00:00:00Z"),
        created(web, "2021-01-01T00:00:00Z"),
        created(conflict, "2022-01-01T00:00:00Z"),
    ]
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s12", mode).await;
    let exact = Upstream::http("grpc-exact", lo(2)).await;
    let service = Upstream::http("grpc-service", lo(3)).await;
    let regex = Upstream::http("grpc-regex", lo(4)).await;
    let method = Upstream::http("grpc-method", lo(5)).await;
    let header = Upstream::http("grpc-header", lo(6)).await;
    let all = [&exact, &service, &regex, &method, &header];
    let mut docs = vec![gateway_class(), gateway("gw", scene.port)];
    for up in all {
        docs.extend(service_at(&up.name, &up.ip(), up.port()));
    }
    let shadow = Upstream::http("grpc-shadow", lo(8)).await;
    docs.extend(service_at(&shadow.name, &shadow.ip(), shadow.port()));
    // A Service that declares h2c (KEP-3726's `kubernetes.io/h2c`): an HTTPRoute reaches it over HTTP/2.
    let h2c = Upstream::http("h2c-web", lo(7)).await;
    let [mut h2c_service, h2c_slice] = service_at(&h2c.name, &h2c.ip(), h2c.port());
    h2c_service["spec"]["ports"][0]["appProtocol"] = json!("kubernetes.io/h2c");
    docs.extend([h2c_service, h2c_slice]);
    docs.extend(routes());
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    let addr = scene.listener();
    eventually(
        &format!("s12/{}: /pkg.Svc/Method answered by grpc-exact", mode.label()),
        CONVERGE,
        || async {
            let a = call(addr, "/pkg.Svc/Method").await?;
            match a.upstream() {
                Some("grpc-exact") => Ok(()),
                other => Err(format!("status {} from {other:?}: {a:?}", a.status)),
            }
        },
    )
    .await;

    // Envoy reaches the Services through the HTTP/2 twins pier made for them (and grpc-exact, which the
    // HTTPRoute shares, also through its plain cluster).
    let active = scene.envoy().active_versions().await;
    for up in all {
        let twin = format!("cluster/service/default/{}/80/h2", up.name);
        assert!(active.contains_key(&twin), "no {twin} among {:?}", active.keys());
    }
    assert!(active.contains_key("cluster/service/default/grpc-exact/80"));

    // Routed calls: the right upstream, which saw an HTTP/2 gRPC request.
    let routed: [(&str, Metadata, &Upstream); 9] = [
        ("/pkg.Svc/Method", &[], &exact),
        ("/pkg.Other/Anything", &[], &service),
        ("/pkg.Other/Ping", &[], &service),
        ("/pkg.Regex/GetThing", &[], &regex),
        ("/pkg.Rex/Get", &[], &regex),
        ("/pkg.Any/Ping", &[], &method),
        ("/pkg.Svc/Ping", &[], &method),
        ("/pkg.Hdr/Call", &[("x-tenant", "blue")], &header),
        ("/pkg.Hdr/Ping", &[("X-Tenant", "blue")], &header),
    ];
    for (path, metadata, upstream) in routed {
        let before = upstream.requests().len();
        let a = call_with(addr, path, metadata).await.unwrap();
        assert_eq!(
            (a.status, a.upstream()),
            (200, Some(upstream.name.as_str())),
            "{path} {metadata:?}: {a:?}"
        );
        let seen = upstream.requests();
        assert_eq!(seen.len(), before + 1, "{path}: {seen:?}");
        let seen = &seen[before];
        assert_eq!(
            (
                seen.version.as_str(),
                seen.method.as_str(),
                seen.path.as_str(),
                seen.body_len
            ),
            ("HTTP/2.0", "POST", path, EMPTY_FRAME.len()),
            "{path}: what {} saw",
            upstream.name
        );
        assert_eq!(seen.header("content-type"), Some("application/grpc"), "{path}");
    }

    // Envoy's own answers, turned into gRPC statuses: trailers-only (HTTP 200, grpc-status in the headers).
    let unrouted: [(&str, Metadata, &str); 6] = [
        ("/pkg.Broken/Call", &[], "14"),
        ("/pkg.Svc/Unknown", &[], "12"),
        ("/pkg.OtherService/Anything", &[], "12"),
        ("/pkg.Regex/PutThing", &[], "12"),
        ("/pkg.Hdr/Call", &[("x-tenant", "green")], "12"),
        ("/pkg.Hdr/Call", &[], "12"),
    ];
    for (path, metadata, grpc_status) in unrouted {
        let a = call_with(addr, path, metadata).await.unwrap();
        assert_eq!(
            (a.status, a.header("grpc-status"), a.upstream(), a.body_len),
            (200, Some(grpc_status), None, 0),
            "{path} {metadata:?}: {a:?}"
        );
        assert!(
            a.trailers.is_none(),
            "{path}: a trailers-only response has no trailers: {a:?}"
        );
    }
    // The header rule's filters: metadata added on the way in, a header set on the way out.
    assert!(
        header.requests().iter().all(|s| s.header("x-via") == Some("pier")),
        "grpc-header saw a call without the added metadata: {:?}",
        header.requests()
    );
    let a = call_with(addr, "/pkg.Hdr/Call", &[("x-tenant", "blue")]).await.unwrap();
    assert_eq!(a.header("x-answered-via"), Some("pier"), "{a:?}");
    assert!(
        header
            .requests()
            .iter()
            .all(|s| s.header("x-tenant").is_some_and(|v| v == "blue")),
        "grpc-header saw a call without the matching header: {:?}",
        header.requests()
    );
    for up in all {
        let leaked: Vec<_> = up
            .requests()
            .into_iter()
            .filter(|s| {
                [
                    "/pkg.Broken/Call",
                    "/pkg.Svc/Unknown",
                    "/pkg.OtherService/Anything",
                    "/pkg.Regex/PutThing",
                ]
                .contains(&s.path.as_str())
            })
            .collect();
        assert!(
            leaked.is_empty(),
            "{} saw calls Envoy should have answered: {leaked:?}",
            up.name
        );
    }

    // RequestMirror on a GRPCRoute: the copy is a gRPC call too, so it must go out over HTTP/2.
    let a = call(addr, "/pkg.Mirror/Call").await.unwrap();
    assert_eq!((a.status, a.upstream()), (200, Some("grpc-exact")), "{a:?}");
    let copy = eventually("grpc-shadow saw the mirrored call", CONVERGE, || async {
        shadow
            .requests()
            .into_iter()
            .next()
            .ok_or_else(|| "no copy yet".to_string())
    })
    .await;
    assert_eq!(
        (
            copy.version.as_str(),
            copy.method.as_str(),
            copy.path.as_str(),
            copy.body_len
        ),
        ("HTTP/2.0", "POST", "/pkg.Mirror/Call", EMPTY_FRAME.len()),
        "the mirrored call as grpc-shadow saw it"
    );

    // The HTTPRoute on its own hostname shares grpc-exact's Service: HTTP/1.1 there, through the plain
    // cluster. The newer HTTPRoute on the GRPCRoute's hostname was refused: nothing answers it there.
    let before = exact.requests().len();
    let r = http::get(addr, WEB_HOST, "/page").await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("grpc-exact")), "{r:?}");
    let seen = &exact.requests()[before];
    assert_eq!((seen.version.as_str(), seen.path.as_str()), ("HTTP/1.1", "/page"));
    let r = http::get(addr, WEB_HOST, "/h2c/page").await.unwrap();
    assert_eq!((r.status, r.upstream()), (200, Some("h2c-web")), "{r:?}");
    let seen = h2c.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].version.as_str(), seen[0].path.as_str()),
        ("HTTP/2.0", "/h2c/page")
    );
    let r = http::get(addr, HOST, "/page").await.unwrap();
    assert_eq!(
        (r.status, r.upstream()),
        (404, None),
        "the conflicting HTTPRoute serves: {r:?}"
    );
    let status = scene.pier().admin_json("/debug/status").await;
    let accepted: Vec<String> = [("GRPCRoute", "grpc"), ("HTTPRoute", "web"), ("HTTPRoute", "conflict")]
        .iter()
        .map(|(kind, name)| accepted_condition(&status, kind, name))
        .collect();
    assert_eq!(accepted, ["True/Accepted", "True/Accepted", "False/HostnameConflict"]);
}

/// `status/reason` of the `Accepted` condition of a route's first parent, from pier's `/debug/status`.
fn accepted_condition(status: &Value, kind: &str, name: &str) -> String {
    let objects = status["objects"].as_array().expect("/debug/status objects");
    let object = objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no status for {kind} {name}"));
    let conditions = object["status"]["parents"][0]["conditions"].as_array();
    let accepted = conditions
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Accepted")
        .unwrap_or_else(|| panic!("{kind} {name} has no Accepted condition: {object}"));
    format!(
        "{}/{}",
        accepted["status"].as_str().unwrap_or("?"),
        accepted["reason"].as_str().unwrap_or("?")
    )
}
