//! The model the Kubernetes source publishes, moved by each watch event rather than assembled from the
//! watches on every publish, and the Secrets and ConfigMaps it references, counted per referrer so a
//! change to one Gateway, Backend or policy re-reads that object's references only.
//!
//! It is rebuilt from the partitions only when which objects count changes wholesale: a re-list swapped
//! in, a watch becoming synced or missing (which can also change whether ReferenceGrant v1beta1 is
//! shadowed by v1). Everything else — the steady state — is one map operation per event.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::store::{self, Ref};
use crate::model::{Kind, Model, Object, ObjectKey};

#[derive(Debug, Default)]
pub struct Merged {
    model: Model,
    /// What each referrer (by kind name and key) references.
    referrers: BTreeMap<(&'static str, ObjectKey), BTreeSet<Ref>>,
    counts: BTreeMap<Ref, usize>,
    /// References whose count fell to zero since the last [`take_released`](Self::take_released).
    released: BTreeSet<Ref>,
}

impl Merged {
    /// From a whole model (after a re-list).
    pub fn rebuild(model: Model) -> Merged {
        let mut merged = Merged::default();
        for (kind, key, refs) in store::referrers(&model) {
            merged.set_refs(kind, key, refs);
        }
        merged.model = model;
        merged
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Every Secret and ConfigMap something references now.
    pub fn referenced(&self) -> impl Iterator<Item = &Ref> {
        self.counts.keys()
    }

    /// Whether anything references `r` now.
    pub fn references(&self, r: &Ref) -> bool {
        self.counts.contains_key(r)
    }

    pub fn put(&mut self, obj: Object) {
        if let Some(v) = referrer_value(&obj) {
            let (kind, key) = (obj.kind_name(), obj.key());
            let refs = store::refs_in(&key.namespace, &v);
            self.set_refs(kind, key, refs);
        }
        self.model.upsert(obj);
    }

    pub fn remove(&mut self, kind: Kind, kind_name: &'static str, key: &ObjectKey) {
        self.set_refs(kind_name, key.clone(), BTreeSet::new());
        self.model.remove(kind, key);
    }

    /// The references nothing holds any more (their data can be dropped), since the last call.
    pub fn take_released(&mut self) -> BTreeSet<Ref> {
        let released = std::mem::take(&mut self.released);
        released.into_iter().filter(|r| !self.counts.contains_key(r)).collect()
    }

    fn set_refs(&mut self, kind: &'static str, key: ObjectKey, refs: BTreeSet<Ref>) {
        let old = if refs.is_empty() {
            self.referrers.remove(&(kind, key)).unwrap_or_default()
        } else {
            self.referrers.insert((kind, key), refs.clone()).unwrap_or_default()
        };
        for r in old.difference(&refs) {
            if let Some(n) = self.counts.get_mut(r) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(r);
                    self.released.insert(r.clone());
                }
            }
        }
        for r in refs.difference(&old) {
            *self.counts.entry(r.clone()).or_default() += 1;
        }
    }
}

/// The object as JSON, if it is a kind that can reference a Secret or ConfigMap.
fn referrer_value(obj: &Object) -> Option<Value> {
    match obj {
        Object::Gateway(o) => serde_json::to_value(o).ok(),
        // What the crate's type lacks references no Secret or ConfigMap.
        Object::BackendTlsPolicy(o) => serde_json::to_value(&o.policy).ok(),
        Object::XBackend(o) => serde_json::to_value(o).ok(),
        Object::Backend(o) => serde_json::to_value(o).ok(),
        Object::EgBackend(o) => serde_json::to_value(o).ok(),
        _ => None,
    }
}

impl super::Source {
    /// Drops the data of Secrets and ConfigMaps nothing references any more: all of them after a
    /// rebuild, else only those released since the last flush.
    pub(super) fn trim(&mut self, rebuilt: bool) {
        let Some(mut merged) = self.merged.take() else { return };
        let released = if rebuilt { None } else { Some(merged.take_released()) };
        for i in 0..self.parts.len() {
            let only: Option<BTreeSet<ObjectKey>> = released.as_ref().map(|refs| {
                let p = &self.parts[i];
                refs.iter()
                    .filter(|(kind, key)| p.covers(kind, &key.namespace))
                    .map(|(_, key)| key.clone())
                    .collect()
            });
            if only.as_ref().is_some_and(BTreeSet::is_empty) {
                continue;
            }
            let contributes = self.contributes(i);
            for obj in store::trim_unreferenced(&mut self.parts[i], only.as_ref(), |r| merged.references(r)) {
                if contributes {
                    merged.put(obj);
                }
            }
        }
        self.merged = Some(merged);
    }
}
