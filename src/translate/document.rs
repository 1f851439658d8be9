//! The `pier translate` document, written as it is rendered.
//!
//! Building the whole document as one `serde_json::Value` and then as one YAML string held three copies
//! of a large configuration at once: at 5,000 routes that was most of the command's peak memory. The
//! document here is a [`Serialize`] that renders one resource at a time ([`render::to_json`]) straight
//! into the output serializer, so only one resource's value is alive at any moment.
//!
//! The output is byte-identical to serializing [`Translation::document`]'s value, which is itself
//! this type turned into a value, so the two cannot drift: the keys are written in the order a
//! `serde_json::Map` sorts them, and every list with its exact length, as a `Value` would.

use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{SelectError, Translation};
use crate::envoy::pb::{cluster, endpoint, listener, route, tls};
use crate::envoy::{Resources, render};
use crate::gateway::status::ObjectStatus;

/// One Gateway's resources, or every Gateway's merged by name, borrowed from a [`Translation`].
#[derive(Debug, Default)]
pub struct Selected<'a> {
    pub clusters: Vec<&'a cluster::Cluster>,
    pub endpoints: Vec<&'a endpoint::ClusterLoadAssignment>,
    pub listeners: Vec<&'a listener::Listener>,
    pub routes: Vec<&'a route::RouteConfiguration>,
    pub secrets: Vec<&'a tls::Secret>,
}

impl<'a> Selected<'a> {
    pub fn of(res: &'a Resources) -> Self {
        Self {
            clusters: res.clusters.iter().collect(),
            endpoints: res.endpoints.iter().collect(),
            listeners: res.listeners.iter().collect(),
            routes: res.routes.iter().collect(),
            secrets: res.secrets.iter().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.endpoints.is_empty()
            && self.listeners.is_empty()
            && self.routes.is_empty()
            && self.secrets.is_empty()
    }

    pub fn to_resources(&self) -> Resources {
        fn owned<T: Clone>(items: &[&T]) -> Vec<T> {
            items.iter().map(|x| (*x).clone()).collect()
        }
        Resources {
            clusters: owned(&self.clusters),
            endpoints: owned(&self.endpoints),
            listeners: owned(&self.listeners),
            routes: owned(&self.routes),
            secrets: owned(&self.secrets),
        }
    }
}

/// `{clusters, endpoints, listeners, routes, secrets}`, as [`render::resources_to_json`] writes them.
impl Serialize for Selected<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(5))?;
        map.serialize_entry("clusters", &Rendered(&self.clusters))?;
        map.serialize_entry("endpoints", &Rendered(&self.endpoints))?;
        map.serialize_entry("listeners", &Rendered(&self.listeners))?;
        map.serialize_entry("routes", &Rendered(&self.routes))?;
        map.serialize_entry("secrets", &Rendered(&self.secrets))?;
        map.end()
    }
}

/// Messages rendered as canonical proto3 JSON one at a time, as they are written.
struct Rendered<'s, 'a, M>(&'s [&'a M]);

impl<M: prost::Message + prost::Name> Serialize for Rendered<'_, '_, M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for msg in self.0 {
            seq.serialize_element(&render::to_json(*msg))?;
        }
        seq.end()
    }
}

/// Statuses go through a value each: a value's keys are sorted, which is the order the document has
/// always printed a status's fields in (not their declaration order).
struct Statuses<'a>(&'a [ObjectStatus]);

impl Serialize for Statuses<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for status in self.0 {
            seq.serialize_element(&serde_json::to_value(status).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// The `pier translate` document; see [`Translation::render`].
#[derive(Debug)]
pub struct Document<'a> {
    resources: Selected<'a>,
    proxyless: Option<Selected<'a>>,
    statuses: &'a [ObjectStatus],
    warnings: &'a [String],
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = &self.resources;
        let len = 6 + usize::from(self.proxyless.is_some()) + usize::from(!self.warnings.is_empty());
        let mut map = s.serialize_map(Some(len))?;
        map.serialize_entry("clusters", &Rendered(&r.clusters))?;
        map.serialize_entry("endpoints", &Rendered(&r.endpoints))?;
        map.serialize_entry("listeners", &Rendered(&r.listeners))?;
        if let Some(p) = &self.proxyless {
            map.serialize_entry("proxyless", p)?;
        }
        map.serialize_entry("routes", &Rendered(&r.routes))?;
        map.serialize_entry("secrets", &Rendered(&r.secrets))?;
        map.serialize_entry("status", &Statuses(self.statuses))?;
        if !self.warnings.is_empty() {
            map.serialize_entry("warnings", self.warnings)?;
        }
        map.end()
    }
}

impl Translation {
    /// The `pier translate` document, to be written by any serializer: `clusters`, `endpoints`,
    /// `listeners`, `routes`, `secrets` (canonical proto3 JSON with proto field names), `proxyless` (the
    /// same five for gRPC clients, when a Gateway serves them anything), `status`, and `warnings` when
    /// there are any (what the reader skipped or overrode: part of the answer, not only of the log).
    pub fn render<'a>(&'a self, gateway: Option<&str>, warnings: &'a [String]) -> Result<Document<'a>, SelectError> {
        let proxyless = match gateway {
            Some(g) => self.proxyless.get(g).map(Selected::of),
            None => Some(super::merge(&self.proxyless)?).filter(|p| !p.is_empty()),
        };
        Ok(Document {
            resources: self.select(gateway)?,
            proxyless,
            statuses: &self.statuses,
            warnings,
        })
    }
}
