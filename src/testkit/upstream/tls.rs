//! An upstream's TLS settings: its certificate chain and key, and optionally the CA that client
//! certificates must chain to (then one is required).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::testkit::pki::{Leaf, certificates_from_pem, pkcs8_key_from_pem};

/// TLS settings of an upstream: its certificate and, optionally, the CA client certificates must chain to
/// (then a client certificate is required).
pub struct ServerTls {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    pub client_ca: Option<CertificateDer<'static>>,
}

impl ServerTls {
    /// Serve `leaf`; accept any client (no client certificate asked for).
    pub fn new(leaf: &Leaf) -> ServerTls {
        ServerTls {
            chain: vec![leaf.cert_der.clone()],
            key: leaf.key_der(),
            client_ca: None,
        }
    }

    /// Serve `leaf` and require a client certificate issued by `client_ca`.
    pub fn requiring_client_cert(leaf: &Leaf, client_ca: CertificateDer<'static>) -> ServerTls {
        ServerTls {
            client_ca: Some(client_ca),
            ..ServerTls::new(leaf)
        }
    }

    /// Serve the certificate chain in `cert_pem` with the PKCS#8 key in `key_pem` (`BEGIN PRIVATE KEY`, what
    /// openssl and rcgen write); accept any client.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<ServerTls, String> {
        Ok(ServerTls {
            chain: certificates_from_pem(cert_pem)?,
            key: pkcs8_key_from_pem(key_pem)?,
            client_ca: None,
        })
    }

    /// Also require a client certificate issued by the first certificate in `ca_pem`.
    pub fn with_client_ca_pem(mut self, ca_pem: &str) -> Result<ServerTls, String> {
        let ca = certificates_from_pem(ca_pem)?.into_iter().next();
        self.client_ca = ca;
        Ok(self)
    }

    pub(super) fn config(self) -> Result<Arc<ServerConfig>, rustls::Error> {
        // An explicit provider: the process-wide default is ambiguous when several rustls backends are linked.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
        let builder = match self.client_ca {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                roots.add(ca)?;
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| rustls::Error::General(format!("client verifier: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_single_cert(self.chain, self.key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}
