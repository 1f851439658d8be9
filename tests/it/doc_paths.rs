//! The map cannot drift from the ground: every repository path the README, `docs/` and the crate's own
//! docs name in backticks exists, and the counts the README states are the counts there are.
//!
//! A path is a backticked token that starts with one of the repository's top-level directories
//! (`src/`, `tests/`, `docs/`, …) or is a root file (`Cargo.toml`, `Dockerfile`, …). Tokens with
//! placeholders (`<case>`, `*`, `…`, `NS.NAME`) name a family rather than a file and are checked only up to
//! the placeholder. `::` and spaces end a path (`src/xds::bounds` is a module, not a file).

use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &[
    "src/",
    "tests/",
    "e2e/",
    "docs/",
    "deploy/",
    "testdata/",
    "scripts/",
    "examples/",
    "benches/",
    "compose/",
    "fuzz/",
    ".ci/",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.md` under the repository's docs, the README, and every `.rs` under `src/` (their `//!` and
/// `///` text).
fn documents() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut stack = vec![repo().join("docs"), repo().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "md" || e == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The backticked tokens of a document that name repository paths (for `.rs`, only in doc comments).
fn named_paths(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let rust = file.extension().is_some_and(|e| e == "rs");
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if rust && !(t.starts_with("//!") || t.starts_with("///")) {
            continue;
        }
        for (i, token) in line.split('`').enumerate() {
            if i % 2 == 1 && ROOTS.iter().any(|r| token.starts_with(r)) {
                out.push((n + 1, token.to_string()));
            }
        }
    }
    out
}

/// The part of a named path that must exist: without a `:line` suffix, and up to a placeholder,
/// `::` or a space (then only the directories before it are certain).
fn checkable(token: &str) -> &str {
    let token = match token.rsplit_once(':') {
        Some((path, line)) if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit()) => path,
        _ => token,
    };
    let end = token
        .find(['<', '*', '…', ' ', '{', '#', '('])
        .into_iter()
        .chain(token.find("::"))
        .chain(token.find("NS."))
        .min();
    match end {
        None => token,
        Some(end) => {
            let cut = &token[..end];
            cut.rsplit_once('/').map_or(cut, |(dir, _)| dir)
        }
    }
}

#[test]
fn every_path_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        for (line, token) in named_paths(&doc) {
            let path = checkable(&token);
            if path.is_empty() {
                continue;
            }
            checked += 1;
            if !repo().join(path).exists() {
                let shown = doc.strip_prefix(repo()).unwrap_or(&doc).display().to_string();
                missing.push(format!("{shown}:{line}: `{token}`"));
            }
        }
    }
    assert!(checked > 100, "only {checked} paths found: the scan is broken");
    assert!(
        missing.is_empty(),
        "paths the docs name that do not exist:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_readme_counts_the_golden_cases_there_are() {
    let cases = std::fs::read_dir(repo().join("testdata"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("input.yaml").exists())
        .count();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let stated = format!("`testdata/<case>/`, {cases} cases");
    assert!(
        readme.contains(&stated),
        "README.md should say {stated:?} (there are {cases} golden cases)"
    );
}

#[test]
fn paths_are_cut_at_placeholders() {
    assert_eq!(checkable("testdata/<case>/input.yaml"), "testdata");
    assert_eq!(checkable("src/xds/bounds.rs"), "src/xds/bounds.rs");
    assert_eq!(checkable("src/xds::bounds"), "src");
    assert_eq!(checkable("src/gateway/mod.rs:42"), "src/gateway/mod.rs");
    assert_eq!(checkable("deploy/cert-manager/*.yaml"), "deploy/cert-manager");
}
