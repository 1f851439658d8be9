//! Scenario 20: an XBackend with `protocol: MCP` (streamable HTTP, over TLS) carries an MCP session
//! through Envoy, the traffic half of `BackendProtocolMCP`:
//!
//! - `initialize` is answered with JSON and a session id, which later requests carry to the upstream
//!   (with the protocol version header);
//! - a request answered as a server-sent event stream arrives event by event: the client reads the first
//!   event *before* the upstream is allowed to send the second (a proxy that buffered the answer would
//!   time the client out — no timing is assumed);
//! - a notification is answered `202`;
//! - the server-to-client `GET` stream lasts 19 s, past Envoy's default 15 s route timeout, and ends
//!   cleanly with every event (pier disables the default deadline on a rule that reaches an MCP
//!   backend);
//! - `DELETE` ends the session, after which its id is refused (`404`) by the upstream, through Envoy.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use pier::testkit::lo;
use pier::testkit::mcp::SESSION;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};
use serde_json::{Value, json};
use tokio::net::TcpStream;

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, HOST, Scene};

both_modes!(run);

const VERSION: &str = "2025-06-18";
/// The server-to-client stream: this many events, one a second — longer than Envoy's default 15 s.
const TICKS: usize = 20;
/// The longest one read of an event may take.
const EVENT_WAIT: Duration = Duration::from_secs(10);

fn tools_backend(upstream: &Upstream) -> Value {
    let hostname = "tools.e2e.test";
    json!({"apiVersion": format!("{XBACKEND_GROUP}/v1alpha1"), "kind": "XBackend",
        "metadata": {"name": "tools", "namespace": NS},
        "spec": {"type": "ExternalHostname", "externalHostname": {"hostname": hostname},
            "port": {"number": upstream.port()}, "protocol": "MCP",
            "tls": backend_tls("ServerOnly", hostname, "trusted-ca")}})
}

async fn run(mode: Mode) {
    let mut scene = Scene::new("s20", mode).await;
    let ca = Ca::new("e2e MCP CA");
    let upstream = Upstream::https("tools", lo(2), ServerTls::new(&ca.server(&["tools.e2e.test"], &[]))).await;
    scene.dns.set("tools.e2e.test", &[lo(2)]);
    scene.write(
        "00-gateway.yaml",
        &[
            gateway_class(),
            gateway("gw", scene.port),
            ca_config_map("trusted-ca", &ca.cert_pem()),
            tools_backend(&upstream),
            http_route("mcp", "gw", vec![rule("/mcp", vec![xbackend_ref("tools")])]),
        ],
    );
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    let addr = scene.listener();

    let session = crate::harness::eventually("initialize answered by the MCP upstream", CONVERGE, || async {
        initialize(addr).await
    })
    .await;
    let ticking = tokio::spawn(server_stream(addr, session.clone()));

    streamed_call(addr, &upstream, &session).await;
    let (status, _, _) = exchange(
        addr,
        post(
            &session,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
    )
    .await
    .expect("a notification");
    assert_eq!(status, 202, "a notification is accepted");

    let (events, elapsed) = ticking.await.expect("the GET stream task");
    assert_eq!(
        events.len(),
        TICKS,
        "every event of the {elapsed:?} stream arrived: {events:?}"
    );
    assert!(events[TICKS - 1].contains(&format!("tick {TICKS}")), "{events:?}");

    let requests = upstream.requests();
    let call = requests
        .iter()
        .find(|r| r.method == "POST" && r.header(SESSION) == Some(session.as_str()))
        .expect("a request in the session reached the upstream");
    assert_eq!(call.header("mcp-protocol-version"), Some(VERSION), "{call:?}");
    assert!(call.tls, "MCP to a TLS backend goes over TLS");

    let (status, _, _) = exchange(addr, request("DELETE", Some(&session)).body(empty()).unwrap())
        .await
        .expect("DELETE");
    assert_eq!(status, 200, "the session ends");
    let (status, _, _) = exchange(
        addr,
        post(&session, json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})),
    )
    .await
    .expect("a request in an ended session");
    assert_eq!(status, 404, "an ended session's id is refused");
}

/// `initialize`: JSON back, with a session id.
async fn initialize(addr: SocketAddr) -> Result<String, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}}});
    let r = hyper::Request::post(url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let (status, headers, body) = exchange(addr, r).await?;
    let upstream = headers.get("x-upstream").and_then(|v| v.to_str().ok());
    if status != 200 || upstream != Some("tools") {
        return Err(format!("status {status} from {upstream:?}"));
    }
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let answer: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    assert_eq!(answer["result"]["protocolVersion"], VERSION, "{answer}");
    header(&headers, SESSION)
        .map(str::to_string)
        .ok_or_else(|| format!("no {SESSION} header: {headers:?}"))
}

/// A request answered as an event stream: the first event arrives while the upstream still holds the
/// second back; released, the result follows and the stream ends.
async fn streamed_call(addr: SocketAddr, upstream: &Upstream, session: &str) {
    let call = post(
        session,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}}}),
    );
    let mut response = open(addr, call).await.expect("tools/call");
    assert_eq!(response.status(), 200);
    assert_eq!(header(response.headers(), "content-type"), Some("text/event-stream"));
    let mut events = Events::default();
    let first = events
        .next(response.body_mut())
        .await
        .expect("the first event, before the rest is sent");
    assert!(first.contains("notifications/progress"), "{first}");
    upstream.mcp_release(session);
    let result = events
        .next(response.body_mut())
        .await
        .expect("the result event after the release");
    assert!(result.contains("\"id\":2") && result.contains("tools/call"), "{result}");
    assert_eq!(
        events.next(response.body_mut()).await,
        Err("end".to_string()),
        "the stream ends"
    );
}

/// The server-to-client stream: every event and how long the stream lasted.
async fn server_stream(addr: SocketAddr, session: String) -> (Vec<String>, Duration) {
    let started = Instant::now();
    let path = format!("/mcp?ticks={TICKS}&every=1000");
    let get = hyper::Request::get(format!("http://{HOST}{path}"))
        .header("accept", "text/event-stream")
        .header(SESSION, session)
        .header("mcp-protocol-version", VERSION)
        .body(empty())
        .unwrap();
    let mut response = open(addr, get).await.expect("the GET stream");
    assert_eq!(response.status(), 200, "the GET stream");
    let mut events = Events::default();
    let mut seen = Vec::new();
    loop {
        match events.next(response.body_mut()).await {
            Ok(e) => seen.push(e),
            Err(e) if e == "end" => break,
            Err(e) => panic!(
                "the GET stream broke after {:?} and {} events: {e}",
                started.elapsed(),
                seen.len()
            ),
        }
    }
    (seen, started.elapsed())
}

/// Reads server-sent events off a body, one at a time.
#[derive(Default)]
struct Events {
    buffered: Vec<u8>,
}

impl Events {
    /// The next whole event; `Err("end")` at a clean end of the body, else why reading failed.
    async fn next(&mut self, body: &mut Incoming) -> Result<String, String> {
        loop {
            if let Some(at) = self.buffered.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffered.drain(..at + 2).collect();
                return Ok(String::from_utf8_lossy(&event).trim().to_string());
            }
            let frame = tokio::time::timeout(EVENT_WAIT, body.frame())
                .await
                .map_err(|_| format!("no event within {EVENT_WAIT:?}"))?;
            match frame {
                None if self.buffered.is_empty() => return Err("end".to_string()),
                None => return Err(format!("the body ended mid-event: {:?}", self.buffered)),
                Some(Err(e)) => return Err(format!("body: {e}")),
                Some(Ok(f)) => self
                    .buffered
                    .extend_from_slice(f.data_ref().map(|d| &d[..]).unwrap_or(&[])),
            }
        }
    }
}

fn url() -> String {
    format!("http://{HOST}/mcp")
}

fn empty() -> Full<Bytes> {
    Full::new(Bytes::new())
}

fn request(method: &str, session: Option<&str>) -> hyper::http::request::Builder {
    let mut r = hyper::Request::builder()
        .method(method)
        .uri(url())
        .header("mcp-protocol-version", VERSION);
    if let Some(s) = session {
        r = r.header(SESSION, s);
    }
    r
}

/// A JSON-RPC message in `session`, accepting JSON or an event stream back.
fn post(session: &str, message: Value) -> hyper::Request<Full<Bytes>> {
    request("POST", Some(session))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(message.to_string())))
        .unwrap()
}

fn header<'a>(headers: &'a hyper::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Sends `request` over a new HTTP/1.1 connection; the response's body is left to read.
async fn open(addr: SocketAddr, request: hyper::Request<Full<Bytes>>) -> Result<hyper::Response<Incoming>, String> {
    let attempt = async {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(connection);
        sender.send_request(request).await.map_err(|e| format!("send: {e}"))
    };
    tokio::time::timeout(EVENT_WAIT, attempt)
        .await
        .map_err(|_| format!("no answer within {EVENT_WAIT:?}"))?
}

/// Sends `request` and reads the whole answer: status, headers, body.
async fn exchange(
    addr: SocketAddr,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, hyper::HeaderMap, Bytes), String> {
    let response = open(addr, request).await?;
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(EVENT_WAIT, body.collect())
        .await
        .map_err(|_| "no whole body".to_string())?
        .map_err(|e| format!("body: {e}"))?;
    Ok((parts.status.as_u16(), parts.headers, body.to_bytes()))
}
