//! `translate(&Model, &Options) -> Translation`: the one pure function the golden tests pin.
//!
//! Model → `gateway::build` (IR + status) → `envoy::build` per Gateway. Infallible and deterministic:
//! a user mistake is a status condition, never an error, and the same model gives the same bytes.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::envoy::{self, Resources, render};
use crate::gateway::{self, status::ObjectStatus};
use crate::model::Model;
use crate::options::Options;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// Envoy resources per Gateway (`namespace/name`).
    pub gateways: BTreeMap<String, Resources>,
    /// Status of every object pier has something to say about, sorted by kind, namespace, name.
    pub statuses: Vec<ObjectStatus>,
}

pub fn translate(model: &Model, opts: &Options) -> Translation {
    let (ir, statuses) = gateway::build(model, opts);
    let gateways = ir
        .gateways
        .iter()
        .map(|(k, g)| (k.clone(), envoy::build(g, opts)))
        .collect();
    Translation { gateways, statuses }
}

impl Translation {
    /// The resources of one Gateway, or of all of them merged (deduplicated by name, the first
    /// Gateway in `namespace/name` order winning) when `gateway` is `None`.
    pub fn resources(&self, gateway: Option<&str>) -> Option<Resources> {
        match gateway {
            Some(g) => self.gateways.get(g).cloned(),
            None => Some(merge(self.gateways.values())),
        }
    }

    /// The `pier translate` document: `clusters`, `endpoints`, `listeners`, `routes`, `secrets`
    /// (canonical proto3 JSON with proto field names) and `status`.
    pub fn document(&self, gateway: Option<&str>) -> Option<Value> {
        let res = self.resources(gateway)?;
        let mut doc = render::resources_to_json(&res);
        doc["status"] = json!(self.statuses);
        Some(doc)
    }
}

fn merge<'a>(all: impl Iterator<Item = &'a Resources>) -> Resources {
    fn add<T: Clone>(into: &mut BTreeMap<String, T>, from: &[T], name: impl Fn(&T) -> &str) {
        for item in from {
            into.entry(name(item).to_string()).or_insert_with(|| item.clone());
        }
    }
    let (mut c, mut e, mut l, mut r, mut s) = (
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
    );
    for res in all {
        add(&mut c, &res.clusters, |x| &x.name);
        add(&mut e, &res.endpoints, |x| &x.cluster_name);
        add(&mut l, &res.listeners, |x| &x.name);
        add(&mut r, &res.routes, |x| &x.name);
        add(&mut s, &res.secrets, |x| &x.name);
    }
    Resources {
        clusters: c.into_values().collect(),
        endpoints: e.into_values().collect(),
        listeners: l.into_values().collect(),
        routes: r.into_values().collect(),
        secrets: s.into_values().collect(),
    }
}
