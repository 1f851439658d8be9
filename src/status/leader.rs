//! Leader election for status writes, on a `coordination.k8s.io/v1` Lease through kube-lease-manager.
//! Every replica serves xDS; only the Lease holder writes status, so two replicas never fight over an
//! object's status. On shutdown the holder releases the Lease (a clean handoff: the next replica takes
//! over as soon as it looks again, within one lease duration, instead of waiting for expiry plus skew).

use std::time::Duration;

use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tracing::{info, warn};

#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub name: String,
    pub namespace: String,
    /// This replica's identity on the Lease (the Pod name in a cluster).
    pub identity: String,
    pub duration_secs: u64,
    pub grace_secs: u64,
}

/// Campaigns for the Lease until `stop` fires, publishing "this replica leads" on `leader`.
pub async fn run(client: kube::Client, cfg: LeaseConfig, leader: watch::Sender<bool>, mut stop: watch::Receiver<bool>) {
    let mut retry = Duration::from_millis(200);
    loop {
        let built = LeaseManagerBuilder::new(client.clone(), &cfg.name)
            .with_namespace(&cfg.namespace)
            .with_identity(&cfg.identity)
            .with_duration(cfg.duration_secs)
            .with_grace(cfg.grace_secs)
            .build()
            .await;
        let manager = match built {
            Ok(m) => m,
            Err(e) => {
                warn!(lease = %format!("{}/{}", cfg.namespace, cfg.name), error = %e, "leader election cannot start; retrying");
                tokio::select! {
                    _ = stopped(&mut stop) => return,
                    _ = tokio::time::sleep(retry) => {}
                }
                retry = (retry * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        let (mut state, mut task) = manager.watch().await;
        loop {
            tokio::select! {
                _ = stopped(&mut stop) => {
                    let _ = leader.send(false);
                    // Closing the channel makes the manager release the Lease if it holds it.
                    drop(state);
                    match tokio::time::timeout(Duration::from_secs(5), &mut task).await {
                        Ok(Ok(Ok(_))) => info!(identity = %cfg.identity, "Lease released"),
                        Ok(Ok(Err(e))) => warn!(error = %e, "releasing the Lease failed; it expires on its own"),
                        Ok(Err(e)) => warn!(error = %e, "lease manager task failed"),
                        Err(_) => {
                            warn!("releasing the Lease timed out; it expires on its own");
                            task.abort();
                        }
                    }
                    return;
                }
                changed = state.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let leads = *state.borrow_and_update();
                    info!(identity = %cfg.identity, leads, "leadership changed");
                    let _ = leader.send(leads);
                }
            }
        }
        // The manager task ended on its own (an API error it gives up on): start over as a follower.
        let _ = leader.send(false);
        if let Err(e) = task.await {
            warn!(error = %e, "lease manager task failed");
        }
        tokio::select! {
            _ = stopped(&mut stop) => return,
            _ = tokio::time::sleep(retry) => {}
        }
    }
}

/// Completes once `stop` is set (or its sender is gone); holds no borrow across awaits.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
