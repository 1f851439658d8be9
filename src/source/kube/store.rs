//! What the watches hold: one [`Partition`] per watch (a kind, cluster-wide or in one namespace), each a
//! [`Model`] with only its kind's map filled, so the published model is assembled from `Arc` clones and
//! never copies an object.
//!
//! Memory rules live here too: Secret and ConfigMap data that no Gateway, Backend or policy references is
//! dropped ([`referenced`], [`trim`]); the source fetches it again the moment something starts referencing
//! it.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::Value;

use crate::api::kinds::WatchedKind;
use crate::model::{Model, Object, ObjectKey, model_maps};

/// Adds every object of `src` to `dst` (sharing the objects).
pub fn merge_into(dst: &mut Model, src: &Model) {
    dst.absorb(src);
}

/// Removes `key` from whichever map holds it (a partition holds one kind only).
pub fn remove(model: &mut Model, kind: crate::model::Kind, key: &ObjectKey) -> bool {
    model.remove(kind, key)
}

pub fn count(model: &Model) -> usize {
    let mut n = 0;
    macro_rules! len {
        ($($f:ident),*) => { $( n += model.$f.len(); )* };
    }
    model_maps!(len);
    n
}

/// Where a watch is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// No complete list yet.
    Pending,
    /// Listed at least once; the objects are a complete view as of the last event.
    Synced,
    /// The API server does not serve the kind (its CRD is not installed); retried with backoff.
    Missing,
    /// Never listed and refused (forbidden), or failing for a while (`availability`); retried with
    /// backoff, and not waited for.
    Unavailable,
}

/// The objects of one watch.
#[derive(Debug)]
pub struct Partition {
    pub kind: &'static WatchedKind,
    /// `None`: every namespace (or a cluster-scoped kind).
    pub namespace: Option<String>,
    pub objects: Model,
    /// Objects being re-listed after `Init`; swapped in whole at `InitDone`, so a re-list never shows a
    /// half-empty store.
    pub relist: Option<Model>,
    pub relist_trimmed: BTreeSet<ObjectKey>,
    pub sync: Sync,
    /// Secrets/ConfigMaps whose data was dropped.
    pub trimmed: BTreeSet<ObjectKey>,
    /// Why the watch is unavailable (`Sync::Unavailable`).
    pub unavailable: Option<String>,
    /// When its first list started failing, while it never listed.
    pub failing_since: Option<tokio::time::Instant>,
    /// When the log last said it is unavailable.
    pub warned_at: Option<tokio::time::Instant>,
}

impl Partition {
    pub fn new(kind: &'static WatchedKind, namespace: Option<String>) -> Self {
        Partition {
            kind,
            namespace,
            objects: Model::default(),
            relist: None,
            relist_trimmed: BTreeSet::new(),
            sync: Sync::Pending,
            trimmed: BTreeSet::new(),
            unavailable: None,
            failing_since: None,
            warned_at: None,
        }
    }

    pub fn ready(&self) -> bool {
        self.sync != Sync::Pending
    }

    /// Holds the object for `namespace` (the all-namespaces partition holds every namespace).
    pub fn covers(&self, kind_name: &str, namespace: &str) -> bool {
        self.kind.name == kind_name && self.namespace.as_deref().is_none_or(|ns| ns == namespace)
    }

    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} in namespace {ns}", self.kind.describe()),
            None => self.kind.describe(),
        }
    }
}

/// A Secret or ConfigMap another object points at: `("Secret" | "ConfigMap", key)`.
pub type Ref = (&'static str, ObjectKey);

/// Every Secret and ConfigMap that a Gateway, BackendTLSPolicy or Backend kind names. Conservative on
/// purpose (any reference under a `*certificate*` or `*secretRef` field, whatever the kind): keeping a Secret too many costs memory,
/// keeping one too few would serve a certificate-less listener.
pub fn referenced(model: &Model) -> BTreeSet<Ref> {
    referrers(model).into_iter().flat_map(|(_, _, refs)| refs).collect()
}

/// Every object that references a Secret or ConfigMap, by kind name (as `Object::kind_name` spells it)
/// and key, with what it references.
pub fn referrers(model: &Model) -> Vec<(&'static str, ObjectKey, BTreeSet<Ref>)> {
    let mut out = Vec::new();
    let mut scan = |kind: &'static str, key: &ObjectKey, value: Result<Value, serde_json::Error>| {
        if let Ok(v) = value {
            let refs = refs_in(&key.namespace, &v);
            if !refs.is_empty() {
                out.push((kind, key.clone(), refs));
            }
        }
    };
    for (k, o) in &model.gateways {
        scan("Gateway", k, serde_json::to_value(o.as_ref()));
    }
    for (k, o) in &model.backend_tls_policies {
        scan("BackendTLSPolicy", k, serde_json::to_value(&o.policy));
    }
    for (k, o) in &model.xbackends {
        scan("XBackend", k, serde_json::to_value(o.as_ref()));
    }
    for (k, o) in &model.backends {
        scan("Backend", k, serde_json::to_value(o.as_ref()));
    }
    for (k, o) in &model.eg_backends {
        scan("Backend.gateway.envoyproxy.io", k, serde_json::to_value(o.as_ref()));
    }
    out
}

/// The Secrets and ConfigMaps one object (as JSON, in `namespace`) references.
pub fn refs_in(namespace: &str, object: &Value) -> BTreeSet<Ref> {
    let mut out = BTreeSet::new();
    walk(namespace, object.get("spec").unwrap_or(&Value::Null), false, &mut out);
    out
}

fn walk(namespace: &str, v: &Value, in_ref: bool, out: &mut BTreeSet<Ref>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| walk(namespace, i, in_ref, out)),
        Value::Object(map) => {
            if in_ref && let Some(name) = map.get("name").and_then(Value::as_str) {
                let ns = map.get("namespace").and_then(Value::as_str).unwrap_or(namespace);
                let kind = match map.get("kind").and_then(Value::as_str) {
                    Some("ConfigMap") => Some("ConfigMap"),
                    // Cluster-scoped and public: its trust bundle is never dropped, so never fetched.
                    Some("ClusterTrustBundle") => None,
                    _ => Some("Secret"),
                };
                if let Some(kind) = kind {
                    out.insert((kind, ObjectKey::new(ns, name)));
                }
            }
            for (field, child) in map {
                // `certificateRefs`, `caCertificateRefs`, `clientCertificateRef`, and the draft Backend's
                // `caCertificates[].secretRef` / `clientCertificate.secretRef`.
                let f = field.to_ascii_lowercase();
                let is_ref = f.contains("certificate") || f.ends_with("secretref");
                walk(namespace, child, is_ref, out);
            }
        }
        _ => {}
    }
}

/// Drops the data of an unreferenced Secret or ConfigMap; `false` if `obj` is neither.
pub fn trim(obj: &mut Object) -> bool {
    match obj {
        Object::Secret(s) => {
            *s = Secret {
                metadata: std::mem::take(&mut s.metadata),
                type_: s.type_.take(),
                immutable: s.immutable,
                ..Secret::default()
            };
            true
        }
        Object::ConfigMap(c) => {
            *c = ConfigMap {
                metadata: std::mem::take(&mut c.metadata),
                immutable: c.immutable,
                ..ConfigMap::default()
            };
            true
        }
        _ => false,
    }
}

/// Drops the data of every unreferenced Secret/ConfigMap in `p` that still has it.
/// Drops the data of the partition's Secrets or ConfigMaps that `referenced` says nothing references
/// (`only`: just these keys; `None`: all of them). Returns the trimmed objects, for the merged model.
pub fn trim_unreferenced(
    p: &mut Partition,
    only: Option<&BTreeSet<ObjectKey>>,
    referenced: impl Fn(&Ref) -> bool,
) -> Vec<Object> {
    let kind: &'static str = match p.kind.name {
        "Secret" => "Secret",
        "ConfigMap" => "ConfigMap",
        _ => return Vec::new(),
    };
    let keys: Vec<ObjectKey> = match (only, kind) {
        (Some(only), _) => only.iter().cloned().collect(),
        (None, "Secret") => p.objects.secrets.keys().cloned().collect(),
        (None, _) => p.objects.config_maps.keys().cloned().collect(),
    };
    let mut out = Vec::new();
    for key in keys {
        if p.trimmed.contains(&key) || referenced(&(kind, key.clone())) {
            continue;
        }
        let held = match kind {
            "Secret" => p.objects.secrets.peek(&key).map(|o| Object::Secret(o.as_ref().clone())),
            _ => p
                .objects
                .config_maps
                .peek(&key)
                .map(|o| Object::ConfigMap(o.as_ref().clone())),
        };
        let Some(mut obj) = held else { continue };
        trim(&mut obj);
        p.objects.upsert(obj.clone());
        p.trimmed.insert(key);
        out.push(obj);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_default_to_secret_and_the_referrer_namespace_and_skip_trust_bundles() {
        let text = "\
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: edge}
spec:
  gatewayClassName: pier
  listeners:
  - name: https
    protocol: HTTPS
    port: 443
    tls: {certificateRefs: [{name: cert}, {name: other, namespace: certs}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: p, namespace: shop}
spec:
  targetRefs: [{group: '', kind: Service, name: web}]
  validation:
    hostname: web.shop
    caCertificateRefs:
    - {group: '', kind: ConfigMap, name: ca}
    - {group: certificates.k8s.io, kind: ClusterTrustBundle, name: roots}
";
        let model = crate::model::load::parse_texts(&[("t".into(), text.into())])
            .unwrap()
            .model;
        let refs: Vec<Ref> = referenced(&model).into_iter().collect();
        assert_eq!(
            refs,
            [
                ("ConfigMap", ObjectKey::new("shop", "ca")),
                ("Secret", ObjectKey::new("certs", "other")),
                ("Secret", ObjectKey::new("edge", "cert")),
            ]
        );
    }

    /// The invariant trimming must keep: dropping the data of every Secret/ConfigMap that [`referenced`]
    /// does not list changes no translation. Checked on every golden case's input.
    #[test]
    fn trimming_unreferenced_data_never_changes_a_golden_translation() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
        let mut cases = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let input = entry.unwrap().path().join("input.yaml");
            let Ok(text) = std::fs::read_to_string(&input) else {
                continue;
            };
            let Ok(loaded) = crate::model::load::parse_texts(&[(input.display().to_string(), text)]) else {
                continue;
            };
            let opts = crate::Options::default();
            let full = crate::translate(&loaded.model, &opts);
            let refs = referenced(&loaded.model);
            let mut trimmed = loaded.model.clone();
            for (key, s) in loaded.model.secrets.iter() {
                if !refs.contains(&("Secret", key.clone())) {
                    let mut obj = Object::Secret(s.as_ref().clone());
                    trim(&mut obj);
                    trimmed.upsert(obj);
                }
            }
            for (key, c) in loaded.model.config_maps.iter() {
                if !refs.contains(&("ConfigMap", key.clone())) {
                    let mut obj = Object::ConfigMap(c.as_ref().clone());
                    trim(&mut obj);
                    trimmed.upsert(obj);
                }
            }
            let slim = crate::translate(&trimmed, &opts);
            assert_eq!(slim.document(None), full.document(None), "{}", input.display());
            cases += 1;
        }
        assert!(cases > 50, "{cases} golden cases read");
    }
}
