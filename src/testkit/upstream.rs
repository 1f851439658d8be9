//! The upstream servers Envoy forwards to: plain HTTP or TLS (rustls) on `127.0.0.x:<port>`, speaking HTTP/1.1,
//! h2 (ALPN) and h2c (prior knowledge) through hyper-util's auto server. Every response carries the server's
//! name (`x-upstream` header and body), which is how a client sees where a request went.
//!
//! Each server records what it saw, because the interesting claims are about the upstream's view: every
//! accepted connection, every TLS handshake attempt (the SNI offered, and why it failed), connections that
//! spoke plaintext to a TLS-only port, and every request (path, HTTP version, whether it arrived over TLS, the
//! SNI of its connection, the client certificate's subject). A TLS upstream can also require a client
//! certificate and verify it against a CA.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{Acceptor, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::LazyConfigAcceptor;

use super::pki::{Leaf, certificates_from_pem, pkcs8_key_from_pem, subject_cn};

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

    fn config(self) -> Result<Arc<ServerConfig>, rustls::Error> {
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

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub version: String,
    pub tls: bool,
    pub sni: Option<String>,
    /// Subject CN of the client certificate the connection presented, if any.
    pub client_cn: Option<String>,
}

/// One TLS handshake attempt: the SNI offered and, if it failed, why.
#[derive(Debug, Clone)]
pub struct Handshake {
    pub sni: Option<String>,
    pub error: Option<String>,
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<Seen>>,
    handshakes: Mutex<Vec<Handshake>>,
    connections: AtomicUsize,
    plaintext_on_tls: AtomicUsize,
}

#[derive(Clone)]
struct ConnInfo {
    tls: bool,
    sni: Option<String>,
    client_cn: Option<String>,
}

/// A running upstream; stops accepting when dropped.
pub struct Upstream {
    pub name: String,
    pub addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Upstream {
    /// Plain HTTP (HTTP/1.1 and h2c) on `ip:<ephemeral>`. For tests: panics if it cannot bind.
    pub async fn http(name: &str, ip: Ipv4Addr) -> Upstream {
        Self::bind(name, SocketAddr::from((ip, 0)), None)
            .await
            .expect("binding an upstream")
    }

    /// TLS only (HTTP/1.1 and h2 by ALPN) on `ip:<ephemeral>`. For tests: panics if it cannot bind.
    pub async fn https(name: &str, ip: Ipv4Addr, tls: ServerTls) -> Upstream {
        Self::bind(name, SocketAddr::from((ip, 0)), Some(tls))
            .await
            .expect("binding an upstream")
    }

    /// On exactly `addr` (the demo's fixed addresses; tests that need one port on two addresses). Fails
    /// when the address cannot be bound or the TLS settings are unusable.
    pub async fn bind(name: &str, addr: SocketAddr, tls: Option<ServerTls>) -> std::io::Result<Upstream> {
        let tls = tls
            .map(ServerTls::config)
            .transpose()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("TLS settings: {e}")))?;
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        let task = tokio::spawn(accept_loop(listener, name.to_string(), tls, state.clone()));
        Ok(Upstream {
            name: name.to_string(),
            addr,
            state,
            task,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn ip(&self) -> String {
        self.addr.ip().to_string()
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn handshakes(&self) -> Vec<Handshake> {
        self.state.handshakes.lock().unwrap().clone()
    }

    /// TCP connections accepted (including ones that never got to a request).
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Connections to this TLS-only upstream whose first byte was not a TLS handshake record.
    pub fn plaintext_attempts(&self) -> usize {
        self.state.plaintext_on_tls.load(Ordering::SeqCst)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, name: String, tls: Option<Arc<ServerConfig>>, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        state.connections.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(handle(stream, name.clone(), tls.clone(), state.clone()));
    }
}

async fn handle(stream: TcpStream, name: String, tls: Option<Arc<ServerConfig>>, state: Arc<State>) {
    let Some(config) = tls else {
        let info = ConnInfo {
            tls: false,
            sni: None,
            client_cn: None,
        };
        return serve(stream, name, info, state).await;
    };
    // A TLS connection starts with a handshake record (content type 22); anything else is plaintext
    // arriving at a TLS-only port, which tests assert never happens.
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) if first[0] == 0x16 => {}
        Ok(1) => {
            state.plaintext_on_tls.fetch_add(1, Ordering::SeqCst);
            return;
        }
        _ => return,
    }
    let start = match LazyConfigAcceptor::new(Acceptor::default(), stream).await {
        Ok(start) => start,
        Err(e) => {
            let attempt = Handshake {
                sni: None,
                error: Some(e.to_string()),
            };
            state.handshakes.lock().unwrap().push(attempt);
            return;
        }
    };
    let sni = start.client_hello().server_name().map(str::to_string);
    match start.into_stream(config).await {
        Ok(tls_stream) => {
            let client_cn = tls_stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| subject_cn(c));
            state.handshakes.lock().unwrap().push(Handshake {
                sni: sni.clone(),
                error: None,
            });
            serve(
                tls_stream,
                name,
                ConnInfo {
                    tls: true,
                    sni,
                    client_cn,
                },
                state,
            )
            .await;
        }
        Err(e) => {
            state.handshakes.lock().unwrap().push(Handshake {
                sni,
                error: Some(e.to_string()),
            });
        }
    }
}

async fn serve<S>(io: S, name: String, info: ConnInfo, state: Arc<State>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let seen = Seen {
            path: req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default(),
            version: format!("{:?}", req.version()),
            tls: info.tls,
            sni: info.sni.clone(),
            client_cn: info.client_cn.clone(),
        };
        state.requests.lock().unwrap().push(seen);
        let response = Response::builder()
            .header("x-upstream", name.as_str())
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(format!("{name}\n"))))
            .expect("response");
        async move { Ok::<_, Infallible>(response) }
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{eventually, http, lo, pki::Ca};
    use rustls::ClientConfig;
    use rustls::pki_types::ServerName;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;
    use tokio_rustls::TlsConnector;

    fn connector(ca: &Ca, client: Option<&Leaf>) -> TlsConnector {
        let mut roots = RootCertStore::empty();
        roots.add(ca.cert_der()).unwrap();
        let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match client {
            Some(leaf) => builder
                .with_client_auth_cert(vec![leaf.cert_der.clone()], leaf.key_der())
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        TlsConnector::from(Arc::new(config))
    }

    #[tokio::test]
    async fn plain_upstream_names_itself_and_records_requests() {
        let up = Upstream::http("plain", lo(2)).await;
        let response = http::get(up.addr, "x.e2e.test", "/hello?q=1").await.unwrap();
        assert_eq!(
            (response.status, response.upstream(), response.body.as_str()),
            (200, Some("plain"), "plain\n")
        );
        let seen = up.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].path.as_str(), seen[0].tls, seen[0].version.as_str()),
            ("/hello?q=1", false, "HTTP/1.1")
        );
        assert_eq!(up.connections(), 1);
    }

    #[tokio::test]
    async fn tls_upstream_records_sni_and_client_certificate_and_refuses_the_rest() {
        let ca = Ca::new("e2e test CA");
        let server = ca.server(&["api.e2e.test"], &[]);
        let client = ca.client("pier-e2e-client");
        let up = Upstream::https(
            "secure",
            lo(2),
            ServerTls::requiring_client_cert(&server, ca.cert_der()),
        )
        .await;
        let name = ServerName::try_from("api.e2e.test").unwrap();

        let tcp = TcpStream::connect(up.addr).await.unwrap();
        let tls = connector(&ca, Some(&client)).connect(name.clone(), tcp).await.unwrap();
        let response = http::request_over(tls, "api.e2e.test", "/mtls").await.unwrap();
        assert_eq!((response.status, response.upstream()), (200, Some("secure")));
        let seen = up.requests();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].tls);
        assert_eq!(seen[0].sni.as_deref(), Some("api.e2e.test"));
        assert_eq!(seen[0].client_cn.as_deref(), Some("pier-e2e-client"));

        // Without a client certificate the handshake fails server-side and no request is recorded.
        let tcp = TcpStream::connect(up.addr).await.unwrap();
        if let Ok(tls) = connector(&ca, None).connect(name, tcp).await {
            // TLS 1.3 clients finish before the server has checked their (missing) certificate.
            let _ = http::request_over(tls, "api.e2e.test", "/anon").await;
        }
        let failed = eventually("the refused handshake", Duration::from_secs(5), || async {
            let hs = up.handshakes();
            if hs.iter().any(|h| h.error.is_some()) {
                Ok(hs)
            } else {
                Err(format!("{hs:?}"))
            }
        })
        .await
        .unwrap();
        assert_eq!(failed.len(), 2);
        assert_eq!(
            up.requests().len(),
            1,
            "the anonymous request never reached the service"
        );

        // Plaintext to the TLS port is counted, never served.
        let mut tcp = TcpStream::connect(up.addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        eventually("the plaintext attempt", Duration::from_secs(5), || async {
            if up.plaintext_attempts() == 1 {
                Ok(())
            } else {
                Err("not yet".into())
            }
        })
        .await
        .unwrap();
        assert_eq!(up.requests().len(), 1);
    }
}
