//! The document's entries, in one list written to either of two places: a serializer's map (the
//! document's `Serialize`, for JSON and tests), or `pier translate`'s YAML writer, whose root mapping
//! renders long lists on every core ([`RootMap`]). One list, so the two cannot drift.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_saphyr::SerializeError;

use super::{Document, Item};
use crate::model::yaml::RootMap;

/// Where the document's entries go.
pub(super) trait Entries {
    type Error;
    fn list<T: Serialize + Sync>(&mut self, key: &str, items: &[T]) -> Result<(), Self::Error>;
    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Self::Error>;
}

pub(super) struct MapEntries<'m, M>(pub(super) &'m mut M);

impl<M: SerializeMap> Entries for MapEntries<'_, M> {
    type Error = M::Error;

    fn list<T: Serialize + Sync>(&mut self, key: &str, items: &[T]) -> Result<(), M::Error> {
        self.0.serialize_entry(key, items)
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), M::Error> {
        self.0.serialize_entry(key, value)
    }
}

/// One resource, rendered as it is written.
struct Render<'a>(&'a (dyn Item + Sync));

impl Serialize for Render<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.render().serialize(s)
    }
}

impl Document<'_> {
    /// The entries, in key order. Statuses are written as they are: their types declare their fields
    /// in sorted order, the order a value's keys have and the document has always printed
    /// (`gateway::status`).
    pub(super) fn entries<E: Entries>(&self, to: &mut E) -> Result<(), E::Error> {
        fn each<'a>(list: &[&'a (dyn Item + Sync)]) -> Vec<Render<'a>> {
            list.iter().map(|item| Render(*item)).collect()
        }
        let r = &self.resources;
        to.list("clusters", &each(&r.clusters))?;
        to.list("endpoints", &each(&r.endpoints))?;
        to.list("listeners", &each(&r.listeners))?;
        if let Some(p) = &self.proxyless {
            to.entry("proxyless", p)?;
        }
        to.list("routes", &each(&r.routes))?;
        to.list("secrets", &each(&r.secrets))?;
        to.list("status", &self.statuses)?;
        if !self.warnings.is_empty() {
            to.entry("warnings", self.warnings)?;
        }
        Ok(())
    }
}

impl<W: std::io::Write> Entries for RootMap<'_, W> {
    type Error = SerializeError;

    fn list<T: Serialize + Sync>(&mut self, key: &str, items: &[T]) -> Result<(), SerializeError> {
        RootMap::list(self, key, items)
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), SerializeError> {
        RootMap::entry(self, key, value)
    }
}

impl Document<'_> {
    /// The document as YAML: the bytes [`to_yaml_writer`](crate::model::yaml::to_yaml_writer) writes
    /// of it, its long lists (the clusters, the load assignments, the statuses) rendered on every core.
    /// `streamed` (a golden test) holds the two equal on every case.
    pub fn write_yaml<W: std::io::Write>(&self, root: &mut RootMap<'_, W>) -> Result<(), SerializeError> {
        self.entries(root)
    }
}
