//! Reads a Secret or ConfigMap again when something starts referencing one whose data the source had
//! dropped (see [`store`](super::store)). The answer comes back to the source's loop on a channel.

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use tokio::sync::mpsc;
use tracing::warn;

use super::store::Ref;
use super::watch;
use crate::api::kinds;

const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A Secret/ConfigMap fetched again: `None` if it no longer exists.
pub type Fetched = (Ref, Result<Option<DynamicObject>, String>);

pub fn spawn_fetch(client: kube::Client, r: Ref, tx: mpsc::UnboundedSender<Fetched>) {
    let kind = kinds::WATCHED
        .iter()
        .find(|k| k.name == r.0)
        .expect("Secret and ConfigMap are watched");
    let api: Api<DynamicObject> = Api::namespaced_with(client, &r.1.namespace, &kind.api_resource());
    tokio::spawn(async move {
        // Bounded: publishing waits for this read, and kube-rs has no overall request timeout.
        let result = match tokio::time::timeout(FETCH_TIMEOUT, api.get_opt(&r.1.name)).await {
            Ok(Ok(Some(mut obj))) => {
                watch::slim(&mut obj);
                Ok(Some(obj))
            }
            Ok(Ok(None)) => Ok(None),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {FETCH_TIMEOUT:?}")),
        };
        let _ = tx.send((r, result));
    });
}

impl super::Source {
    /// A Secret or ConfigMap read again (`fetch`) is filled into its watch's store, unless a newer event
    /// or a delete came first.
    pub(super) fn fetched(&mut self, r: Ref, result: Result<Option<DynamicObject>, String>) {
        self.fetching.remove(&r);
        let Some(i) = self.parts.iter().position(|p| p.covers(r.0, &r.1.namespace)) else {
            return;
        };
        match result {
            Ok(Some(obj)) => {
                let p = &self.parts[i];
                // Only fill in an object the watch still holds without data: a newer watch event, or a
                // delete, wins over this read.
                if !p.trimmed.contains(&r.1) {
                    return;
                }
                match watch::decode(p.kind, obj) {
                    Ok(obj) => {
                        self.parts[i].trimmed.remove(&r.1);
                        self.put(i, obj);
                    }
                    Err(e) => {
                        warn!(error = %e, "refetched object refused");
                        self.failed.insert(r);
                    }
                }
            }
            Ok(None) => {}
            Err(e) => {
                warn!(object = %format!("{} {}", r.0, r.1), error = %e, "fetching a newly referenced object failed");
                self.failed.insert(r);
            }
        }
    }
}
