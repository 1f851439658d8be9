//! The upstream servers Envoy forwards to: plain HTTP or TLS (rustls) on `127.0.0.x:<port>`, speaking HTTP/1.1,
//! h2 (ALPN) and h2c (prior knowledge) through hyper-util's auto server. Every response carries the server's
//! name (`x-upstream` header and body), which is how a client sees where a request went.
//!
//! Each server records what it saw, because the interesting claims are about the upstream's view: every
//! accepted connection, every TLS handshake attempt (the SNI offered, and why it failed), connections that
//! spoke plaintext to a TLS-only port, and every request (path, HTTP version, whether it arrived over TLS, the
//! SNI of its connection, the client certificate's subject). A TLS upstream can also require a client
//! certificate and verify it against a CA.
//!
//! Three behaviours chosen by the request path so that a test needs nothing but a URL (and a route prefix in
//! front of them still works): a segment `delay/<ms>` anywhere in the path holds the answer back that long
//! (at most [`MAX_DELAY`]; for timeouts); `fail-once/<key>` answers 503 the first time this server sees
//! `<key>` and normally from then on (for retries on status codes); `delay-once/<key>` holds the first
//! request carrying `<key>` for [`DELAY_ONCE`] and answers later ones at once (for retries after a per-try
//! timeout). Every request is recorded in [`Upstream::requests`] on arrival. A request asking for
//! `Upgrade: websocket` gets `101 Switching Protocols`, after which the connection echoes every byte back:
//! enough to prove an upgrade made it through a proxy, without WebSocket framing. A path with a segment
//! `mcp` is an MCP streamable-HTTP endpoint ([`super::mcp`]).

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::ServerConfig;
use rustls::server::Acceptor;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::LazyConfigAcceptor;

use super::mcp::{self, Mcp};
use super::pki::subject_cn;

mod tls;
pub use tls::ServerTls;

/// The longest `delay/<ms>` an upstream honours (a typo must not hang a test).
pub const MAX_DELAY: Duration = Duration::from_secs(30);
/// How long `delay-once/<key>` holds the first request: longer than any timeout a test sets, shorter than
/// the testkit client's own.
pub const DELAY_ONCE: Duration = Duration::from_secs(5);

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The authority: the URI's (HTTP/2 `:authority`), else the `Host` header.
    pub host: Option<String>,
    /// Every request header in arrival order, names lowercase; a repeated header is repeated here.
    pub headers: Vec<(String, String)>,
    /// Length of the request body.
    pub body_len: usize,
    pub version: String,
    pub tls: bool,
    pub sni: Option<String>,
    /// Subject CN of the client certificate the connection presented, if any.
    pub client_cn: Option<String>,
}

impl Seen {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.header_all(name).into_iter().next()
    }

    /// Every value of header `name` (case-insensitive), in arrival order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// One TLS handshake attempt: the SNI offered and, if it failed, why.
#[derive(Debug, Clone)]
pub struct Handshake {
    pub sni: Option<String>,
    pub error: Option<String>,
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<Seen>>,
    handshakes: Mutex<Vec<Handshake>>,
    connections: AtomicUsize,
    plaintext_on_tls: AtomicUsize,
    /// `fail-once/<key>` and `delay-once/<key>` already acted on, as `<behaviour>/<key>`.
    once: Mutex<HashSet<String>>,
    mcp: Mcp,
}

#[derive(Clone)]
struct ConnInfo {
    tls: bool,
    sni: Option<String>,
    client_cn: Option<String>,
}

/// A running upstream; stops accepting when dropped.
pub struct Upstream {
    pub name: String,
    pub addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Upstream {
    /// Plain HTTP (HTTP/1.1 and h2c) on `ip:<ephemeral>`. For tests: panics if it cannot bind.
    pub async fn http(name: &str, ip: Ipv4Addr) -> Upstream {
        Self::bind(name, SocketAddr::from((ip, 0)), None)
            .await
            .expect("binding an upstream")
    }

    /// TLS only (HTTP/1.1 and h2 by ALPN) on `ip:<ephemeral>`. For tests: panics if it cannot bind.
    pub async fn https(name: &str, ip: Ipv4Addr, tls: ServerTls) -> Upstream {
        Self::bind(name, SocketAddr::from((ip, 0)), Some(tls))
            .await
            .expect("binding an upstream")
    }

    /// On exactly `addr` (the demo's fixed addresses; tests that need one port on two addresses). Fails
    /// when the address cannot be bound or the TLS settings are unusable.
    pub async fn bind(name: &str, addr: SocketAddr, tls: Option<ServerTls>) -> std::io::Result<Upstream> {
        let tls = tls
            .map(ServerTls::config)
            .transpose()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("TLS settings: {e}")))?;
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        let task = tokio::spawn(accept_loop(listener, name.to_string(), tls, state.clone()));
        Ok(Upstream {
            name: name.to_string(),
            addr,
            state,
            task,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn ip(&self) -> String {
        self.addr.ip().to_string()
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn handshakes(&self) -> Vec<Handshake> {
        self.state.handshakes.lock().unwrap().clone()
    }

    /// TCP connections accepted (including ones that never got to a request).
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Lets the streamed answer pending in MCP session `session` finish (see [`super::mcp`]).
    pub fn mcp_release(&self, session: &str) {
        self.state.mcp.release(session);
    }

    /// Connections to this TLS-only upstream whose first byte was not a TLS handshake record.
    pub fn plaintext_attempts(&self) -> usize {
        self.state.plaintext_on_tls.load(Ordering::SeqCst)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, name: String, tls: Option<Arc<ServerConfig>>, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        state.connections.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(handle(stream, name.clone(), tls.clone(), state.clone()));
    }
}

async fn handle(stream: TcpStream, name: String, tls: Option<Arc<ServerConfig>>, state: Arc<State>) {
    let Some(config) = tls else {
        let info = ConnInfo {
            tls: false,
            sni: None,
            client_cn: None,
        };
        return serve(stream, name, info, state).await;
    };
    // A TLS connection starts with a handshake record (content type 22); anything else is plaintext
    // arriving at a TLS-only port, which tests assert never happens.
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) if first[0] == 0x16 => {}
        Ok(1) => {
            state.plaintext_on_tls.fetch_add(1, Ordering::SeqCst);
            return;
        }
        _ => return,
    }
    let start = match LazyConfigAcceptor::new(Acceptor::default(), stream).await {
        Ok(start) => start,
        Err(e) => {
            let attempt = Handshake {
                sni: None,
                error: Some(e.to_string()),
            };
            state.handshakes.lock().unwrap().push(attempt);
            return;
        }
    };
    let sni = start.client_hello().server_name().map(str::to_string);
    match start.into_stream(config).await {
        Ok(tls_stream) => {
            let client_cn = tls_stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| subject_cn(c));
            state.handshakes.lock().unwrap().push(Handshake {
                sni: sni.clone(),
                error: None,
            });
            serve(
                tls_stream,
                name,
                ConnInfo {
                    tls: true,
                    sni,
                    client_cn,
                },
                state,
            )
            .await;
        }
        Err(e) => {
            state.handshakes.lock().unwrap().push(Handshake {
                sni,
                error: Some(e.to_string()),
            });
        }
    }
}

async fn serve<S>(io: S, name: String, info: ConnInfo, state: Arc<State>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        answer(req, name.clone(), info.clone(), state.clone())
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection_with_upgrades(TokioIo::new(io), service)
        .await;
}

/// One request's answer: recorded, then the behaviour its path asks for (fail once, delay, MCP, a
/// WebSocket echo) or `200` naming the upstream.
async fn answer(
    mut req: Request<Incoming>,
    name: String,
    info: ConnInfo,
    state: Arc<State>,
) -> Result<Response<mcp::Body>, Infallible> {
    let upgrade = req
        .headers()
        .get(hyper::header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
        .then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    // Read the whole body before answering: an HTTP/2 peer (Envoy) would otherwise see the stream
    // reset under a request it is still sending (the gRPC frames of the suite's calls).
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let seen = seen(&parts, body.len(), info);
    // Whether this is the first request carrying `<behaviour>/<key>`.
    let first = |behaviour: &str| {
        path_arg(&seen.path, behaviour)
            .is_some_and(|key| state.once.lock().unwrap().insert(format!("{behaviour}/{key}")))
    };
    let status = if first("fail-once") {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let delay = path_arg(&seen.path, "delay")
        .and_then(|ms| ms.parse().ok())
        .map(|ms| Duration::from_millis(ms).min(MAX_DELAY))
        .or_else(|| first("delay-once").then_some(DELAY_ONCE));
    let is_mcp = path_segment(&seen.path, "mcp");
    state.requests.lock().unwrap().push(seen);
    if is_mcp {
        let call = mcp::Call {
            method: &parts.method,
            query: parts.uri.query(),
            headers: &parts.headers,
            body: &body,
        };
        return Ok(state.mcp.answer(&name, call));
    }
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(upgrade) = upgrade {
        tokio::spawn(echo(upgrade));
        let response = Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(hyper::header::CONNECTION, "upgrade")
            .header(hyper::header::UPGRADE, "websocket")
            .header("x-upstream", name.as_str())
            .body(mcp::full(Bytes::new()))
            .expect("response");
        return Ok(response);
    }
    let response = Response::builder()
        .status(status)
        .header("x-upstream", name.as_str())
        .header("content-type", "text/plain")
        .body(mcp::full(format!("{name}\n")))
        .expect("response");
    Ok(response)
}

/// What the suite sees of a request.
fn seen(parts: &hyper::http::request::Parts, body_len: usize, info: ConnInfo) -> Seen {
    let host = parts.uri.authority().map(|a| a.to_string()).or_else(|| {
        let host = parts.headers.get(hyper::header::HOST)?;
        Some(String::from_utf8_lossy(host.as_bytes()).into_owned())
    });
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    Seen {
        method: parts.method.to_string(),
        path: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
        host,
        headers,
        body_len,
        version: format!("{:?}", parts.version),
        tls: info.tls,
        sni: info.sni,
        client_cn: info.client_cn,
    }
}

/// After a `101 Switching Protocols`: echoes every byte until the peer closes.
async fn echo(upgrade: hyper::upgrade::OnUpgrade) {
    if let Ok(upgraded) = upgrade.await {
        let (mut reader, mut writer) = tokio::io::split(TokioIo::new(upgraded));
        let _ = tokio::io::copy(&mut reader, &mut writer).await;
    }
}

/// Whether the path (query left out) has the segment `word`.
fn path_segment(path: &str, word: &str) -> bool {
    path.split('?').next().unwrap_or("").split('/').any(|s| s == word)
}

/// The path segment after the segment `word` (query left out): `path_arg("/a/delay/500?x", "delay")` is
/// `Some("500")`.
fn path_arg<'a>(path: &'a str, word: &str) -> Option<&'a str> {
    let mut segments = path.split('?').next()?.split('/');
    segments.find(|s| *s == word)?;
    segments.next().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
