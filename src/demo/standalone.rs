//! `pier upstream`: one demo upstream ([`crate::testkit::upstream`]) on an address of the caller's choosing,
//! until SIGTERM or SIGINT. It is how the docker-compose stack gets its upstreams from the pier image alone:
//! each upstream container runs this with its own name, and the TLS ones with a certificate mounted into it.
//!
//! The signals are handled, not left to their default: in a container this process is PID 1, which the
//! kernel does not kill on a signal it has no handler for, so `docker compose down` would wait out its
//! timeout and SIGKILL it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

use super::Signals;
use crate::testkit::upstream::{ServerTls, Upstream};

/// What `pier upstream` serves.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Carried by every answer (`x-upstream` header and body).
    pub name: String,
    pub listen: SocketAddr,
    /// TLS only when set; plain HTTP/1.1 and h2c otherwise.
    pub tls: Option<UpstreamTls>,
}

/// PEM files of a TLS upstream.
#[derive(Debug, Clone)]
pub struct UpstreamTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// When set, a client certificate issued by this CA is required.
    pub client_ca: Option<PathBuf>,
}

/// Serves until SIGTERM or SIGINT. Fails, naming the option and file, when a PEM file cannot be read or
/// used, or when the address cannot be bound.
pub async fn run_upstream(config: UpstreamConfig) -> Result<()> {
    let mut signals = Signals::install()?;
    let tls = config.tls.as_ref().map(server_tls).transpose()?;
    let how = match &config.tls {
        None => "HTTP/1.1 and h2c",
        Some(t) if t.client_ca.is_some() => "TLS, client certificate required",
        Some(_) => "TLS",
    };
    let upstream = Upstream::bind(&config.name, config.listen, tls)
        .await
        .with_context(|| format!("upstream {}: cannot serve on {}", config.name, config.listen))?;
    tracing::info!("upstream {} serving on {} ({how})", config.name, upstream.addr);
    let signal = signals.next().await;
    tracing::info!("{signal}: stopping");
    Ok(())
}

fn server_tls(files: &UpstreamTls) -> Result<ServerTls> {
    let cert = read("--tls-cert", &files.cert)?;
    let key = read("--tls-key", &files.key)?;
    let tls = ServerTls::from_pem(&cert, &key).map_err(|e| {
        anyhow!(
            "--tls-cert {} / --tls-key {}: {e}",
            files.cert.display(),
            files.key.display()
        )
    })?;
    let Some(ca_path) = &files.client_ca else {
        return Ok(tls);
    };
    tls.with_client_ca_pem(&read("--client-ca", ca_path)?)
        .map_err(|e| anyhow!("--client-ca {}: {e}", ca_path.display()))
}

fn read(option: &str, path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{option}: reading {}", path.display()))
}
