//! A minimal HTTP/1.1 client: one request per connection (`Connection: close`), read to EOF, parse status,
//! headers and body (Content-Length, chunked, or until close). It is all the demo and the e2e suite need to
//! send traffic through Envoy's listeners and to read admin APIs, and it keeps a general-purpose client (and
//! its own connection pooling, which would blur "which request went where") out of the dependency tree.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest one request may take, connect to last byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// First header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (case-insensitive), in order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The name of the upstream that answered (its `x-upstream` header), if one did.
    pub fn upstream(&self) -> Option<&str> {
        self.header("x-upstream")
    }
}

/// One request: method, Host, path and extra headers (sent in order, repeats kept). Bodies are not needed
/// by any test and are not supported.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub host: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn get(host: &str, path: &str) -> Request {
        Request {
            method: "GET".to_string(),
            host: host.to_string(),
            path: path.to_string(),
            headers: Vec::new(),
        }
    }

    pub fn method(mut self, method: &str) -> Request {
        self.method = method.to_string();
        self
    }

    /// Adds a header (a name given twice is sent twice).
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// `GET path` with `Host: host` to `addr`.
pub async fn get(addr: SocketAddr, host: &str, path: &str) -> Result<Response, String> {
    send(addr, &Request::get(host, path)).await
}

/// Sends `request` to `addr` on a new connection and reads the whole response.
pub async fn send(addr: SocketAddr, request: &Request) -> Result<Response, String> {
    let attempt = async {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        send_over(stream, request).await
    };
    tokio::time::timeout(REQUEST_TIMEOUT, attempt).await.map_err(|_| {
        format!(
            "{} {} via {addr}: no response within {REQUEST_TIMEOUT:?}",
            request.method, request.path
        )
    })?
}

/// Sends one GET over an established stream (plain or TLS) and reads the whole response.
pub async fn request_over<S>(stream: S, host: &str, path: &str) -> Result<Response, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    send_over(stream, &Request::get(host, path)).await
}

/// Sends `request` over an established stream (plain or TLS) and reads the whole response.
pub async fn send_over<S>(mut stream: S, request: &Request) -> Result<Response, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: pier-testkit\r\nConnection: close\r\n",
        request.method, request.path, request.host
    );
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        // Stop as soon as the response is complete: Envoy holds a connection open after its own replies
        // (delayed close, 1 s by default) and waiting for EOF there would cost a second per request.
        if is_complete(&raw) {
            break;
        }
        match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            // A TLS peer may close without close_notify; whatever arrived before that is still the response.
            Err(_) if !raw.is_empty() => break,
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    parse(&raw)
}

/// A WebSocket-style upgrade on a new connection: `GET path` with `Upgrade: websocket`; on `101` writes
/// `payload` and reads as many bytes back (the testkit upstream echoes after an upgrade). Returns the
/// response head and the bytes read back (none when the answer was not `101`).
pub async fn upgrade_echo(
    addr: SocketAddr,
    host: &str,
    path: &str,
    payload: &[u8],
) -> Result<(Response, Vec<u8>), String> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        // A syntactically complete handshake (RFC 6455 §1.3's sample key), so no proxy refuses it as malformed.
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        let mut byte = [0u8; 1];
        // Byte by byte up to the end of the head: what follows a 101 is the echoed stream, not a body.
        while !raw.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte).await {
                Ok(0) => break,
                Ok(_) => raw.push(byte[0]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        let mut response = parse(&raw)?;
        if response.status != 101 {
            // Not upgraded: read the rest, so the caller sees the whole answer.
            let _ = stream.read_to_end(&mut raw).await;
            response = parse(&raw)?;
            return Ok((response, Vec::new()));
        }
        stream
            .write_all(payload)
            .await
            .map_err(|e| format!("write after 101: {e}"))?;
        let mut echoed = vec![0u8; payload.len()];
        stream
            .read_exact(&mut echoed)
            .await
            .map_err(|e| format!("reading the echo: {e}"))?;
        Ok((response, echoed))
    };
    tokio::time::timeout(REQUEST_TIMEOUT, attempt)
        .await
        .map_err(|_| format!("upgrade {path} via {addr}: no answer within {REQUEST_TIMEOUT:?}"))?
}

/// Whether `raw` holds a whole response whose end is known without EOF: `parse` only succeeds on a
/// chunked body once its last chunk arrived, and on a Content-Length body once all of it arrived.
fn is_complete(raw: &[u8]) -> bool {
    parse(raw).is_ok_and(|r| r.header("content-length").is_some() || r.header("transfer-encoding").is_some())
}

/// Parses one complete HTTP/1.1 response.
pub fn parse(raw: &[u8]) -> Result<Response, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no complete header block in {} bytes", raw.len()))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let mut response = Response {
        status,
        headers,
        body: String::new(),
    };
    let body = if response
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        dechunk(rest)?
    } else if let Some(len) = response.header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        rest.get(..len)
            .ok_or_else(|| format!("body shorter than content-length {len}"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    response.body = String::from_utf8_lossy(&body).into_owned();
    Ok(response)
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).ok_or("truncated chunk")?);
        rest = rest.get(size + 2..).ok_or("truncated chunk terminator")?;
    }
}

/// How many of a batch of requests each upstream answered; requests no upstream answered count under
/// `status:<code>`, and ones that failed outright under `error`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally(pub BTreeMap<String, usize>);

impl Tally {
    pub fn get(&self, key: &str) -> usize {
        self.0.get(key).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.0.values().sum()
    }

    /// The share of `key` in the whole batch, 0.0 to 1.0.
    pub fn share(&self, key: &str) -> f64 {
        self.get(key) as f64 / self.total().max(1) as f64
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// The tally key of one outcome.
pub fn outcome(result: &Result<Response, String>) -> String {
    match result {
        Ok(r) => r
            .upstream()
            .map(str::to_string)
            .unwrap_or_else(|| format!("status:{}", r.status)),
        Err(_) => "error".to_string(),
    }
}

/// Sends `n` GETs (a few at a time) and tallies who answered.
pub async fn tally(addr: SocketAddr, host: &str, path: &str, n: usize) -> Tally {
    const IN_FLIGHT: usize = 4;
    let mut tally = Tally::default();
    let mut sent = 0;
    while sent < n {
        let batch = IN_FLIGHT.min(n - sent);
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..batch {
            let (host, path) = (host.to_string(), path.to_string());
            set.spawn(async move { get(addr, &host, &path).await });
        }
        while let Some(joined) = set.join_next().await {
            *tally.0.entry(outcome(&joined.expect("request task"))).or_default() += 1;
        }
        sent += batch;
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_content_length_chunked_and_close_delimited_bodies() {
        let fixed = parse(b"HTTP/1.1 200 OK\r\nX-Upstream: a\r\nContent-Length: 2\r\n\r\nhiEXTRA").unwrap();
        assert_eq!(
            (fixed.status, fixed.upstream(), fixed.body.as_str()),
            (200, Some("a"), "hi")
        );
        let raw = b"HTTP/1.1 503 Unavailable\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        let chunked = parse(raw).unwrap();
        assert_eq!(
            (chunked.status, chunked.body.as_str(), chunked.upstream()),
            (503, "abcde", None)
        );
        let closed = parse(b"HTTP/1.0 500 x\r\n\r\nuntil close").unwrap();
        assert_eq!(closed.body, "until close");
        assert!(parse(b"HTTP/1.1 200 OK\r\n").is_err(), "an incomplete head is an error");
        assert!(is_complete(b"HTTP/1.1 500 x\r\ncontent-length: 0\r\n\r\n"));
        assert!(!is_complete(b"HTTP/1.1 200 x\r\ncontent-length: 3\r\n\r\nab"));
        assert!(
            !is_complete(b"HTTP/1.1 200 x\r\n\r\nuntil close"),
            "no length: read to EOF"
        );
        assert!(is_complete(
            b"HTTP/1.1 200 x\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"
        ));
    }

    #[test]
    fn tally_shares() {
        let mut t = Tally::default();
        t.0.insert("a".into(), 3);
        t.0.insert("status:500".into(), 1);
        assert_eq!((t.total(), t.get("b"), t.share("a")), (4, 0, 0.75));
        assert_eq!(outcome(&Err("x".into())), "error");
    }
}
