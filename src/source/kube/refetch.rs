//! Reads a Secret or ConfigMap again when something starts referencing one whose data the source had
//! dropped (see [`store`](super::store)). The answer comes back to the source's loop on a channel.

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use tokio::sync::mpsc;

use super::kinds;
use super::store::Ref;
use super::watch;

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
