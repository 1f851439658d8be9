//! Reads objects from files and directories into a [`Model`](crate::model::Model), in one pass.
//!
//! Owns the file-system walk and the order files are read in; turning texts into a model is
//! [`model::load`](crate::model::load), so this module adds nothing but I/O. It does not watch for changes.
//!
//! Walk rules: an explicit file is read whatever its extension; a directory is read recursively, taking
//! `*.yaml`, `*.yml` and `*.json` in byte-wise path order, so the "first" of two duplicates is the same on
//! every machine. Entries whose name starts with `.` are skipped: editor and VCS droppings, and the
//! `..data` / `..<timestamp>` links of a mounted ConfigMap, which would otherwise yield every object
//! twice. Symlinks are followed, each real directory at most once.
//!
//! Read rules, because whoever can write the directory controls what the reader meets: a file over the
//! size cap (`--max-file-bytes`, [`DEFAULT_MAX_BYTES`] by default) or that is not a regular file (a FIFO,
//! a device, a socket, or a link to one) is skipped with a warning naming it, and the rest loads. Such a
//! file is never opened for what it is: opening a FIFO blocks until a writer comes (a reload stalled
//! forever while `/readyz` said 200), `/dev/zero` never ends, and opening some devices acts on them.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::model::load::{self, Loaded, Loader};
use crate::model::yaml::{self, ParseOptions, Warning};

pub use crate::model::yaml::DEFAULT_MAX_BYTES;

/// The first thing that went wrong; every variant's message names the file (and document) at fault.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    // The io::Error is in the message rather than `source()` so the message is complete on its own and
    // error-chain printers do not repeat it.
    #[error("reading {}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    #[error(transparent)]
    Load(#[from] load::LoadError),
}

const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Loads every object under `paths` (files or directories) into one model.
pub fn load_paths(paths: &[PathBuf]) -> Result<Loaded, LoadError> {
    load_paths_capped(paths, DEFAULT_MAX_BYTES)
}

/// [`load_paths`], skipping files over `max_file_bytes`.
pub fn load_paths_capped(paths: &[PathBuf], max_file_bytes: usize) -> Result<Loaded, LoadError> {
    let files = collect_files(paths)?;
    // Parsed on every core, added in order. Every file is parsed before any object is added, so a file
    // that does not parse is reported before a duplicate between files, as the directory cache does.
    let parsed = crate::par::map(&files, |path| {
        let name = path.display().to_string();
        let parsed = match read_capped(path, max_file_bytes)? {
            Contents::Bytes(bytes) => parse_bytes(path, bytes, max_file_bytes)?,
            Contents::Skipped(why) => yaml::Parsed {
                objects: Vec::new(),
                warnings: vec![Warning::file(name.clone(), why)],
            },
        };
        Ok::<_, LoadError>((name, parsed))
    });
    let parsed = parsed.into_iter().collect::<Result<Vec<_>, _>>()?;
    let mut loader = Loader::new();
    for (name, parsed) in parsed {
        loader.add_parsed(&name, parsed)?;
    }
    let mut loaded = loader.finish();
    loaded.files = std::sync::Arc::new(files);
    tracing::debug!(
        files = loaded.files.len(),
        warnings = loaded.warnings.len(),
        "loaded objects from files"
    );
    Ok(loaded)
}

/// A file's bytes, or why the reader left it alone.
#[derive(Debug)]
pub(crate) enum Contents {
    Bytes(Vec<u8>),
    /// Skipped; the words say why and name the limit.
    Skipped(String),
}

/// Reads a file of at most `max` bytes that is a regular file; anything else is [`Contents::Skipped`]
/// without being opened as what it is. An error is a file that went away or cannot be read.
pub(crate) fn read_capped(path: &Path, max: usize) -> Result<Contents, LoadError> {
    // Following links: a link to a FIFO or to /dev/zero is judged by what it points at.
    let meta = fs::metadata(path).map_err(|e| io_error(path, e))?;
    if let Some(skipped) = judge(&meta, max) {
        return Ok(skipped);
    }
    let mut file = open_nonblocking(path).map_err(|e| io_error(path, e))?;
    // What was opened may not be what was checked (renamed into place in between): check it again.
    // Opening without blocking made that safe even for a FIFO.
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if let Some(skipped) = judge(&meta, max) {
        return Ok(skipped);
    }
    // A file still growing stops at the cap all the same.
    let cap = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).min(max));
    (&mut file)
        .take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    if bytes.len() > max {
        return Ok(Contents::Skipped(too_large(&format!("more than {max}"), max)));
    }
    Ok(Contents::Bytes(bytes))
}

/// Why a file with this metadata is skipped, if it is.
fn judge(meta: &fs::Metadata, max: usize) -> Option<Contents> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let what = if t.is_file() {
        let over = usize::try_from(meta.len()).map_or(true, |len| len > max);
        return over.then(|| Contents::Skipped(too_large(&meta.len().to_string(), max)));
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "something other than a file"
    };
    Some(Contents::Skipped(format!("skipped: it is {what}, not a regular file")))
}

fn too_large(size: &str, max: usize) -> String {
    format!("skipped: {size} bytes is over the {max}-byte limit for one file (--max-file-bytes)")
}

/// Opening a FIFO for reading blocks until a writer opens it, unless non-blocking; regular files read
/// the same either way.
fn open_nonblocking(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Parses a file's bytes: `.json` files as JSON only, others YAML (or JSON, when they start like it).
pub(crate) fn parse_bytes(path: &Path, bytes: Vec<u8>, max_file_bytes: usize) -> Result<yaml::Parsed, LoadError> {
    let text = String::from_utf8(bytes).map_err(|e| io_error(path, io::Error::new(io::ErrorKind::InvalidData, e)))?;
    let opts = ParseOptions {
        json_only: path.extension().is_some_and(|e| e == "json"),
        max_bytes: max_file_bytes,
    };
    Ok(yaml::parse_with(&path.display().to_string(), &text, opts).map_err(load::LoadError::from)?)
}

pub(crate) fn io_error(path: &Path, error: io::Error) -> LoadError {
    LoadError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Files to read, in order: arguments in the order given, each directory's files sorted. A file reached
/// twice (a directory and a file inside it) is read once.
pub(crate) fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LoadError> {
    collect(paths).map(|w| w.files)
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Files to read, in order.
    pub files: Vec<PathBuf>,
    /// The directories it entered, as it named them.
    pub dirs: BTreeSet<PathBuf>,
    /// Whether it went through a symbolic link (then a change to a hidden entry can change what it
    /// reads: a mounted ConfigMap swaps its `..data` link).
    pub links: bool,
}

pub(crate) fn collect(paths: &[PathBuf]) -> Result<Walk, LoadError> {
    let mut w = Walk::default();
    let mut visited_dirs = BTreeSet::new();
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| io_error(path, e))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found, &mut visited_dirs, &mut w)?;
            found.sort_by(|a, b| a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes()));
            w.files.extend(found);
        } else {
            w.files.push(path.clone());
        }
    }
    let mut seen = BTreeSet::new();
    w.files.retain(|f| seen.insert(f.clone()));
    Ok(w)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>, visited: &mut BTreeSet<PathBuf>, w: &mut Walk) -> Result<(), LoadError> {
    let real = fs::canonicalize(dir).map_err(|e| io_error(dir, e))?;
    if !visited.insert(real) {
        return Ok(());
    }
    w.dirs.insert(dir.to_path_buf());
    for entry in fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        w.links |= entry.file_type().is_ok_and(|t| t.is_symlink());
        if entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        let meta = fs::metadata(&path).map_err(|e| io_error(&path, e))?;
        if meta.is_dir() {
            walk(&path, found, visited, w)?;
        } else if has_manifest_extension(&path) {
            found.push(path);
        }
    }
    Ok(())
}

pub(crate) fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

#[cfg(test)]
pub(super) mod tests;
