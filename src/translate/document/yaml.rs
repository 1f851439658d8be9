//! `pier translate`'s document as YAML, its long lists rendered on every core
//! ([`RootMap`](crate::model::yaml::RootMap)): the entries of the document's `Serialize`, in the same
//! order, each list handed to the writer whole.

use serde::{Serialize, Serializer};

use super::{Document, Item};

/// One resource, rendered as it is written.
struct Render<'a>(&'a (dyn Item + Sync));

impl Serialize for Render<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.render().serialize(s)
    }
}

impl Document<'_> {
    /// The document as YAML: the bytes [`to_yaml_writer`](crate::model::yaml::to_yaml_writer) writes
    /// of it, its long lists (the clusters, the load assignments, the statuses) rendered on every core
    /// ([`RootMap`](crate::model::yaml::RootMap)). The entries are those of its [`Serialize`], in the
    /// same order; `streamed` (a golden test) holds the two equal on every case.
    pub fn write_yaml<W: std::io::Write>(
        &self,
        root: &mut crate::model::yaml::RootMap<'_, W>,
    ) -> Result<(), serde_saphyr::SerializeError> {
        fn each<'a>(list: &[&'a (dyn Item + Sync)]) -> Vec<Render<'a>> {
            list.iter().map(|item| Render(*item)).collect()
        }
        let r = &self.resources;
        root.list("clusters", &each(&r.clusters))?;
        root.list("endpoints", &each(&r.endpoints))?;
        root.list("listeners", &each(&r.listeners))?;
        if let Some(p) = &self.proxyless {
            root.entry("proxyless", p)?;
        }
        root.list("routes", &each(&r.routes))?;
        root.list("secrets", &each(&r.secrets))?;
        root.list("status", &self.statuses)?;
        if !self.warnings.is_empty() {
            root.entry("warnings", self.warnings)?;
        }
        Ok(())
    }
}
