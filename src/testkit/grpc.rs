//! gRPC clients of pier's xDS port over mTLS, as a proxy or an operator tool connects: a rustls client
//! config trusting a CA and presenting a certificate (or none), and a tonic channel over it. Shared by
//! the integration tests and the e2e suite.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tonic::transport::{Channel, Endpoint, Uri};

/// A rustls client config trusting `ca_pem`, with the client certificate and key at these paths if given.
/// For tests: panics on unreadable files.
pub fn client_config(ca_pem: &[u8], identity: Option<(PathBuf, PathBuf)>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(c.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            builder
                .with_client_auth_cert(chain, PrivateKeyDer::from_pem_file(key).unwrap())
                .unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

/// A gRPC channel to `addr` over TLS with `config`.
pub async fn channel(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(format!("http://{addr}"))?
        .connect_with_connector(Connector { addr, config })
        .await
}

#[derive(Clone)]
struct Connector {
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
}

type Tls = TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

impl tonic::codegen::Service<Uri> for Connector {
    type Response = Tls;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Tls>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let (addr, config) = (self.addr, self.config.clone());
        Box::pin(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            let name = ServerName::IpAddress(addr.ip().into());
            let tls = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await?;
            Ok(TokioIo::new(tls))
        })
    }
}
