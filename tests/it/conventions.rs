//! The conventions the sources keep, held so they cannot drift:
//!
//! - **Module layout**: a module with children is `x/mod.rs`, never `x.rs` beside `x/`, and no
//!   `#[path]` points a module at a file its name does not give.
//! - **Test layout**: a module's unit tests are `mod tests`, inline when short, otherwise the module
//!   directory's `tests.rs` (or `tests/mod.rs` with children of its own); no `*_tests.rs` siblings.
//! - **Size**: no file in `src/` over 400 lines; no product function over 80 (tests and test
//!   scaffolding — `tests` modules, `src/envoy/fixture.rs`, `src/ir/build.rs` — are exempt from the
//!   function bound only).
//!
//! The function scan relies on rustfmt's layout (CI runs `cargo fmt --check` first): a `fn` item's body
//! ends at the first `}` at the item's own indentation. A self-test plants each violation.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 400;
const MAX_FN_LINES: usize = 80;
/// Test scaffolding outside `tests` modules, exempt from the function bound.
const SCAFFOLDING: &[&str] = &["src/envoy/fixture.rs", "src/ir/build.rs"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What breaks the layout conventions among `files` (paths relative to the repository).
fn layout_violations(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let dirs: Vec<String> = files
        .iter()
        .filter_map(|(p, _)| p.rsplit_once('/').map(|(d, _)| d.to_string()))
        .collect();
    for (path, text) in files {
        let stem = path.trim_end_matches(".rs");
        if !path.ends_with("/mod.rs") && dirs.iter().any(|d| d == stem) {
            out.push(format!("{path}: a module with children is {stem}/mod.rs"));
        }
        if path.ends_with("_tests.rs") {
            out.push(format!("{path}: unit tests go in the module directory's tests.rs"));
        }
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[path") {
                out.push(format!("{path}:{}: #[path]: name the file as its module", i + 1));
            }
        }
    }
    out
}

/// What breaks the size bounds in one file.
fn size_violations(path: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() > MAX_FILE_LINES {
        out.push(format!(
            "{path}: {} lines (bound {MAX_FILE_LINES}): split it",
            lines.len()
        ));
    }
    let tests_file = path.ends_with("/tests.rs") || path.contains("/tests/");
    if tests_file || SCAFFOLDING.contains(&path) {
        return out;
    }
    // An inline test module sits at the end of its file, after `#[cfg(test)]`.
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests"))
        .unwrap_or(lines.len());
    for (name, start, len) in functions(&lines[..end]) {
        if len > MAX_FN_LINES {
            out.push(format!(
                "{path}:{}: fn {name} is {len} lines (bound {MAX_FN_LINES})",
                start + 1
            ));
        }
    }
    out
}

/// Every `fn` item with a body: its name, first line and length in lines.
fn functions(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(name) = fn_name(trimmed) else { continue };
        let indent = line.len() - trimmed.len();
        // The signature may wrap; the body opens on the line that ends with `{` (or it is a declaration).
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let close = (open + 1..lines.len()).find(|&j| {
            let l = lines[j];
            l.len() > indent && l[..indent].trim().is_empty() && l[indent..].starts_with('}')
        });
        if let Some(close) = close {
            out.push((name, i, close - i + 1));
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
        "extern \"C\" ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&p).expect("read source");
            (rel, text)
        })
        .collect()
}

#[test]
fn sources_keep_one_module_and_test_layout() {
    let files = sources();
    assert!(files.len() > 200, "the walk found {} files", files.len());
    let found = layout_violations(&files);
    assert!(found.is_empty(), "layout:\n  {}", found.join("\n  "));
}

#[test]
fn files_and_product_functions_stay_small() {
    let found: Vec<String> = sources().iter().flat_map(|(p, t)| size_violations(p, t)).collect();
    assert!(found.is_empty(), "size:\n  {}", found.join("\n  "));
}

#[test]
fn the_checks_catch_planted_violations() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let layout = layout_violations(&[
        file("src/a.rs", "mod b;\n"),
        file("src/a/b.rs", "fn f() {}\n"),
        file("src/c/mod.rs", "#[cfg(test)]\n#[path = \"c_tests.rs\"]\nmod tests;\n"),
        file("src/c/d_tests.rs", "fn t() {}\n"),
    ]);
    for want in [
        "src/a.rs: a module with children",
        "src/c/mod.rs:2: #[path]",
        "src/c/d_tests.rs",
    ] {
        assert!(layout.iter().any(|v| v.contains(want)), "{want} not in {layout:?}");
    }
    assert!(layout_violations(&[file("src/a/mod.rs", ""), file("src/a/b.rs", "")]).is_empty());

    let long_fn = |indent: &str, n: usize| {
        let body: String = (0..n).map(|i| format!("{indent}    let _x{i} = {i};\n")).collect();
        format!(
            "{indent}pub(crate) async fn long(\n{indent}    a: u8,\n{indent}) -> u8 {{\n{body}{indent}    a\n{indent}}}\n"
        )
    };
    let found = size_violations("src/x.rs", &format!("impl X {{\n{}}}\n", long_fn("    ", 80)));
    assert!(
        found.iter().any(|v| v.contains("src/x.rs:2: fn long is 85 lines")),
        "{found:?}"
    );
    assert!(
        size_violations("src/x.rs", &long_fn("", 70)).is_empty(),
        "75 lines is within the bound"
    );
    let in_tests = format!("fn f() {{}}\n\n#[cfg(test)]\nmod tests {{\n{}}}\n", long_fn("    ", 90));
    assert!(
        size_violations("src/x.rs", &in_tests).is_empty(),
        "tests are exempt from the fn bound"
    );
    assert!(size_violations("src/x/tests.rs", &long_fn("", 90)).is_empty());
    let big = "// line\n".repeat(401);
    assert!(
        size_violations("src/x/tests.rs", &big)
            .iter()
            .any(|v| v.contains("401 lines"))
    );
}
