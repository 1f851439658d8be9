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

/// Why a side of `pier diff` cannot be read; each names the revision or path and what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("git:{0} needs a path: git:{0}:PATH, or a path as the other side")]
    NoPath(String),
    #[error("git:{rev} has nothing at {}", path.display())]
    Nothing { rev: String, path: PathBuf },
    #[error("{} is outside the repository", .0.display())]
    Outside(PathBuf),
    #[error("{}: give a path inside the repository", .0.display())]
    NotInside(PathBuf),
    #[error("running git: {0}")]
    NoGit(std::io::Error),
    #[error("git {command}: {stderr}")]
    Git { command: String, stderr: String },
    #[error("git ls-tree printed a non-UTF-8 path")]
    NonUtf8,
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// A side made readable: the path to translate, and the temporary directory holding it (for git).
pub struct Materialized {
    pub path: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

/// Resolves `spec`, taking a git side's missing path from `other`.
pub fn materialize(spec: &Spec, other: &Spec) -> Result<Materialized, InputError> {
    match spec {
        Spec::Path(p) => Ok(Materialized {
            path: p.clone(),
            _dir: None,
        }),
        Spec::Git { rev, path } => {
            let path = path
                .as_deref()
                .or_else(|| other.path())
                .ok_or_else(|| InputError::NoPath(rev.clone()))?;
            checkout(rev, path)
        }
    }
}

fn checkout(rev: &str, path: &Path) -> Result<Materialized, InputError> {
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
        .map_err(|_| InputError::NonUtf8)?
        .split('\0')
        .filter(|f| !f.is_empty())
        .collect();
    if files.is_empty() {
        return Err(InputError::Nothing {
            rev: rev.to_string(),
            path: path.to_path_buf(),
        });
    }
    let dir = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    for file in files {
        let content = git(&["show", &format!("{rev}:{file}")], None)?;
        let target = dir.path().join(file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&target, content).map_err(io(&target))?;
    }
    Ok(Materialized {
        path: dir.path().join(relative(path)?),
        _dir: Some(dir),
    })
}

/// `path` relative to the repository's top level.
fn relative(path: &Path) -> Result<PathBuf, InputError> {
    let prefix = git(&["rev-parse", "--show-prefix"], None)?;
    let prefix = String::from_utf8_lossy(&prefix).trim().to_string();
    let joined = Path::new(&prefix).join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return Err(InputError::Outside(path.to_path_buf()));
                }
            }
            std::path::Component::CurDir => {}
            std::path::Component::Normal(p) => out.push(p),
            _ => return Err(InputError::NotInside(path.to_path_buf())),
        }
    }
    Ok(out)
}

fn git(args: &[&str], path: Option<&Path>) -> Result<Vec<u8>, InputError> {
    let mut cmd = Command::new("git");
    cmd.args(args);
    if let Some(p) = path {
        cmd.arg(p);
    }
    let out = cmd.output().map_err(InputError::NoGit)?;
    if !out.status.success() {
        return Err(InputError::Git {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
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
