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

/// Why an admin request has no answer; each names the request and says what to check.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("reading the admin token {path}: {error}")]
    Token { path: String, error: std::io::Error },
    #[error("{at}: no answer within {after:?}")]
    Timeout { at: String, after: Duration },
    #[error("{at}: connect: {error} (is `pier serve` running, with --admin-address there?)")]
    Connect { at: String, error: std::io::Error },
    #[error("{at}: {step}: {detail}")]
    Http {
        at: String,
        step: &'static str,
        detail: String,
    },
    #[error("{at}: {status}: {body}{}", if *.status == 401 || *.status == 403 { " (pass the token pier serves with: --admin-token-file)" } else { "" })]
    Refused { at: String, status: u16, body: String },
    #[error("{at}: not JSON: {error}")]
    NotJson { at: String, error: serde_json::Error },
}

impl Admin {
    /// `token_file` holds the token as `pier serve --admin-token-file` reads it (surrounding whitespace
    /// ignored).
    pub fn new(address: SocketAddr, token_file: Option<&Path>) -> Result<Admin, AdminError> {
        let token = token_file
            .map(|p| {
                std::fs::read_to_string(p)
                    .map(|t| t.trim().to_string())
                    .map_err(|error| AdminError::Token {
                        path: p.display().to_string(),
                        error,
                    })
            })
            .transpose()?;
        Ok(Admin { address, token })
    }

    /// The JSON document at `path` (e.g. `/debug/clients`).
    pub async fn get_json(&self, path: &str) -> Result<serde_json::Value, AdminError> {
        let body = self.get(path).await?;
        serde_json::from_slice(&body).map_err(|error| AdminError::NotJson {
            at: self.at(path),
            error,
        })
    }

    /// The body at `path`; any status but 200 is an error naming it and what pier said.
    pub async fn get(&self, path: &str) -> Result<Bytes, AdminError> {
        tokio::time::timeout(TIMEOUT, self.fetch(path))
            .await
            .map_err(|_| AdminError::Timeout {
                at: self.at(path),
                after: TIMEOUT,
            })?
    }

    fn at(&self, path: &str) -> String {
        format!("{path} on pier's admin API at {}", self.address)
    }

    async fn fetch(&self, path: &str) -> Result<Bytes, AdminError> {
        let http = |step: &'static str| {
            move |e: hyper::Error| AdminError::Http {
                at: self.at(path),
                step,
                detail: e.to_string(),
            }
        };
        let tcp = tokio::net::TcpStream::connect(self.address)
            .await
            .map_err(|error| AdminError::Connect {
                at: self.at(path),
                error,
            })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(http("handshake"))?;
        tokio::spawn(connection);
        let mut request = hyper::Request::get(path).header(hyper::header::HOST, self.address.ip().to_string());
        if let Some(token) = &self.token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Empty::<Bytes>::new()).map_err(|e| AdminError::Http {
            at: self.at(path),
            step: "request",
            detail: e.to_string(),
        })?;
        let response = sender.send_request(request).await.map_err(http("request"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(http("reading the answer"))?
            .to_bytes();
        if status.as_u16() == 200 {
            return Ok(body);
        }
        Err(AdminError::Refused {
            at: self.at(path),
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body).trim().to_string(),
        })
    }
}
