//! Re-reading a directory at the cost of what changed in it: [`DirCache`] remembers each file's content
//! hash and the objects it defined, re-parses only files whose bytes changed, and moves the previous
//! model (a persistent map, so the copy is O(1)) to the next by removing what changed files defined
//! before and putting what they define now. An object equal to the one it replaces keeps its old `Arc`
//! ([`Model::put`]), so the translator sees exactly the objects that changed.
//!
//! A read either applies completely or not at all: a file that does not parse fails the read with the
//! same error the one-pass loader ([`files::load_paths`]) gives, naming the file, document and field,
//! and the cache stays as it was. The result is the model `load_paths` would build from the same files;
//! a test holds the two together.
//!
//! An object defined twice takes the later definition in reading order, with a warning naming both
//! places (`model::insert`). Which definition is in force then depends on files the read may not have
//! parsed (the cache keeps only what each file defined, not its objects), so while any object is defined
//! more than once, and for the read that finds the first such object, every read parses every file:
//! slower, but only until the duplicate is fixed, and never wrong.
//!
//! A full [`read`](DirCache::read) walks the directory and reads and hashes every file (trusting
//! modification times would miss an edit within the clock's granularity); at 20,000 files that is
//! most of the cost of a change. The watcher knows which names changed, so
//! [`read_paths`](DirCache::read_paths) reads only those, falling back to the full walk whenever a
//! name could change what the walk itself finds (a directory, a link, a name outside it).
//!
//! A file the reader skips (over the size cap, or not a regular file: see [`files`]) is a warning, not a
//! failed read, so it cannot hold back the rest of the directory; and it cannot take down what it
//! defined when it last read well either: those objects stay in force, and the warning says so, until
//! the file reads well again or is removed. Only then does the cache differ from the one-pass loader,
//! which has no last read to keep.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod apply;

use super::files::{self, Contents, LoadError};

/// An object's identity in the cache: its kind (as `Object::kind_name` spells it) and key.
type Identity = (&'static str, ObjectKey);
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
    /// Why the last read skipped the file; `objects` are then from the read before.
    skipped: Option<Warning>,
}

impl FileEntry {
    fn warnings(&self) -> impl Iterator<Item = &Warning> {
        self.skipped.iter().chain(&self.warnings)
    }
}

/// The last good read of a directory.
#[derive(Debug, Default)]
pub struct DirCache {
    paths: Vec<PathBuf>,
    max_file_bytes: usize,
    files: BTreeMap<PathBuf, FileEntry>,
    /// The files in reading order.
    list: Arc<Vec<PathBuf>>,
    /// The directories the last full walk entered, as it named them, and whether it met a link.
    dirs: BTreeSet<PathBuf>,
    links: bool,
    warnings: Vec<Warning>,
    /// Which document defines each object (`kind_name`, key): the one in force.
    origins: imbl::OrdMap<Identity, DocRef>,
    /// Objects the last good read found defined more than once.
    contested: BTreeSet<Identity>,
    model: Model,
}

/// What [`DirCache::apply`] made of a read.
enum Applied {
    Done(Box<Read>),
    /// An object a file read now defines is also defined by a file not read now: only a read of every
    /// file can say which definition is in force.
    NeedsEveryFile,
}

/// What a read found.
#[derive(Debug)]
pub struct Read {
    /// The model, its warnings and files, as `files::load_paths` reports them.
    pub loaded: Loaded,
    /// Whether any object changed since the previous good read.
    pub changed: bool,
    /// Whether the warnings changed (a file skipped or read again), objects or not.
    pub warnings_changed: bool,
    /// Files parsed (their content changed or they are new).
    pub parsed: usize,
    /// Files read: every file for a full read, the named ones for [`DirCache::read_paths`].
    pub read: usize,
}

/// The files a read takes from disk again, and the ones it drops.
#[derive(Default)]
struct Delta {
    parsed: Vec<(PathBuf, u64, yaml::Parsed)>,
    removed: Vec<PathBuf>,
    /// Files skipped, and why.
    skipped: Vec<(PathBuf, String)>,
    read: usize,
}

/// What reading one file again found.
enum Reread {
    Unchanged,
    Parsed(u64, yaml::Parsed),
    Skipped(String),
}

impl Delta {
    fn record(&mut self, path: &Path, outcome: Reread) {
        self.read += 1;
        match outcome {
            Reread::Unchanged => {}
            Reread::Parsed(hash, parsed) => self.parsed.push((path.to_path_buf(), hash, parsed)),
            Reread::Skipped(why) => self.skipped.push((path.to_path_buf(), why)),
        }
    }
}

impl DirCache {
    pub fn new(paths: Vec<PathBuf>) -> DirCache {
        DirCache {
            paths,
            max_file_bytes: files::DEFAULT_MAX_BYTES,
            ..DirCache::default()
        }
    }

    /// Skips files over `max` bytes instead of the default cap.
    pub fn with_max_file_bytes(mut self, max: usize) -> DirCache {
        self.max_file_bytes = max;
        self
    }

    /// Reads the paths again, parsing only what changed. On error nothing changes.
    pub fn read(&mut self) -> Result<Read, LoadError> {
        let every_file = !self.contested.is_empty();
        match self.read_walk(every_file)? {
            Applied::Done(read) => Ok(*read),
            Applied::NeedsEveryFile => self.read_every_file(),
        }
    }

    /// A full walk that parses every file, whatever its hash: all definitions of every object are then
    /// in one read.
    fn read_every_file(&mut self) -> Result<Read, LoadError> {
        match self.read_walk(true)? {
            Applied::Done(read) => Ok(*read),
            // `apply` never asks for more than a read of every file; should it, the read fails (and the
            // last good model stays) rather than loop or panic.
            Applied::NeedsEveryFile => Err(LoadError::Io {
                path: self.paths.first().cloned().unwrap_or_default(),
                error: std::io::Error::other("a read of every file left an object's definitions undecided"),
            }),
        }
    }

    fn read_walk(&mut self, every_file: bool) -> Result<Applied, LoadError> {
        let walk = files::collect(&self.paths)?;
        let (list, dirs) = (walk.files, walk.dirs);
        let mut delta = Delta::default();
        let listed: BTreeSet<&PathBuf> = list.iter().collect();
        delta.removed = self.files.keys().filter(|p| !listed.contains(p)).cloned().collect();
        // Read and parsed on every core, taken in order: the first error is the one a single thread
        // would meet.
        let outcomes = crate::par::map(&list, |path| self.reread_one(path, every_file));
        for (path, outcome) in list.iter().zip(outcomes) {
            delta.record(path, outcome?);
        }
        let applied = self.apply(delta, Some(list), Some(dirs), every_file)?;
        if matches!(applied, Applied::Done(_)) {
            self.links = walk.links;
        }
        Ok(applied)
    }

    /// Reads again only the files named (by a file watcher), when that is sure to find what a full
    /// read would: one directory argument, read in full before, and every name a file of a directory
    /// the walk entered (or one of its files, gone). Anything else — a directory created, removed or
    /// renamed, a name outside the walk — is a full [`read`](Self::read).
    pub fn read_paths(&mut self, changed: &BTreeSet<PathBuf>) -> Result<Read, LoadError> {
        if self.paths.len() != 1 || self.dirs.is_empty() || !self.contested.is_empty() {
            return self.read();
        }
        let mut delta = Delta::default();
        // Copied only when a file comes or goes.
        let mut list: Option<Vec<PathBuf>> = None;
        for path in changed {
            match self.classify(path) {
                Named::Skip => {}
                Named::Unsure => return self.read(),
                // A name the walk never read (a temporary file renamed away) copies nothing.
                Named::Gone if self.files.contains_key(path) => {
                    let list = list.get_or_insert_with(|| self.list.as_ref().clone());
                    if let Ok(i) = list.binary_search_by(|p| by_bytes(p, path)) {
                        list.remove(i);
                    }
                    delta.removed.push(path.clone());
                }
                Named::Gone => {}
                Named::File => {
                    if self.list.binary_search_by(|p| by_bytes(p, path)).is_err() {
                        let list = list.get_or_insert_with(|| self.list.as_ref().clone());
                        if let Err(i) = list.binary_search_by(|p| by_bytes(p, path)) {
                            list.insert(i, path.clone());
                        }
                    }
                    self.reread(path, &mut delta, false)?;
                }
            }
        }
        match self.apply(delta, list, None, false)? {
            Applied::Done(read) => Ok(*read),
            Applied::NeedsEveryFile => self.read_every_file(),
        }
    }

    fn classify(&self, path: &Path) -> Named {
        if !path.parent().is_some_and(|d| self.dirs.contains(d)) {
            return Named::Unsure;
        }
        let hidden = path.file_name().is_none_or(|n| n.as_encoded_bytes().starts_with(b"."));
        if hidden {
            // A hidden name is never read, but where the walk follows links it can be what they point
            // through (a ConfigMap's `..data`): then only a file the walk would skip anyway is certain.
            return match std::fs::symlink_metadata(path) {
                _ if !self.links => Named::Skip,
                Ok(m) if m.is_file() => Named::Skip,
                _ => Named::Unsure,
            };
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Named::Unsure,
            // A new link changes what the walk must watch for (see `links`).
            Ok(_) if !self.links && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) => Named::Unsure,
            Ok(_) if files::has_manifest_extension(path) => Named::File,
            Ok(_) => Named::Skip,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if self.dirs.contains(path) || std::fs::symlink_metadata(path).is_ok() {
                    // A directory gone, or a dangling link: the walk decides.
                    Named::Unsure
                } else {
                    Named::Gone
                }
            }
            Err(_) => Named::Unsure,
        }
    }

    /// Reads one file; parses it if its bytes changed (or it was skipped last time, or `always`).
    fn reread(&self, path: &Path, delta: &mut Delta, always: bool) -> Result<(), LoadError> {
        delta.record(path, self.reread_one(path, always)?);
        Ok(())
    }

    fn reread_one(&self, path: &Path, always: bool) -> Result<Reread, LoadError> {
        let bytes = match files::read_capped(path, self.max_file_bytes)? {
            Contents::Bytes(bytes) => bytes,
            Contents::Skipped(why) => return Ok(Reread::Skipped(why)),
        };
        let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
        let unchanged = |entry: &FileEntry| entry.hash == hash && entry.skipped.is_none();
        if !always && self.files.get(path).is_some_and(unchanged) {
            return Ok(Reread::Unchanged);
        }
        Ok(Reread::Parsed(
            hash,
            files::parse_bytes(path, bytes, self.max_file_bytes)?,
        ))
    }

    /// Marks a file skipped, keeping what it defined when it last read well.
    fn skip(&mut self, path: PathBuf, why: String) {
        let source = path.display().to_string();
        let entry = self.files.entry(path).or_insert_with(|| FileEntry {
            hash: 0,
            objects: Vec::new(),
            warnings: Vec::new(),
            skipped: None,
        });
        let why = if entry.objects.is_empty() {
            why
        } else {
            format!(
                "{why}; the {} object(s) it defined when it last read well stay in force",
                entry.objects.len()
            )
        };
        entry.skipped = Some(Warning::file(source, why));
    }
}

/// What a name a watcher reported is to a targeted read.
enum Named {
    /// A file the walk reads: read it again.
    File,
    /// A file the walk read, now gone.
    Gone,
    /// Nothing the walk reads.
    Skip,
    /// Only a full walk can tell.
    Unsure,
}

/// The walk's order: byte-wise.
fn by_bytes(a: &Path, b: &Path) -> std::cmp::Ordering {
    a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes())
}

#[cfg(test)]
mod tests;
