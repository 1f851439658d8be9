//! mTLS for the ADS harness: a PKI written by `pier::certs` (what `pier certs` writes), the server's
//! [`TlsState`] over it, and tonic channels that present a chosen client certificate (or none).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use pier::certs::{CertsSpec, issue};
use pier::xds::transport::{TlsFiles, TlsState};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tonic::transport::{Channel, Endpoint, Uri};

pub const TRUST_DOMAIN: &str = "pier.test";

/// `pier certs` output in a temporary directory: a CA, a server certificate for 127.0.0.1, and a
/// client certificate per Gateway.
pub struct Pki {
    pub dir: tempfile::TempDir,
}

impl Pki {
    pub fn new(gateways: &[&str]) -> Pki {
        let dir = tempfile::tempdir().unwrap();
        issue(&CertsSpec {
            out: dir.path().to_path_buf(),
            trust_domain: TRUST_DOMAIN.into(),
            server_names: vec![],
            server_ips: vec!["127.0.0.1".parse().unwrap()],
            gateways: gateways.iter().map(|g| g.to_string()).collect(),
            days: 1,
        })
        .unwrap();
        Pki { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn files(&self) -> TlsFiles {
        TlsFiles {
            cert: self.path("server/tls.crt"),
            key: self.path("server/tls.key"),
            client_ca: self.path("ca.crt"),
            trust_domain: TRUST_DOMAIN.into(),
            reload_interval: Duration::from_millis(100),
        }
    }

    pub fn server(&self) -> Arc<TlsState> {
        Arc::new(TlsState::load(self.files()).unwrap())
    }

    /// A client trusting this PKI's CA, presenting Gateway `gateway`'s certificate (`None`: no certificate).
    pub fn client(&self, gateway: Option<&str>) -> Arc<rustls::ClientConfig> {
        let ca = std::fs::read(self.path("ca.crt")).unwrap();
        let gateway_dir = gateway.map(|g| self.path(&format!("gateways/{}", g.replace('/', "."))));
        client_config(&ca, gateway_dir.map(|d| (d.join("tls.crt"), d.join("tls.key"))))
    }
}

/// A rustls client config trusting `ca_pem`, with the client certificate and key at these paths if given.
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
