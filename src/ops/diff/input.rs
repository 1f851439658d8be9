//! The two sides of `pier diff`: a directory or file of manifests, or `git:REF[:PATH]` — PATH as it is
//! in commit REF of the repository around the current directory (PATH defaults to the other side's
//! path, so `pier diff git:main deploy/gateways` compares the working tree with `main`). A git side is
//! written to a temporary directory with `git ls-tree` and `git show`, so the working tree and the
//! index are never touched.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One side as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    Path(PathBuf),
    Git { rev: String, path: Option<PathBuf> },
}

impl Spec {
    pub fn parse(arg: &str) -> Spec {
        match arg.strip_prefix("git:") {
            Some(rest) => {
                let (rev, path) = match rest.split_once(':') {
                    Some((rev, path)) if !path.is_empty() => (rev, Some(PathBuf::from(path))),
                    Some((rev, _)) => (rev, None),
                    None => (rest, None),
                };
                Spec::Git {
                    rev: rev.to_string(),
                    path,
                }
            }
            None => Spec::Path(PathBuf::from(arg)),
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            Spec::Path(p) => Some(p),
            Spec::Git { path, .. } => path.as_deref(),
        }
    }
}

/// A side made readable: the path to translate, and the temporary directory holding it (for git).
pub struct Materialized {
    pub path: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

/// Resolves `spec`, taking a git side's missing path from `other`.
pub fn materialize(spec: &Spec, other: &Spec) -> Result<Materialized, String> {
    match spec {
        Spec::Path(p) => Ok(Materialized {
            path: p.clone(),
            _dir: None,
        }),
        Spec::Git { rev, path } => {
            let path = path
                .as_deref()
                .or_else(|| other.path())
                .ok_or_else(|| format!("git:{rev} needs a path: git:{rev}:PATH, or a path as the other side"))?;
            checkout(rev, path)
        }
    }
}

fn checkout(rev: &str, path: &Path) -> Result<Materialized, String> {
    let listed = git(
        &[
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            "--full-tree",
            "--full-name",
            rev,
            "--",
        ],
        Some(&relative(path)?),
    )?;
    let files: Vec<&str> = std::str::from_utf8(&listed)
        .map_err(|_| "git ls-tree printed a non-UTF-8 path".to_string())?
        .split('\0')
        .filter(|f| !f.is_empty())
        .collect();
    if files.is_empty() {
        return Err(format!("git:{rev} has nothing at {}", path.display()));
    }
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    for file in files {
        let content = git(&["show", &format!("{rev}:{file}")], None)?;
        let target = dir.path().join(file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&target, content).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(Materialized {
        path: dir.path().join(relative(path)?),
        _dir: Some(dir),
    })
}

/// `path` relative to the repository's top level.
fn relative(path: &Path) -> Result<PathBuf, String> {
    let prefix = git(&["rev-parse", "--show-prefix"], None)?;
    let prefix = String::from_utf8_lossy(&prefix).trim().to_string();
    let joined = Path::new(&prefix).join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return Err(format!("{} is outside the repository", path.display()));
                }
            }
            std::path::Component::CurDir => {}
            std::path::Component::Normal(p) => out.push(p),
            _ => return Err(format!("{}: give a path inside the repository", path.display())),
        }
    }
    Ok(out)
}

fn git(args: &[&str], path: Option<&Path>) -> Result<Vec<u8>, String> {
    let mut cmd = Command::new("git");
    cmd.args(args);
    if let Some(p) = path {
        cmd.arg(p);
    }
    let out = cmd.output().map_err(|e| format!("running git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_parse() {
        assert_eq!(Spec::parse("dir"), Spec::Path("dir".into()));
        assert_eq!(
            Spec::parse("git:main"),
            Spec::Git {
                rev: "main".into(),
                path: None
            }
        );
        assert_eq!(
            Spec::parse("git:HEAD~1:deploy/gw"),
            Spec::Git {
                rev: "HEAD~1".into(),
                path: Some("deploy/gw".into())
            }
        );
    }
}
