//! An HTTPS GET that verifies the server against a given CA and sends SNI: what `curl --cacert` does, for
//! tests that talk TLS to a listener or upstream of their own.

use std::net::SocketAddr;
use std::sync::Arc;

use pier::testkit::http::{self, Response};
use pier::testkit::pki::certificates_from_pem;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// GET `https://host/path` from `addr`, trusting only the certificates in `ca_pem`.
pub async fn get(addr: SocketAddr, host: &str, path: &str, ca_pem: &str) -> Result<Response, String> {
    let mut roots = RootCertStore::empty();
    for der in certificates_from_pem(ca_pem)? {
        roots.add(der).map_err(|e| format!("CA certificate: {e}"))?;
    }
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {addr} ({host}): {e}"))?;
    http::request_over(tls, host, path).await
}
