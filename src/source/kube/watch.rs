//! One kube-rs watcher per [`Partition`](super::store::Partition), and the decoding of what it delivers.
//!
//! Watchers are kube-rs's own (`kube::runtime::watcher`): list with a resourceVersion, then watch with
//! bookmarks, resuming from the last version seen when a watch connection drops and re-listing on
//! 410 Gone. Errors come out of the stream and the watcher retries after [`Backoff`]; the source decides
//! what an error means (a 404 on list is a CRD that is not installed).
//!
//! Objects are slimmed before anything keeps them: `managedFields` and the last-applied annotation are
//! dropped in the stream itself, and decoding goes through the same parser as files
//! ([`decode_value`](crate::model::yaml::decode_value)), so a bad object is reported with its kind,
//! name and field path exactly as a bad file would be.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

use crate::api::kinds::WatchedKind;
use crate::model::{Object, ObjectKey};

pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

pub type Event = (usize, Result<watcher::Event<DynamicObject>, watcher::Error>);
pub type EventStream = Pin<Box<dyn Stream<Item = Event> + Send>>;

/// Exponential retry delay, from 100 ms doubling up to `max`; reset by the watcher on success.
#[derive(Debug, Clone)]
pub struct RetryBackoff {
    next: Duration,
    max: Duration,
}

impl RetryBackoff {
    const FIRST: Duration = Duration::from_millis(100);

    pub fn new(max: Duration) -> Self {
        Self { next: Self::FIRST, max }
    }
}

impl Iterator for RetryBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let now = self.next.min(self.max);
        self.next = (self.next * 2).min(self.max);
        Some(now)
    }
}

impl Backoff for RetryBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// The watch of partition `index`: `kind` in `namespace` (all namespaces if `None`).
pub fn stream(
    client: kube::Client,
    index: usize,
    kind: &WatchedKind,
    namespace: Option<&str>,
    retry_max: Duration,
) -> EventStream {
    let ar = kind.api_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) if kind.namespaced => Api::namespaced_with(client, ns, &ar),
        _ => Api::all_with(client, &ar),
    };
    watcher(api, watcher::Config::default())
        .modify(slim)
        .backoff(RetryBackoff::new(retry_max))
        .map(move |ev| (index, ev))
        .boxed()
}

/// Drops what pier never reads and the API server repeats on every object.
pub fn slim(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
    if let Some(annotations) = obj.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            obj.metadata.annotations = None;
        }
    }
}

/// Why a watched object was refused; each names the object and, from the parser, the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("{kind}: {error}")]
    Json { kind: String, error: serde_json::Error },
    #[error("{0}: not a kind pier reads")]
    Unread(String),
    #[error(transparent)]
    Parse(#[from] crate::model::yaml::ParseError),
}

/// Types a watched object. `Err` names the object and the field at fault.
pub fn decode(kind: &WatchedKind, obj: DynamicObject) -> Result<Object, DecodeError> {
    let mut value = serde_json::to_value(obj).map_err(|error| DecodeError::Json {
        kind: kind.describe(),
        error,
    })?;
    // List items of built-in kinds carry no apiVersion/kind; the watch knows what it asked for.
    value["apiVersion"] = Value::String(kind.api_version());
    value["kind"] = Value::String(kind.kind.to_string());
    let source = format!("{} watch", kind.describe());
    crate::model::yaml::decode_value(&source, value)?.ok_or_else(|| DecodeError::Unread(kind.describe()))
}

/// The API server does not serve the kind (404 on list): its CRD is not installed.
pub fn is_not_found(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 404,
        _ => false,
    }
}

/// The model key of a watched object (namespaced objects without a namespace land in `default`).
pub fn key_of(kind: &WatchedKind, obj: &DynamicObject) -> ObjectKey {
    let name = obj.metadata.name.clone().unwrap_or_default();
    match (kind.namespaced, obj.metadata.namespace.as_deref()) {
        (true, Some(ns)) if !ns.is_empty() => ObjectKey::new(ns, name),
        (true, _) => ObjectKey::new(crate::model::insert::DEFAULT_NAMESPACE, name),
        (false, _) => ObjectKey::cluster(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_and_resets() {
        let mut b = RetryBackoff::new(Duration::from_millis(350));
        let got: Vec<u128> = (0..4).map(|_| b.next().unwrap().as_millis()).collect();
        assert_eq!(got, [100, 200, 350, 350]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn slim_drops_managed_fields_and_last_applied_and_decode_names_the_field() {
        let mut obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7",
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {LAST_APPLIED: "{}"}},
            "spec": {"ports": [{"port": "eighty"}]}
        }))
        .unwrap();
        slim(&mut obj);
        assert!(obj.metadata.managed_fields.is_none() && obj.metadata.annotations.is_none());
        let svc = crate::api::kinds::WATCHED.iter().find(|k| k.name == "Service").unwrap();
        let err = decode(svc, obj).unwrap_err().to_string();
        assert!(
            err.contains("Service shop/web") && err.contains("spec.ports[0].port"),
            "{err}"
        );
    }
}
