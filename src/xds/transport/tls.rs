//! The xDS server's TLS: certificates loaded from files (the layout of a Kubernetes TLS Secret or of
//! `pier certs`), reloaded when they change on disk, and the client's identity read from its verified
//! certificate.
//!
//! Reload polls the files' contents rather than watching for events: Secret volumes swap a symlink
//! (`..data`) that inotify reports inconsistently, and reading three small files every few seconds is
//! cheap. A change that does not load (a key that does not match, a half-written file) keeps the
//! previous certificates and says why; new handshakes use new certificates, open connections keep theirs.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerConnection, WebPkiClientVerifier};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tracing::{error, info};

use crate::xds::identity::Identity;
use crate::xds::metrics::XdsMetrics;

/// Where the xDS server's certificates are, and what identities mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The CA bundle (PEM) client certificates must chain to.
    pub client_ca: PathBuf,
    /// The SPIFFE trust domain of the client certificates' URI SANs.
    pub trust_domain: String,
    /// How often the files are checked for changes.
    pub reload_interval: Duration,
}

/// The current TLS configuration, swapped on reload.
pub struct TlsState {
    files: TlsFiles,
    current: RwLock<Arc<rustls::ServerConfig>>,
    /// The files' bytes as last loaded (or last refused), to notice a change.
    seen: Mutex<Vec<u8>>,
}

impl TlsState {
    /// Loads the files; an error names the file and what is wrong with it.
    pub fn load(files: TlsFiles) -> Result<TlsState> {
        let bytes = read_all(&files)?;
        let config = server_config(&files, &bytes)?;
        Ok(TlsState {
            files,
            current: RwLock::new(Arc::new(config)),
            seen: Mutex::new(bytes.concat()),
        })
    }

    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.current.read().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// The identity a verified client certificate carries.
    pub fn identity(&self, conn: &ServerConnection) -> Identity {
        let Some(cert) = conn.peer_certificates().and_then(|c| c.first()) else {
            // The verifier requires a certificate; without one there is no identity to grant anything.
            return Identity::from_uris(&self.files.trust_domain, [], "no certificate".into());
        };
        match x509_parser::parse_x509_certificate(cert.as_ref()) {
            Ok((_, parsed)) => {
                let uris: Vec<String> = parsed
                    .subject_alternative_name()
                    .ok()
                    .flatten()
                    .map(|san| {
                        san.value
                            .general_names
                            .iter()
                            .filter_map(|n| match n {
                                x509_parser::extensions::GeneralName::URI(u) => Some(u.to_string()),
                                _ => None,
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let subject = uris.first().cloned().unwrap_or_else(|| parsed.subject().to_string());
                Identity::from_uris(&self.files.trust_domain, uris.iter().map(String::as_str), subject)
            }
            Err(e) => Identity::from_uris(&self.files.trust_domain, [], format!("unparsable certificate: {e}")),
        }
    }

    /// Checks the files every `reload_interval` until `stop`, swapping in certificates that changed and load.
    pub async fn watch(self: Arc<Self>, metrics: Arc<XdsMetrics>, mut stop: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(self.files.reload_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = tick.tick() => self.reload_if_changed(&metrics),
            }
        }
    }

    fn reload_if_changed(&self, metrics: &XdsMetrics) {
        let bytes = match read_all(&self.files) {
            Ok(b) => b,
            Err(e) => {
                error!(error = %format!("{e:#}"), "xDS TLS files unreadable; keeping the loaded certificates");
                metrics.tls_reload(false);
                return;
            }
        };
        let joined = bytes.concat();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if *seen == joined {
            return;
        }
        *seen = joined;
        match server_config(&self.files, &bytes) {
            Ok(config) => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
                info!(cert = %self.files.cert.display(), "reloaded the xDS TLS certificates");
                metrics.tls_reload(true);
            }
            Err(e) => {
                error!(error = %format!("{e:#}"), "new xDS TLS files do not load; keeping the previous certificates");
                metrics.tls_reload(false);
            }
        }
    }
}

fn read_all(files: &TlsFiles) -> Result<[Vec<u8>; 3]> {
    let read =
        |p: &PathBuf, what: &str| std::fs::read(p).with_context(|| format!("reading the xDS {what} {}", p.display()));
    Ok([
        read(&files.cert, "server certificate")?,
        read(&files.key, "server key")?,
        read(&files.client_ca, "client CA")?,
    ])
}

fn server_config(files: &TlsFiles, [cert, key, ca]: &[Vec<u8>; 3]) -> Result<rustls::ServerConfig> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: not a PEM certificate chain", files.cert.display()))?;
    if chain.is_empty() {
        bail!("{}: no certificate in it", files.cert.display());
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .with_context(|| format!("{}: not a PEM private key", files.key.display()))?;
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca) {
        let c = c.with_context(|| format!("{}: not a PEM CA bundle", files.client_ca.display()))?;
        roots
            .add(c)
            .with_context(|| format!("{}: a CA certificate does not parse", files.client_ca.display()))?;
    }
    if roots.is_empty() {
        bail!("{}: no CA certificate in it", files.client_ca.display());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .with_context(|| {
            format!(
                "{}: cannot verify client certificates with it",
                files.client_ca.display()
            )
        })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("TLS protocol versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .with_context(|| {
            format!(
                "{} and {} do not make a certificate and its key",
                files.cert.display(),
                files.key.display()
            )
        })?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}
