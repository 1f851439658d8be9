//! `pier serve --kubernetes`: the Kubernetes source, leader election and the status writer, started
//! beside the pipeline. Every replica watches and serves; only the Lease holder writes status.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::source::kube::SourceConfig;
use crate::source::{Debounce, SourceState};
use crate::status::kube::WriterConfig;
use crate::status::leader::LeaseConfig;
use crate::xds::clients::Clients;

/// Settings of the Kubernetes mode.
#[derive(Clone)]
pub struct KubeSettings {
    /// `None`: kubeconfig or in-cluster configuration, the usual kube-rs way.
    pub client_config: Option<kube::Config>,
    /// Namespaces the namespaced kinds are watched in; empty: all.
    pub watch_namespaces: Vec<String>,
    pub lease_name: String,
    /// `None`: the client's default namespace (the Pod's own, in a cluster).
    pub lease_namespace: Option<String>,
    pub identity: String,
    pub lease_duration_secs: u64,
    pub lease_grace_secs: u64,
    pub status_writes_per_second: u32,
    pub nack_poll: Duration,
    /// Every status is read and compared again this often (repairs edits made by others).
    pub status_resync: Duration,
    pub retry_max: Duration,
}

impl std::fmt::Debug for KubeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // kube::Config carries credentials; never print it.
        f.debug_struct("KubeSettings")
            .field(
                "cluster_url",
                &self.client_config.as_ref().map(|c| c.cluster_url.to_string()),
            )
            .field("watch_namespaces", &self.watch_namespaces)
            .field("lease_name", &self.lease_name)
            .field("lease_namespace", &self.lease_namespace)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl KubeSettings {
    /// Production defaults for everything but what the command line names.
    pub fn new(
        watch_namespaces: Vec<String>,
        lease_name: String,
        lease_namespace: Option<String>,
        identity: String,
    ) -> Self {
        KubeSettings {
            client_config: None,
            watch_namespaces,
            lease_name,
            lease_namespace,
            identity,
            lease_duration_secs: 15,
            lease_grace_secs: 5,
            status_writes_per_second: 20,
            nack_poll: Duration::from_secs(2),
            status_resync: Duration::from_secs(600),
            retry_max: Duration::from_secs(30),
        }
    }
}

pub(super) struct Channels {
    pub source: watch::Sender<SourceState>,
    pub statuses: watch::Receiver<crate::snapshot::StatusSet>,
    pub clients: Arc<Clients>,
    pub metrics: crate::status::metrics::StatusMetrics,
    pub stop: watch::Receiver<bool>,
}

/// Connects to the API server and starts the source, leader election and status writer.
pub(super) async fn start(
    settings: KubeSettings,
    debounce: Debounce,
    controller_name: String,
    ch: Channels,
) -> Result<Vec<JoinHandle<()>>> {
    let config = match settings.client_config.clone() {
        Some(c) => c,
        None => kube::Config::infer()
            .await
            .context("finding a Kubernetes configuration (kubeconfig or in-cluster)")?,
    };
    let lease_namespace = settings
        .lease_namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let (leader_tx, leader_rx) = watch::channel(false);
    let source_cfg = SourceConfig {
        namespaces: settings.watch_namespaces.clone(),
        debounce,
        retry_max: settings.retry_max,
    };
    let lease = LeaseConfig {
        name: settings.lease_name.clone(),
        namespace: lease_namespace,
        identity: settings.identity.clone(),
        duration_secs: settings.lease_duration_secs,
        grace_secs: settings.lease_grace_secs,
    };
    let writer = WriterConfig {
        controller_name,
        writes_per_second: settings.status_writes_per_second,
        nack_poll: settings.nack_poll,
        resync: settings.status_resync,
    };
    Ok(vec![
        tokio::spawn(crate::source::kube::run(
            client.clone(),
            source_cfg,
            ch.source,
            ch.stop.clone(),
        )),
        tokio::spawn(crate::status::leader::run(
            client.clone(),
            lease,
            leader_tx,
            ch.stop.clone(),
        )),
        tokio::spawn(crate::status::kube::run(
            client,
            writer,
            ch.statuses,
            Arc::new(XdsRejections(ch.clients)),
            leader_rx,
            ch.metrics,
            ch.stop,
        )),
    ])
}

/// The status writer's view of what proxies reject: the xDS server's client registry.
struct XdsRejections(Arc<Clients>);

impl crate::status::Rejections for XdsRejections {
    fn of_gateway(&self, gateway: &str) -> Vec<(String, String)> {
        self.0.nacks_for_gateway(gateway)
    }
}
