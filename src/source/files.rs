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

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::model::load::{self, Loaded, Loader};
use crate::model::yaml;

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
    let files = collect_files(paths)?;
    // Parsed on every core, added in order. Every file is parsed before any object is added, so a file
    // that does not parse is reported before a duplicate between files, as the directory cache does.
    let parsed = super::par::map(&files, |path| {
        let text = fs::read_to_string(path).map_err(|error| io_error(path, error))?;
        let name = path.display().to_string();
        let parsed = yaml::parse(&name, &text).map_err(load::LoadError::from)?;
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
mod tests {
    use super::*;

    fn svc(name: &str) -> String {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\n")
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().expect("test paths have a parent")).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn directory_is_read_recursively_in_byte_order() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "b.yaml", &svc("b"));
        write(root, "a/z.yml", &svc("az"));
        write(
            root,
            "a-b.json",
            r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"ab"}}"#,
        );
        write(root, "A.yaml", &svc("upper"));
        write(root, "notes.txt", "not yaml at all: [");
        write(root, ".hidden.yaml", &svc("hidden"));
        write(root, ".git/x.yaml", &svc("git"));
        let loaded = load_paths(&[root.to_path_buf()]).unwrap();
        let rel: Vec<_> = loaded
            .files
            .iter()
            .map(|f| f.strip_prefix(root).unwrap().display().to_string())
            .collect();
        // Byte order: 'A' < 'a', and '-' (0x2d) sorts before '/' (0x2f).
        assert_eq!(rel, ["A.yaml", "a-b.json", "a/z.yml", "b.yaml"]);
        let names: Vec<_> = loaded.model.services.keys().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["ab", "az", "b", "upper"]);
    }

    #[test]
    fn explicit_file_is_read_whatever_its_extension() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "objects.txt", &svc("web"));
        let file = tmp.path().join("objects.txt");
        let loaded = load_paths(&[tmp.path().to_path_buf(), file.clone()]).unwrap();
        assert_eq!(*loaded.files, [file]);
        assert_eq!(loaded.model.services.len(), 1);
    }

    #[test]
    fn file_inside_a_given_directory_is_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "a.yaml", &svc("web"));
        let loaded = load_paths(&[tmp.path().to_path_buf(), tmp.path().join("a.yaml")]).unwrap();
        assert_eq!(loaded.files.len(), 1);
    }

    #[test]
    fn duplicate_across_files_names_both() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "a.yaml", &svc("web"));
        write(tmp.path(), "b.yaml", &format!("{}---\n{}", svc("other"), svc("web")));
        let err = load_paths(&[tmp.path().to_path_buf()]).unwrap_err().to_string();
        let a = tmp.path().join("a.yaml").display().to_string();
        let b = tmp.path().join("b.yaml").display().to_string();
        assert_eq!(
            err,
            format!("Service default/web is defined twice: {a} document 0 and {b} document 1")
        );
    }

    #[test]
    fn missing_path_is_named() {
        let err = load_paths(&[PathBuf::from("/nonexistent/pier/x.yaml")]).unwrap_err();
        assert!(matches!(err, LoadError::Io { .. }));
        assert!(
            err.to_string().starts_with("reading /nonexistent/pier/x.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn parse_error_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "bad.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n",
        );
        let err = load_paths(&[tmp.path().to_path_buf()]).unwrap_err().to_string();
        assert!(
            err.contains("bad.yaml: document 0 (Service): missing metadata.name"),
            "{err}"
        );
    }
}
