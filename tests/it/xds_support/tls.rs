//! mTLS for the ADS harness: a PKI written by `pier::certs` (what `pier certs` writes), the server's
//! [`TlsState`] over it, and tonic channels that present a chosen client certificate (or none).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pier::certs::{CertsSpec, issue};
use pier::xds::transport::{TlsFiles, TlsState};

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

pub use pier::testkit::grpc::{channel, client_config};
