//! The options of the demo commands (only with the `demo` feature, on by default): `pier demo` and
//! `pier upstream`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

/// `pier demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The example manifests (with their upstream certificates in DIR/upstream-certs/).
    #[arg(long, value_name = "DIR", default_value = "examples")]
    pub examples: PathBuf,
    /// Port of the Gateway's HTTP listener on 127.0.0.1 (the example says 8080; 0 picks a free port).
    #[arg(long, value_name = "PORT", default_value_t = crate::demo::EXAMPLE_HTTP_PORT)]
    pub listen_port_http: u16,
    /// Port of the Gateway's HTTPS listener on 127.0.0.1 (the example says 8443; 0 picks a free port).
    #[arg(long, value_name = "PORT", default_value_t = crate::demo::EXAMPLE_HTTPS_PORT)]
    pub listen_port_https: u16,
    /// Envoy speaks incremental (delta) xDS instead of state-of-the-world.
    #[arg(long)]
    pub delta: bool,
    /// Exit after printing the results instead of staying up (non-zero if any request went wrong).
    #[arg(long)]
    pub once: bool,
}

/// `pier upstream`: one of the demo's upstream servers, on an address of the caller's choosing.
#[derive(Debug, Args)]
pub struct UpstreamArgs {
    /// The name every answer carries (the `x-upstream` header and the body).
    #[arg(long)]
    pub name: String,
    /// The address to listen on (`0.0.0.0:8080` in a container).
    #[arg(long, value_name = "IP:PORT")]
    pub listen: SocketAddr,
    /// Serve TLS only (HTTP/1.1 and h2 by ALPN) with this certificate chain (PEM).
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Its private key (PEM, PKCS#8: `BEGIN PRIVATE KEY`).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Also require a client certificate issued by the (first) CA certificate in this PEM file.
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
}

impl UpstreamArgs {
    pub fn config(&self) -> crate::demo::standalone::UpstreamConfig {
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(crate::demo::standalone::UpstreamTls {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: self.client_ca.clone(),
            }),
            _ => None,
        };
        crate::demo::standalone::UpstreamConfig {
            name: self.name.clone(),
            listen: self.listen,
            tls,
        }
    }
}
