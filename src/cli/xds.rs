//! The xDS port's options: mTLS, the explicit insecure flag, and the bounds on what a client controls
//! (`xds::transport`). Also the proxy's side (`pier bootstrap`) and `pier certs`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::xds::transport::{Security, TlsFiles, XdsLimits};

pub use crate::xds::identity::DEFAULT_TRUST_DOMAIN;

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "xDS security")]
pub struct XdsArgs {
    /// pier's xDS server certificate chain (PEM). With --xds-tls-key and --xds-client-ca: mTLS.
    #[arg(long, env = "PIER_XDS_TLS_CERT", value_name = "PATH", requires_all = ["xds_tls_key", "xds_client_ca"])]
    pub xds_tls_cert: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long, env = "PIER_XDS_TLS_KEY", value_name = "PATH", requires = "xds_tls_cert")]
    pub xds_tls_key: Option<PathBuf>,
    /// CA bundle (PEM) that proxies' client certificates must chain to.
    #[arg(long, env = "PIER_XDS_CLIENT_CA", value_name = "PATH", requires = "xds_tls_cert")]
    pub xds_client_ca: Option<PathBuf>,
    /// SPIFFE trust domain of client certificates: spiffe://DOMAIN/ns/NS/gateway/NAME grants NS/NAME.
    #[arg(long, env = "PIER_XDS_TRUST_DOMAIN", default_value = DEFAULT_TRUST_DOMAIN)]
    pub xds_trust_domain: String,
    /// How often the certificate files are checked for changes (milliseconds).
    #[arg(long, env = "PIER_XDS_TLS_RELOAD_MS", default_value_t = 5_000)]
    pub xds_tls_reload_ms: u64,
    /// Serve xDS in plaintext on a non-loopback address. Anyone who can connect gets any Gateway's
    /// private keys; for isolated networks only.
    #[arg(long, env = "PIER_XDS_INSECURE_PLAINTEXT", conflicts_with = "xds_tls_cert")]
    pub xds_insecure_plaintext: bool,
    /// Largest xDS request message, in bytes, at least: pier raises it to what the configuration it
    /// serves lets a proxy send (a request naming every resource, twice over).
    #[arg(long, env = "PIER_XDS_MAX_REQUEST_BYTES", default_value_t = XdsLimits::default().max_request_bytes)]
    pub xds_max_request_bytes: usize,
    /// Largest xDS response the proxies accept, in bytes: a Gateway whose configuration would need a
    /// larger one is not published (its status says why). The default is what Envoy accepts (its
    /// message limit is off unless its bootstrap sets one; protobuf stops at 2 GiB).
    #[arg(long, env = "PIER_XDS_MAX_RESPONSE_BYTES", default_value_t = XdsLimits::default().max_response_bytes)]
    pub xds_max_response_bytes: usize,
    /// Largest xDS response the proxyless gRPC clients accept, in bytes, judged the same way on what
    /// they are served. The default is gRPC's own receive limit (4 MiB).
    #[arg(long, env = "PIER_XDS_MAX_GRPC_RESPONSE_BYTES", default_value_t = XdsLimits::default().max_grpc_response_bytes)]
    pub xds_max_grpc_response_bytes: usize,
    /// Largest `node` a proxy may announce (encoded bytes).
    #[arg(long, env = "PIER_XDS_MAX_NODE_BYTES", default_value_t = XdsLimits::default().max_node_bytes)]
    pub xds_max_node_bytes: usize,
    /// Most resource names in one xDS request, at least: raised like --xds-max-request-bytes.
    #[arg(long, env = "PIER_XDS_MAX_RESOURCE_NAMES", default_value_t = XdsLimits::default().max_resource_names)]
    pub xds_max_resource_names: usize,
    /// HTTP/2 streams open at once on one xDS connection.
    #[arg(long, env = "PIER_XDS_MAX_STREAMS_PER_CONNECTION", default_value_t = XdsLimits::default().max_streams_per_connection)]
    pub xds_max_streams_per_connection: u32,
    /// xDS connections from one peer address that have not authenticated: still in their TLS handshake,
    /// or whose certificate grants no Gateway (in plaintext, every connection). Proxies that presented a
    /// certificate do not count, so a fleet behind one SNAT address is not capped.
    #[arg(long, env = "PIER_XDS_MAX_CONNECTIONS_PER_PEER", default_value_t = XdsLimits::default().max_connections_per_peer)]
    pub xds_max_connections_per_peer: usize,
    /// xDS handshakes in flight at once, from every address together (in plaintext: connections that
    /// have not sent their first byte).
    #[arg(long, env = "PIER_XDS_MAX_PENDING_CONNECTIONS", default_value_t = XdsLimits::default().max_pending_connections)]
    pub xds_max_pending_connections: usize,
    /// Time for a client's TLS handshake (plaintext: its first byte), in milliseconds.
    #[arg(long, env = "PIER_XDS_HANDSHAKE_TIMEOUT_MS", default_value_t = 10_000)]
    pub xds_handshake_timeout_ms: u64,
    /// An xDS connection without any stream for this long is closed (milliseconds).
    #[arg(long, env = "PIER_XDS_IDLE_TIMEOUT_MS", default_value_t = 60_000)]
    pub xds_idle_timeout_ms: u64,
}

impl XdsArgs {
    pub fn security(&self) -> Security {
        match (&self.xds_tls_cert, &self.xds_tls_key, &self.xds_client_ca) {
            (Some(cert), Some(key), Some(client_ca)) => Security::Tls(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: client_ca.clone(),
                trust_domain: self.xds_trust_domain.clone(),
                reload_interval: Duration::from_millis(self.xds_tls_reload_ms.max(100)),
            }),
            _ => Security::Plaintext {
                insecure: self.xds_insecure_plaintext,
            },
        }
    }

    pub fn limits(&self) -> XdsLimits {
        XdsLimits {
            max_request_bytes: self.xds_max_request_bytes,
            max_response_bytes: self.xds_max_response_bytes,
            max_grpc_response_bytes: self.xds_max_grpc_response_bytes,
            max_node_bytes: self.xds_max_node_bytes,
            max_resource_names: self.xds_max_resource_names,
            max_streams_per_connection: self.xds_max_streams_per_connection.max(1),
            max_connections_per_peer: self.xds_max_connections_per_peer.max(1),
            max_pending_connections: self.xds_max_pending_connections.max(1),
            handshake_timeout: Duration::from_millis(self.xds_handshake_timeout_ms),
            idle_timeout: Duration::from_millis(self.xds_idle_timeout_ms),
        }
    }
}

/// `pier bootstrap`'s side of mTLS: the files Envoy presents and verifies pier with.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "xDS security")]
pub struct BootstrapTlsArgs {
    /// The Gateway's client certificate (PEM) Envoy presents to pier (`pier certs` writes
    /// gateways/NS.NAME/tls.crt). With --xds-tls-key and --xds-ca: mTLS to pier.
    #[arg(long, value_name = "PATH", requires_all = ["xds_tls_key", "xds_ca"])]
    pub xds_tls_cert: Option<String>,
    /// Its private key (PEM).
    #[arg(long, value_name = "PATH", requires = "xds_tls_cert")]
    pub xds_tls_key: Option<String>,
    /// CA bundle (PEM) pier's server certificate must chain to.
    #[arg(long, value_name = "PATH", requires = "xds_tls_cert")]
    pub xds_ca: Option<String>,
    /// The DNS name pier's certificate must carry, sent as SNI (default: the --xds-address host).
    #[arg(long, value_name = "NAME", requires = "xds_tls_cert")]
    pub xds_server_name: Option<String>,
    /// With --grpc: a directory of CA files, each named after the certificate provider instance pier
    /// verifies a TLS backend against (`pier explain` and the GRPCRoute's status name it), plus `.pem`:
    /// DIR/ca/configmap/NS/NAME.pem. Each becomes a `file_watcher` instance in the bootstrap, listed in
    /// the node's metadata so pier serves those backends to this client (gRFC A29).
    #[arg(long, value_name = "DIR", requires = "grpc")]
    pub trust_dir: Option<PathBuf>,
}

impl BootstrapTlsArgs {
    pub fn tls(&self) -> Option<crate::envoy::ads_bootstrap::XdsTls> {
        Some(crate::envoy::ads_bootstrap::XdsTls {
            cert: self.xds_tls_cert.clone()?,
            key: self.xds_tls_key.clone()?,
            ca: self.xds_ca.clone()?,
            server_name: self.xds_server_name.clone(),
        })
    }
}

/// `pier certs`.
#[derive(Debug, Clone, Args)]
pub struct CertsArgs {
    /// Output directory: ca.crt and ca.key (created once, then reused), server/ and gateways/NS.NAME/,
    /// each with tls.crt, tls.key and ca.crt.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A DNS name proxies reach pier at (the server certificate's SAN; repeatable).
    #[arg(long = "server-name", value_name = "NAME")]
    pub server_names: Vec<String>,
    /// An address proxies reach pier at (repeatable).
    #[arg(long = "server-ip", value_name = "IP")]
    pub server_ips: Vec<IpAddr>,
    /// A Gateway to issue a client certificate for (NAMESPACE/NAME; repeatable).
    #[arg(long = "gateway", value_name = "NAMESPACE/NAME")]
    pub gateways: Vec<String>,
    /// SPIFFE trust domain of the Gateways' certificates (as pier serve's --xds-trust-domain).
    #[arg(long, default_value = DEFAULT_TRUST_DOMAIN)]
    pub trust_domain: String,
    /// Validity of issued certificates, in days (the CA gets twice as long).
    #[arg(long, default_value_t = 365)]
    pub days: u32,
}

impl CertsArgs {
    pub fn spec(&self) -> crate::certs::CertsSpec {
        crate::certs::CertsSpec {
            out: self.out.clone(),
            trust_domain: self.trust_domain.clone(),
            server_names: self.server_names.clone(),
            server_ips: self.server_ips.clone(),
            gateways: self.gateways.clone(),
            days: self.days,
        }
    }
}

/// The certificate provider instances under `dir`: every `*.pem` file, named by its path below `dir`
/// without the extension (`DIR/ca/configmap/app/ca.pem` is instance `ca/configmap/app/ca`), with its
/// path as found (not resolved, so a file Kubernetes swaps by symlink is re-read there), in name order.
///
/// Entries whose name starts with `.` are skipped: a ConfigMap or projected volume keeps its real files
/// in `..data` and `..<timestamp>` directories and links each visible path into them, so those would
/// declare every file twice under names no cluster uses. Directory symlinks are followed (that is how
/// the visible paths are linked), down to [`TRUST_DEPTH`] levels, so a loop ends. A directory without
/// a `*.pem` file is an error: the flag would declare nothing.
pub fn trust_instances(dir: &std::path::Path) -> anyhow::Result<Vec<(String, String)>> {
    use anyhow::Context;
    let root = std::path::absolute(dir).with_context(|| format!("--trust-dir {}", dir.display()))?;
    let mut out = Vec::new();
    let mut pending = vec![(root.clone(), 0)];
    while let Some((d, depth)) = pending.pop() {
        let entries = std::fs::read_dir(&d).with_context(|| format!("--trust-dir: reading {}", d.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                continue;
            }
            if path.is_dir() {
                if depth < TRUST_DEPTH {
                    pending.push((path, depth + 1));
                }
            } else if path.extension().is_some_and(|e| e == "pem") {
                let rel = path.strip_prefix(&root).expect("found under root").with_extension("");
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into())
                    .collect();
                out.push((parts.join("/"), path.display().to_string()));
            }
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "--trust-dir {}: no *.pem file; name each CA file after its certificate provider instance, as \
             the GRPCRoute's pier.dev/ProxylessGRPC condition says (DIR/ca/configmap/NS/NAME.pem)",
            dir.display()
        );
    }
    out.sort();
    Ok(out)
}

/// How deep `--trust-dir` is searched: the longest instance name (`ca-bundle/KIND/NS/NAME`) is four
/// levels; more only guards against a symlink loop.
const TRUST_DEPTH: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pem_below_the_trust_dir_is_an_instance_named_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("ca/configmap/app");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(nested.join("backend-ca.pem"), "pem").unwrap();
        std::fs::write(dir.path().join("ca/system.pem"), "pem").unwrap();
        std::fs::write(dir.path().join("README"), "not a CA").unwrap();
        let trust = trust_instances(dir.path()).unwrap();
        let names: Vec<&str> = trust.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(names, ["ca/configmap/app/backend-ca", "ca/system"]);
        assert!(std::path::Path::new(&trust[0].1).is_absolute());

        // A ConfigMap volume: the files live in a hidden timestamped directory, `..data` links to it,
        // and each visible path links through `..data`; a loop back to the root ends.
        let volume = tempfile::tempdir().unwrap();
        let real = volume.path().join("..2026_11_27_20_00_00.1/ca/configmap/app");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("backend-ca.pem"), "pem").unwrap();
        std::os::unix::fs::symlink("..2026_11_27_20_00_00.1", volume.path().join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/ca", volume.path().join("ca")).unwrap();
        std::os::unix::fs::symlink(volume.path(), real.join("loop")).unwrap();
        let trust = trust_instances(volume.path()).unwrap();
        let names: Vec<&str> = trust.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(names, ["ca/configmap/app/backend-ca"], "{trust:?}");
        assert!(
            trust[0].1.ends_with("/ca/configmap/app/backend-ca.pem"),
            "the visible path: {trust:?}"
        );
        let empty = tempfile::tempdir().unwrap();
        let err = trust_instances(empty.path()).unwrap_err().to_string();
        assert!(err.contains("no *.pem file"), "{err}");
        assert!(trust_instances(&dir.path().join("missing")).is_err());
    }
}
