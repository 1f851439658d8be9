//! A GET against a running pier's admin API, with the bearer token `--admin-token-file` set up there.
//! One request per connection: these commands ask once and print.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// The longest one admin request may take, connect to last byte.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Where pier's admin API is and how to authenticate to it.
#[derive(Debug, Clone)]
pub struct Admin {
    pub address: SocketAddr,
    pub token: Option<String>,
}

impl Admin {
    /// `token_file` holds the token as `pier serve --admin-token-file` reads it (surrounding whitespace
    /// ignored).
    pub fn new(address: SocketAddr, token_file: Option<&Path>) -> Result<Admin, String> {
        let token = token_file
            .map(|p| {
                std::fs::read_to_string(p)
                    .map(|t| t.trim().to_string())
                    .map_err(|e| format!("reading the admin token {}: {e}", p.display()))
            })
            .transpose()?;
        Ok(Admin { address, token })
    }

    /// The JSON document at `path` (e.g. `/debug/clients`).
    pub async fn get_json(&self, path: &str) -> Result<serde_json::Value, String> {
        let body = self.get(path).await?;
        serde_json::from_slice(&body).map_err(|e| format!("{path} on {}: not JSON: {e}", self.address))
    }

    /// The body at `path`; any status but 200 is an error naming it and what pier said.
    pub async fn get(&self, path: &str) -> Result<Bytes, String> {
        let at = format!("{path} on pier's admin API at {}", self.address);
        tokio::time::timeout(TIMEOUT, self.fetch(path))
            .await
            .map_err(|_| format!("{at}: no answer within {TIMEOUT:?}"))?
            .map_err(|e| format!("{at}: {e}"))
    }

    async fn fetch(&self, path: &str) -> Result<Bytes, String> {
        let tcp = tokio::net::TcpStream::connect(self.address)
            .await
            .map_err(|e| format!("connect: {e} (is `pier serve` running, with --admin-address there?)"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(connection);
        let mut request = hyper::Request::get(path).header(hyper::header::HOST, self.address.ip().to_string());
        if let Some(token) = &self.token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Empty::<Bytes>::new()).map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("request: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
            .to_bytes();
        match status.as_u16() {
            200 => Ok(body),
            401 | 403 => Err(format!(
                "{status}: {} (pass the token pier serves with: --admin-token-file)",
                String::from_utf8_lossy(&body).trim()
            )),
            _ => Err(format!("{status}: {}", String::from_utf8_lossy(&body).trim())),
        }
    }
}
