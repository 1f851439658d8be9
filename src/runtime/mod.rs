//! `pier serve`: wires source → translate → check → publish, and runs the ADS and admin servers until
//! SIGTERM/SIGINT.
//!
//! Latest-value channels (`tokio::sync::watch`) connect the stages, so a slow stage only ever sees the
//! newest input. A translation whose Envoy resources fail `envoy::check` for a Gateway is not
//! published for that Gateway: its proxies keep the last good configuration, and the error is shown in
//! `/debug/status`. Nothing is published before the source's first complete read.
//!
//! The source is the config directory, or with `kubernetes` set the API server ([`cluster`]), which also
//! starts leader election and the status writer; both sources feed the same pipeline.

mod cluster;
mod contain;
mod contain_status;
mod metrics;
pub mod pages;
mod pipeline;
mod refusals;
mod resolve;
pub use pipeline::ContainSettings;
mod xds;
pub use cluster::KubeSettings;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::admin::SharedView;
use crate::options::Options;
use crate::source::{Debounce, SourceState, dir};
use crate::xds::cache::SnapshotCache;
use crate::xds::clients::Clients;
use crate::xds::metrics::XdsMetrics;
use crate::xds::server::AdsServer;
use crate::xds::transport::{Security, XdsLimits};

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub config_dir: PathBuf,
    pub xds_address: SocketAddr,
    pub admin_address: SocketAddr,
    pub address_file: Option<PathBuf>,
    pub debounce: Debounce,
    pub options: Options,
    /// Watch the Kubernetes API instead of `config_dir`, and write status back.
    pub kubernetes: Option<KubeSettings>,
    /// mTLS or plaintext on the xDS port.
    pub xds_security: Security,
    pub xds_limits: XdsLimits,
    /// Config files larger than this are skipped (see `source::files`).
    pub max_file_bytes: usize,
    /// Who may use the admin API.
    pub admin_access: crate::admin::Access,
    /// NACK containment (`runtime::contain`).
    pub containment: ContainSettings,
}

/// Serves until SIGTERM or SIGINT.
pub async fn run(config: ServeConfig) -> Result<()> {
    run_until(config, wait_for_signal()).await
}

/// Serves until `shutdown` completes, then stops gracefully. For embedders that own the process's signals
/// (`pier demo` runs this runtime in-process beside Envoy and stops both on Ctrl-C).
pub async fn run_until(config: ServeConfig, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
    let (xds_listener, admin_listener) = bind(&config).await?;
    let xds_addr = xds_listener.local_addr()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });

    let mut registry = prometheus_client::registry::Registry::default();
    let cache = Arc::new(SnapshotCache::new());
    let clients = Arc::new(Clients::new());
    let xds_metrics = Arc::new(XdsMetrics::new(&mut registry));
    let tls = xds::security(&config.xds_security, xds_addr, &xds_metrics)?;
    if let Some(tls) = &tls {
        tokio::spawn(tls.clone().watch(xds_metrics.clone(), stop_rx.clone()));
    }
    let server = AdsServer::new(cache.clone(), clients.clone(), xds_metrics).with_limits(config.xds_limits.clone());
    let pipeline_metrics = metrics::PipelineMetrics::new(&mut registry);
    let view: SharedView = Arc::default();

    let (dir_tx, dir_rx) = watch::channel(SourceState::default());
    let (statuses_tx, statuses_rx) = watch::channel(crate::snapshot::StatusSet::new());
    let ends = Ends {
        source: dir_tx,
        statuses: statuses_rx,
        clients: clients.clone(),
        stop: stop_rx.clone(),
    };
    let source = start_source(&config, ends, &mut registry).await?;
    let sinks = pipeline::Sinks {
        server: server.clone(),
        view: view.clone(),
        statuses: statuses_tx,
        metrics: pipeline_metrics,
    };
    // With `--resolve-hostnames pier`, the resolver stage sits between the source and the pipeline.
    let model_rx = resolve::insert(dir_rx, &config.options, &mut registry, stop_rx.clone());
    let pipeline = tokio::spawn(pipeline::run(
        model_rx,
        config.options.clone(),
        sinks,
        config.containment.clone(),
        stop_rx.clone(),
    ));
    let xds = tokio::spawn(crate::xds::server::serve(xds_listener, server, tls, stopped(&stop_rx)));
    let admin_state = crate::admin::AdminState {
        cache,
        clients,
        view,
        registry: Arc::new(registry),
    };
    let access = config.admin_access.clone();
    let admin = tokio::spawn(crate::admin::serve(
        admin_listener,
        admin_state,
        access,
        stopped(&stop_rx),
    ));

    stopped(&stop_rx).await;
    info!("shutting down: closing xDS streams and the admin API");
    source.join().await;
    let _ = pipeline.await;
    if let Ok(Err(e)) = xds.await {
        warn!(error = %e, "xDS server ended with an error");
    }
    if let Ok(Err(e)) = admin.await {
        warn!(error = %e, "admin server ended with an error");
    }
    Ok(())
}

/// Binds the xDS and admin addresses (refusing an admin API open beyond loopback before binding
/// anything) and writes the address file.
async fn bind(config: &ServeConfig) -> Result<(tokio::net::TcpListener, tokio::net::TcpListener)> {
    match crate::admin::access::check_exposure(config.admin_address, &config.admin_access) {
        Ok(Some(warning)) => warn!("INSECURE: {warning}"),
        Ok(None) => {}
        Err(refusal) => anyhow::bail!(refusal),
    }
    let xds_listener = tokio::net::TcpListener::bind(config.xds_address)
        .await
        .with_context(|| format!("binding the xDS address {}", config.xds_address))?;
    let admin_listener = tokio::net::TcpListener::bind(config.admin_address)
        .await
        .with_context(|| format!("binding the admin address {}", config.admin_address))?;
    let xds_addr = xds_listener.local_addr()?;
    let admin_addr = admin_listener.local_addr()?;
    info!(xds = %xds_addr, admin = %admin_addr, "pier serving");
    if let Some(path) = &config.address_file {
        write_address_file(path, xds_addr, admin_addr)?;
    }
    Ok((xds_listener, admin_listener))
}

/// Resolves once `stop` says so.
fn stopped(stop: &watch::Receiver<bool>) -> impl Future<Output = ()> + Send + 'static {
    let mut stop = stop.clone();
    async move {
        let _ = stop.wait_for(|s| *s).await;
    }
}

/// The running source: the directory watcher, or the Kubernetes tasks (watches, status writer, Lease).
enum Source {
    Dir(tokio::task::JoinHandle<Result<(), notify::Error>>),
    Kube(Vec<tokio::task::JoinHandle<()>>),
}

/// What the source side of the runtime is handed: where models go, where statuses come from, the
/// proxies (whose NACKs the status writer reports), and the stop signal.
struct Ends {
    source: watch::Sender<SourceState>,
    statuses: watch::Receiver<crate::snapshot::StatusSet>,
    clients: Arc<Clients>,
    stop: watch::Receiver<bool>,
}

/// Starts the directory watcher, or with `--kubernetes` the cluster's tasks (whose status writer
/// registers its metrics only then).
async fn start_source(
    config: &ServeConfig,
    ends: Ends,
    registry: &mut prometheus_client::registry::Registry,
) -> Result<Source> {
    let Some(settings) = config.kubernetes.clone() else {
        return Ok(Source::Dir(tokio::spawn(dir::run(
            config.config_dir.clone(),
            config.max_file_bytes,
            config.debounce.clone(),
            ends.source,
            ends.stop,
        ))));
    };
    let channels = cluster::Channels {
        source: ends.source,
        statuses: ends.statuses,
        clients: ends.clients,
        metrics: crate::status::metrics::StatusMetrics::new(registry),
        stop: ends.stop,
    };
    let controller = config.options.controller_name.clone();
    Ok(Source::Kube(
        cluster::start(settings, config.debounce.clone(), controller, channels).await?,
    ))
}

impl Source {
    /// Waits for the source to stop, logging how it ended if not cleanly.
    async fn join(self) {
        match self {
            Source::Dir(task) => match task.await {
                Ok(Err(e)) => warn!(error = %e, "config directory watcher ended with an error"),
                Err(e) => warn!(error = %e, "config directory watcher panicked"),
                Ok(Ok(())) => {}
            },
            Source::Kube(tasks) => {
                for task in tasks {
                    if let Err(e) = task.await {
                        warn!(error = %e, "a Kubernetes task panicked");
                    }
                }
            }
        }
    }
}

fn write_address_file(path: &std::path::Path, xds: SocketAddr, admin: SocketAddr) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let body = serde_json::json!({ "xds": xds.to_string(), "admin": admin.to_string() });
    std::fs::write(&tmp, body.to_string()).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Completes on the first SIGTERM or SIGINT.
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        error!("cannot install signal handlers; stop pier by killing it");
        // Never complete: finishing here would read as a shutdown request.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => info!("SIGTERM"),
        _ = int.recv() => info!("SIGINT"),
    }
}
