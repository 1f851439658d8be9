//! The upstream side of MCP's streamable HTTP transport (protocol revision 2025-06-18), just enough to
//! prove a proxy carries it: the upstream [`super::upstream`] answers a request whose path has a segment
//! `mcp` here.
//!
//! - `POST` of a JSON-RPC request `initialize` → `200 application/json` with a new `Mcp-Session-Id`.
//! - `POST` of any other JSON-RPC request (with `Accept: text/event-stream` and the session header) →
//!   `200 text/event-stream`: a progress notification at once, then — only once the test calls
//!   [`Mcp::release`] for that session — the result, and the stream ends. A proxy that buffered the
//!   answer would hold the first event back until the end, which never comes without it: the test sees
//!   the first event or times out, it cannot be fooled by timing.
//! - `POST` of a notification or response (no `id`) → `202 Accepted`, no body.
//! - `GET` (the server-to-client stream) → `text/event-stream` with one event per `every` ms (query
//!   `ticks=N&every=MS`, default 3 × 1000 ms), then the stream ends: long streams test a proxy's
//!   timeouts.
//! - `DELETE` ends the session; later requests with its id get `404`, as the transport says.
//!
//! A missing session header is `400`, an unknown one `404`.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Bytes, Frame};
use hyper::{HeaderMap, Method, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

pub type Body = BoxBody<Bytes, Infallible>;

/// The session header of the transport.
pub const SESSION: &str = "mcp-session-id";
/// The longest a streamed answer waits for [`Mcp::release`] (a test that forgot must not hang a task).
const RELEASE_WAIT: Duration = Duration::from_secs(30);
/// The most events a `GET` stream sends.
const MAX_TICKS: u64 = 120;

/// One upstream's MCP sessions.
pub struct Mcp {
    sessions: Mutex<HashSet<String>>,
    /// Shared with the streaming tasks, which outlive the request.
    released: Arc<Mutex<HashSet<String>>>,
    /// Bumped on every release, so a waiting stream re-checks `released`.
    release_gen: watch::Sender<u64>,
    next: Mutex<u64>,
}

impl Default for Mcp {
    fn default() -> Self {
        Mcp {
            sessions: Mutex::default(),
            released: Arc::default(),
            release_gen: watch::channel(0).0,
            next: Mutex::new(0),
        }
    }
}

/// What the handler needs of a request.
pub struct Call<'a> {
    pub method: &'a Method,
    pub query: Option<&'a str>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

impl Mcp {
    /// Lets the pending streamed answer(s) of `session` finish.
    pub fn release(&self, session: &str) {
        self.released.lock().unwrap().insert(session.to_string());
        self.release_gen.send_modify(|g| *g += 1);
    }

    /// The answer to one request on the MCP endpoint.
    pub fn answer(&self, name: &str, call: Call<'_>) -> Response<Body> {
        if call.method == Method::POST {
            return self.post(name, call);
        }
        let session = match self.session(call.headers) {
            Ok(s) => s,
            Err(status) => return plain(status, name, "session"),
        };
        match *call.method {
            Method::GET => ticks(name, call.query),
            Method::DELETE => {
                self.sessions.lock().unwrap().remove(&session);
                plain(StatusCode::OK, name, "")
            }
            _ => plain(StatusCode::METHOD_NOT_ALLOWED, name, "GET, POST or DELETE"),
        }
    }

    fn post(&self, name: &str, call: Call<'_>) -> Response<Body> {
        let Ok(message) = serde_json::from_slice::<Value>(call.body) else {
            return plain(StatusCode::BAD_REQUEST, name, "not JSON-RPC");
        };
        if message["method"] == "initialize" {
            let session = self.open(name);
            let result = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": name, "version": "0"}}});
            let mut r = json_answer(name, &result);
            r.headers_mut()
                .insert(SESSION, session.parse().expect("a session id is a header value"));
            return r;
        }
        let session = match self.session(call.headers) {
            Ok(s) => s,
            Err(status) => return plain(status, name, "session"),
        };
        if message.get("id").is_none() {
            return plain(StatusCode::ACCEPTED, name, "");
        }
        self.streamed(name, session, message)
    }

    fn open(&self, name: &str) -> String {
        let mut next = self.next.lock().unwrap();
        *next += 1;
        let id = format!("{name}-{next}");
        self.sessions.lock().unwrap().insert(id.clone());
        id
    }

    fn session(&self, headers: &HeaderMap) -> Result<String, StatusCode> {
        let id = headers
            .get(SESSION)
            .and_then(|v| v.to_str().ok())
            .ok_or(StatusCode::BAD_REQUEST)?;
        if self.sessions.lock().unwrap().contains(id) {
            Ok(id.to_string())
        } else {
            Err(StatusCode::NOT_FOUND)
        }
    }

    /// A progress notification now, the result once released.
    fn streamed(&self, name: &str, session: String, message: Value) -> Response<Body> {
        let (tx, body) = event_stream();
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": message["id"], "progress": 1, "message": "working"}});
        let result = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": format!("{} from {name}", message["method"])}]}});
        let mut generation = self.release_gen.subscribe();
        let released = self.released.clone();
        let released = move || released.lock().unwrap().contains(&session);
        tokio::spawn(async move {
            if tx.send(event(1, &progress)).await.is_err() {
                return;
            }
            let wait = async {
                while !released() {
                    if generation.changed().await.is_err() {
                        return;
                    }
                }
            };
            if tokio::time::timeout(RELEASE_WAIT, wait).await.is_ok() {
                let _ = tx.send(event(2, &result)).await;
            }
        });
        sse_answer(name, body)
    }
}

/// `GET`: `ticks` events, one per `every` ms.
fn ticks(name: &str, query: Option<&str>) -> Response<Body> {
    let param = |key: &str, default: u64| {
        query
            .unwrap_or("")
            .split('&')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
            .unwrap_or(default)
    };
    let (count, every) = (param("ticks", 3).min(MAX_TICKS), param("every", 1000));
    let (tx, body) = event_stream();
    tokio::spawn(async move {
        for n in 1..=count {
            let tick = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": format!("tick {n}")}});
            if tx.send(event(n, &tick)).await.is_err() {
                return;
            }
            if n < count {
                tokio::time::sleep(Duration::from_millis(every)).await;
            }
        }
    });
    sse_answer(name, body)
}

fn event(id: u64, data: &Value) -> Bytes {
    Bytes::from(format!("id: {id}\nevent: message\ndata: {data}\n\n"))
}

fn event_stream() -> (mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let frames = ReceiverStream::new(rx).map(|b| Ok::<_, Infallible>(Frame::data(b)));
    (tx, StreamBody::new(frames).boxed())
}

fn sse_answer(name: &str, body: Body) -> Response<Body> {
    Response::builder()
        .status(StatusCode::OK)
        .header("x-upstream", name)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .expect("response")
}

fn json_answer(name: &str, value: &Value) -> Response<Body> {
    Response::builder()
        .status(StatusCode::OK)
        .header("x-upstream", name)
        .header("content-type", "application/json")
        .body(full(value.to_string()))
        .expect("response")
}

fn plain(status: StatusCode, name: &str, text: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("x-upstream", name)
        .header("content-type", "text/plain")
        .body(full(text.to_string()))
        .expect("response")
}

pub fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into()).boxed()
}
