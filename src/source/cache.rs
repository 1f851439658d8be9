//! Re-reading a directory at the cost of what changed in it: [`DirCache`] remembers each file's content
//! hash and the objects it defined, re-parses only files whose bytes changed, and moves the previous
//! model (a persistent map, so the copy is O(1)) to the next by removing what changed files defined
//! before and putting what they define now. An object equal to the one it replaces keeps its old `Arc`
//! ([`Model::put`]), so the translator sees exactly the objects that changed.
//!
//! A read either applies completely or not at all: a file that does not parse, or an object defined
//! twice, fails the read with the same error the one-pass loader ([`files::load_paths`]) gives, naming
//! the file, document and field (for a duplicate, both places), and the cache stays as it was. The
//! result is the model `load_paths` would build from the same files; a test holds the two together.
//!
//! Every file is still read and hashed on every read (reading 10,000 small files is a few
//! milliseconds; trusting modification times would miss an edit within the clock's granularity).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::files::{self, LoadError};
use crate::model::insert::DuplicateError;
use crate::model::load::Loaded;
use crate::model::yaml::{self, DocRef, Warning};
use crate::model::{Kind, Model, ObjectKey};

/// One file as last read.
#[derive(Debug, Clone)]
struct FileEntry {
    hash: u64,
    /// What the file defined, in document order: the model's identity of each object.
    objects: Vec<(DocRef, &'static str, Kind, ObjectKey)>,
    warnings: Vec<Warning>,
}

/// The last good read of a directory.
#[derive(Debug, Default)]
pub struct DirCache {
    paths: Vec<PathBuf>,
    files: BTreeMap<PathBuf, FileEntry>,
    /// Which document defines each object (`kind_name`, key).
    origins: imbl::OrdMap<(&'static str, ObjectKey), DocRef>,
    model: Model,
}

/// What a read found.
#[derive(Debug)]
pub struct Read {
    /// The model, its warnings and files, as `files::load_paths` reports them.
    pub loaded: Loaded,
    /// Whether any object changed since the previous good read.
    pub changed: bool,
    /// Files parsed (their content changed or they are new).
    pub parsed: usize,
}

impl DirCache {
    pub fn new(paths: Vec<PathBuf>) -> DirCache {
        DirCache {
            paths,
            ..DirCache::default()
        }
    }

    /// Reads the paths again, parsing only what changed. On error nothing changes.
    pub fn read(&mut self) -> Result<Read, LoadError> {
        let list = files::collect_files(&self.paths)?;
        let mut next_files = BTreeMap::new();
        let mut parsed_files = Vec::new();
        for path in &list {
            let bytes = std::fs::read(path).map_err(|e| files::io_error(path, e))?;
            let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
            match self.files.get(path) {
                Some(entry) if entry.hash == hash => {
                    next_files.insert(path.clone(), entry.clone());
                }
                _ => {
                    let text = String::from_utf8(bytes)
                        .map_err(|e| files::io_error(path, std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
                    let parsed =
                        yaml::parse(&path.display().to_string(), &text).map_err(crate::model::load::LoadError::from)?;
                    parsed_files.push((path.clone(), hash, parsed));
                }
            }
        }
        let mut model = self.model.clone();
        let mut origins = self.origins.clone();
        // What changed or removed files defined is released first, so an object that moved between
        // files in one edit is not taken for a duplicate; it leaves the model only if nothing defines
        // it now, so an object a changed file defines unchanged keeps its `Arc`.
        let mut stale = BTreeMap::new();
        for (path, entry) in &self.files {
            if next_files.contains_key(path) {
                continue;
            }
            for (_, kind_name, kind, key) in &entry.objects {
                origins.remove(&(*kind_name, key.clone()));
                stale.insert((*kind_name, key.clone()), *kind);
            }
        }
        let mut changed = false;
        let parsed = parsed_files.len();
        for (path, hash, p) in parsed_files {
            let mut objects = Vec::with_capacity(p.objects.len());
            for (doc, obj) in p.objects {
                let (kind_name, kind, key) = (obj.kind_name(), obj.kind(), obj.key());
                if let Some(first) = origins.get(&(kind_name, key.clone())) {
                    return Err(duplicate(kind_name, key, first.clone(), doc));
                }
                origins.insert((kind_name, key.clone()), doc.clone());
                stale.remove(&(kind_name, key.clone()));
                changed |= model.put(obj);
                objects.push((doc, kind_name, kind, key));
            }
            let warnings = p.warnings;
            next_files.insert(
                path,
                FileEntry {
                    hash,
                    objects,
                    warnings,
                },
            );
        }
        for ((_, key), kind) in stale {
            changed |= model.remove(kind, &key);
        }
        self.files = next_files;
        self.origins = origins;
        self.model = model;
        Ok(Read {
            loaded: Loaded {
                model: self.model.clone(),
                warnings: list.iter().flat_map(|p| self.files[p].warnings.clone()).collect(),
                files: list,
            },
            changed,
            parsed,
        })
    }
}

/// A duplicate, named in reading order as the one-pass loader names it.
fn duplicate(kind: &'static str, key: ObjectKey, a: DocRef, b: DocRef) -> LoadError {
    // Sources are paths as displayed and `DocRef` orders them byte-wise, as the directory walk does.
    let (first, second) = if a <= b { (a, b) } else { (b, a) };
    let e = DuplicateError {
        kind,
        key,
        first,
        second,
    };
    LoadError::Load(crate::model::load::LoadError::Duplicate(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::Arc;

    fn svc(name: &str, port: u16) -> String {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: a}}\nspec: {{ports: [{{port: {port}}}]}}\n"
        )
    }

    /// Reads `dir` with the cache and with the one-pass loader, and requires the same outcome.
    fn both(cache: &mut DirCache, dir: &Path) -> Result<Read, String> {
        let batch = files::load_paths(&[dir.to_path_buf()]);
        let read = cache.read();
        match (&read, &batch) {
            (Ok(r), Ok(b)) => {
                assert_eq!(r.loaded.model, b.model, "the cache builds the model the loader builds");
                assert_eq!(r.loaded.files, b.files);
                assert_eq!(r.loaded.warnings, b.warnings);
            }
            (Err(r), Err(b)) => assert_eq!(r.to_string(), b.to_string(), "same error, same words"),
            (r, b) => panic!("cache {r:?} but loader {b:?}"),
        }
        read.map_err(|e| e.to_string())
    }

    #[test]
    fn follows_edits_as_the_loader_reads_them_and_parses_only_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
        write("1.yaml", &format!("{}---\n{}", svc("x", 80), svc("y", 80)));
        write("2.yaml", &svc("z", 80));
        write("3.yaml", "apiVersion: v9\nkind: Unknown\nmetadata: {name: q}\n");
        let mut cache = DirCache::new(vec![d.to_path_buf()]);
        let r = both(&mut cache, d).unwrap();
        assert_eq!((r.parsed, r.changed), (3, true));
        let y = r.loaded.model.services.peek(&ObjectKey::new("a", "y")).unwrap().clone();

        // Nothing changed: nothing parsed, nothing changed.
        let r = both(&mut cache, d).unwrap();
        assert_eq!((r.parsed, r.changed), (0, false));

        // One object of a file edited: that file is parsed; its unchanged object keeps its Arc.
        write("1.yaml", &format!("{}---\n{}", svc("x", 81), svc("y", 80)));
        let r = both(&mut cache, d).unwrap();
        assert_eq!((r.parsed, r.changed), (1, true));
        assert!(Arc::ptr_eq(
            &y,
            r.loaded.model.services.peek(&ObjectKey::new("a", "y")).unwrap()
        ));

        // An object moves from one file to another in one edit: not a duplicate.
        write("1.yaml", &svc("x", 81));
        write("2.yaml", &format!("{}---\n{}", svc("z", 80), svc("y", 80)));
        let r = both(&mut cache, d).unwrap();
        assert!(Arc::ptr_eq(
            &y,
            r.loaded.model.services.peek(&ObjectKey::new("a", "y")).unwrap()
        ));

        // A duplicate across files, then a parse error: refused as the loader refuses them, and the
        // cache stays at the last good read.
        write("0.yaml", &svc("z", 80));
        let e = both(&mut cache, d).unwrap_err();
        assert!(e.contains("0.yaml") && e.contains("2.yaml"), "{e}");
        std::fs::remove_file(d.join("0.yaml")).unwrap();
        write("4.yaml", "apiVersion: v1\nkind: Service\nmetadata: [oops\n");
        assert!(both(&mut cache, d).unwrap_err().contains("4.yaml"));
        std::fs::remove_file(d.join("4.yaml")).unwrap();
        let r = both(&mut cache, d).unwrap();
        assert_eq!(
            (r.parsed, r.changed),
            (0, false),
            "the failed reads left nothing behind"
        );

        // A removed file removes its objects.
        std::fs::remove_file(d.join("2.yaml")).unwrap();
        let r = both(&mut cache, d).unwrap();
        assert!(r.changed);
        assert_eq!(r.loaded.model.services.len(), 1);
    }
}
