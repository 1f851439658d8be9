//! [`DirCache::apply`]: moving the model by what one read found, all or nothing. What changed or removed
//! files defined is released first, so an object that moved between files in one edit is not taken for
//! a duplicate; then each parsed file's objects are taken in reading order, the last definition of each
//! in force; what nothing defines any more leaves the model; and only then does the cache change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::{Applied, DirCache, FileEntry, Identity, Read, by_bytes};
use super::{Delta, LoadError};
use crate::api::dense::{BULK, Densify};
use crate::model::insert::DuplicateError;
use crate::model::load::Loaded;
use crate::model::yaml::{self, DocRef, Warning};
use crate::model::{Kind, Model};

/// The model and the cache's indexes, moving through one read before it is committed.
struct Moving {
    model: Model,
    /// Which document defines each object: the one in force.
    origins: imbl::OrdMap<Identity, DocRef>,
    /// Objects released by changed or removed files that no file read now defines again (yet).
    stale: BTreeMap<Identity, Kind>,
    /// The definition before the one at hand, for the warning that names both. Hashed, like `last`:
    /// both are only looked up, once per object of every file read.
    previous: foldhash::HashMap<Identity, DocRef>,
    contested: BTreeSet<Identity>,
    changed: bool,
    warnings_moved: bool,
}

impl DirCache {
    /// Moves the model by what a read found; all or nothing.
    /// `list` and `dirs`: the new file list and walked directories, where they may have changed;
    /// `every_file`: every listed file was parsed, so only a skipped file's definitions were not.
    pub(super) fn apply(
        &mut self,
        mut delta: Delta,
        list: Option<Vec<PathBuf>>,
        dirs: Option<BTreeSet<PathBuf>>,
        every_file: bool,
    ) -> Result<Applied, LoadError> {
        // Reading order (the watcher's names come as a set ordered otherwise): a later definition wins.
        delta.parsed.sort_by(|a, b| by_bytes(&a.0, &b.0));
        let mut m = self.release(&delta);
        let last = last_definitions(&delta.parsed);
        let parsed = std::mem::take(&mut delta.parsed);
        let count = parsed.len();
        let mut entries = Vec::with_capacity(count);
        for (path, hash, p) in parsed {
            let Some(entry) = m.take_file(hash, p, &last, every_file) else {
                return Ok(Applied::NeedsEveryFile);
            };
            entries.push((path, entry));
        }
        for ((_, key), kind) in std::mem::take(&mut m.stale) {
            m.changed |= m.model.remove(kind, &key);
        }
        for path in &delta.removed {
            self.files.remove(path);
        }
        let bulk = entries.len() >= BULK;
        self.files.extend(entries);
        if bulk {
            // Before the model is published: a rebuilt map shares nothing with its copies.
            self.files.densify();
            m.model.densify();
            m.origins.densify();
        }
        m.warnings_moved |= !delta.skipped.is_empty();
        for (path, why) in delta.skipped {
            self.skip(path, why);
        }
        if let Some(list) = list.filter(|l| *l != *self.list) {
            self.list = Arc::new(list);
        }
        if let Some(dirs) = dirs {
            self.dirs = dirs;
        }
        Ok(Applied::Done(Box::new(self.commit(m, count, delta.read))))
    }

    /// Releases what the files read again or removed defined: out of `origins` now, out of the model
    /// at the end unless a file read now defines it again (then it keeps its `Arc` if unchanged).
    fn release(&self, delta: &Delta) -> Moving {
        let mut m = Moving {
            model: self.model.clone(),
            origins: self.origins.clone(),
            stale: BTreeMap::new(),
            previous: foldhash::HashMap::default(),
            contested: BTreeSet::new(),
            changed: false,
            warnings_moved: false,
        };
        let released = delta.removed.iter().chain(delta.parsed.iter().map(|(p, _, _)| p));
        for entry in released.filter_map(|p| self.files.get(p)) {
            m.warnings_moved |= entry.warnings().next().is_some();
            for (_, kind_name, kind, key) in &entry.objects {
                m.origins.remove(&(*kind_name, key.clone()));
                m.stale.insert((*kind_name, key.clone()), *kind);
            }
        }
        m
    }

    /// Takes the moved model and indexes as the cache's, and says what the read found.
    fn commit(&mut self, m: Moving, parsed: usize, read: usize) -> Read {
        let mut warnings_changed = false;
        if m.warnings_moved {
            let files = &self.files;
            let warnings: Vec<Warning> = self
                .list
                .iter()
                .filter_map(|p| files.get(p))
                .flat_map(|e| e.warnings().cloned())
                .collect();
            warnings_changed = warnings != self.warnings;
            self.warnings = warnings;
        }
        self.origins = m.origins;
        self.contested = m.contested;
        self.model = m.model;
        Read {
            loaded: Loaded {
                model: self.model.clone(),
                warnings: self.warnings.clone(),
                files: self.list.clone(),
            },
            changed: m.changed,
            warnings_changed,
            parsed,
            read,
        }
    }
}

impl Moving {
    /// One parsed file's objects, in document order; `None` when an object it defines is also defined
    /// by a file not read now, so that only a read of every file can say which is in force.
    fn take_file(
        &mut self,
        hash: u64,
        parsed: yaml::Parsed,
        last: &foldhash::HashMap<Identity, DocRef>,
        every_file: bool,
    ) -> Option<FileEntry> {
        let mut objects = Vec::with_capacity(parsed.objects.len());
        let mut warnings = parsed.warnings;
        self.warnings_moved |= !warnings.is_empty();
        for (doc, obj) in parsed.objects {
            let (kind_name, kind, key) = (obj.kind_name(), obj.kind(), obj.key());
            let id = (kind_name, key.clone());
            // A definition from a file not parsed now: unchanged (then only a read of every file can
            // decide), or skipped, whose stale definition a file read now replaces.
            if let Some(kept) = self.origins.remove(&id) {
                if !every_file {
                    return None;
                }
                self.previous.insert(id.clone(), kept);
            }
            if let Some(first) = self.previous.insert(id.clone(), doc.clone()) {
                let named = DuplicateError {
                    kind: kind_name,
                    key: key.clone(),
                    first,
                    second: doc.clone(),
                };
                warnings.push(named.warning());
                self.warnings_moved = true;
                self.contested.insert(id.clone());
            }
            // Only the last definition is in force; an earlier one is remembered as the file's own.
            if last.get(&id) == Some(&doc) {
                self.origins.insert(id.clone(), doc.clone());
                self.stale.remove(&id);
                self.changed |= self.model.put(obj);
            }
            objects.push((doc, kind_name, kind, key));
        }
        Some(FileEntry {
            hash,
            objects,
            warnings,
            skipped: None,
        })
    }
}

/// The last definition of each object among the files read now: the one in force.
fn last_definitions(parsed: &[(PathBuf, u64, yaml::Parsed)]) -> foldhash::HashMap<Identity, DocRef> {
    // A `DocRef` clone is a reference count: cloning each as it comes costs less than a second map
    // built from borrowed ones, which would hash every identity again.
    let mut last = foldhash::HashMap::default();
    for (_, _, p) in parsed {
        for (doc, obj) in &p.objects {
            last.insert((obj.kind_name(), obj.key()), doc.clone());
        }
    }
    last
}
