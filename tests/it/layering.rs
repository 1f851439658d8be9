//! Keeps the layers honest: the pure core (`api`, `model`, `ir`, `gateway`, `envoy`, `translate`,
//! `options`) never reaches an edge (`source`, `xds`, `status`, `runtime`, `admin`, `testkit`, `demo`,
//! `cli`), `gateway/` never reaches `envoy/` (names come from `ir::names`), and the core does no I/O and
//! reads no clock, environment or randomness.
//!
//! The check reads the crate's sources: it follows `mod` declarations from `src/lib.rs` (honouring
//! `#[path]`), strips comments and string literals, and resolves every `crate::`, `super::` and `self::`
//! path (including `use` groups) to the module it names. A self-test runs the same checker on planted
//! violations, so the test cannot pass by finding nothing.

use std::path::{Path, PathBuf};

const CORE: &[&str] = &["api", "model", "ir", "gateway", "envoy", "translate", "options"];
const EDGES: &[&str] = &[
    "source", "xds", "status", "runtime", "admin", "testkit", "demo", "cli", "crds", "certs", "ops",
];
/// Text that means I/O, a clock, the environment, randomness or a network/Kubernetes client.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "std::fs",
    "std::env",
    "std::process",
    "std::net::Tcp",
    "std::net::Udp",
    "Instant::now",
    "SystemTime",
    "Utc::now",
    "rand::",
    "getrandom",
    "tonic::transport",
    "kube::Client",
    "kube::Api",
    "kube::runtime",
];

/// One source file and the module path it is (`["gateway", "backends", "eg"]`).
struct Source {
    file: PathBuf,
    module: Vec<String>,
    text: String,
}

#[test]
fn the_core_never_reaches_an_edge_and_does_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = crate_sources(&root);
    assert!(
        sources.iter().any(|s| s.module == ["gateway", "backends", "eg", "tls"]),
        "the module walk found the nested modules"
    );
    let violations: Vec<String> = sources.iter().flat_map(violations).collect();
    assert!(
        violations.is_empty(),
        "layering violations:\n  {}",
        violations.join("\n  ")
    );
}

#[test]
fn the_checker_catches_planted_violations() {
    let planted = |module: &[&str], text: &str| Source {
        file: PathBuf::from(format!("src/{}.rs", module.join("/"))),
        module: module.iter().map(|s| s.to_string()).collect(),
        text: text.to_string(),
    };
    let cases = [
        (
            planted(&["gateway", "x"], "use crate::xds::cache::SnapshotCache;"),
            "edge `xds`",
        ),
        (
            planted(&["gateway", "x"], "use crate::{ir, runtime::View};"),
            "edge `runtime`",
        ),
        (
            planted(&["gateway", "backends", "x"], "use super::super::super::source::files;"),
            "edge `source`",
        ),
        (
            planted(&["model", "x"], "fn f() { crate::testkit::lo(2); }"),
            "edge `testkit`",
        ),
        (
            planted(&["gateway", "x"], "use crate::envoy::pb::cluster;"),
            "`gateway` uses `envoy`",
        ),
        (
            planted(&["gateway", "x"], "use super::super::envoy::Resources;"),
            "`gateway` uses `envoy`",
        ),
        (
            planted(&["envoy", "x"], "let t = std::time::Instant::now();"),
            "`Instant::now`",
        ),
        (
            planted(&["ir", "x"], "let s = std::fs::read_to_string(p);"),
            "`std::fs`",
        ),
        (planted(&["translate"], "let v = std::env::var(\"X\");"), "`std::env`"),
        (planted(&["options"], "use tokio::sync::watch;"), "`tokio`"),
    ];
    for (source, why) in &cases {
        let found = violations(source);
        assert!(
            found.iter().any(|v| v.contains(why)),
            "{:?} in {}: expected a violation mentioning {why}, got {found:?}",
            source.text,
            source.file.display()
        );
    }
    // Comments and strings are not code; edges may use anything.
    let clean = [
        planted(&["gateway", "x"], "//! see [`crate::xds`] and `std::fs`\nfn f() {}"),
        planted(&["gateway", "x"], "const S: &str = \"crate::runtime tokio\";"),
        planted(&["xds", "x"], "use tokio::sync::watch; use crate::runtime::View;"),
        planted(&["envoy", "x"], "use crate::ir::names;"),
    ];
    for source in &clean {
        assert_eq!(violations(source), Vec::<String>::new(), "{}", source.text);
    }
}

/// Every file of the crate, from `src/lib.rs` through its `mod` declarations.
fn crate_sources(root: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    walk(root, &root.join("lib.rs"), Vec::new(), &mut out);
    out
}

fn walk(root: &Path, file: &Path, module: Vec<String>, out: &mut Vec<Source>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let code = strip(&text);
    // Where `mod x;` looks for its file: next to lib.rs / mod.rs, else in a directory named after the file.
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
        _ => file.with_extension(""),
    };
    for (name, path_attr) in mod_declarations(&text, &code) {
        let mut child = module.clone();
        child.push(name.clone());
        let child_file = match path_attr {
            Some(p) => file.parent().unwrap().join(p),
            None if dir.join(format!("{name}.rs")).exists() => dir.join(format!("{name}.rs")),
            None => dir.join(&name).join("mod.rs"),
        };
        walk(root, &child_file, child, out);
    }
    out.push(Source {
        file: file.strip_prefix(root.parent().unwrap()).unwrap_or(file).to_path_buf(),
        module,
        text,
    });
}

/// `mod name;` declarations (not inline `mod name { ... }`), with their `#[path = "..."]` if any.
fn mod_declarations(text: &str, code: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in code.lines().enumerate() {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .unwrap_or(t);
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("mod ") else { continue };
        let Some(name) = rest.trim_end().strip_suffix(';') else {
            continue;
        };
        let path_attr = (0..i).rev().take(3).find_map(|j| {
            let l = lines[j].trim();
            l.strip_prefix("#[path = \"")
                .and_then(|p| p.strip_suffix("\"]"))
                .map(str::to_string)
        });
        out.push((name.trim().to_string(), path_attr));
    }
    out
}

/// The code of a file with comments and the contents of string and char literals blanked out (line
/// structure kept, so line numbers still point at the source).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            while i < b.len() && !b[i..].starts_with(b"*/") {
                out.push(if b[i] == b'\n' { '\n' } else { ' ' });
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' || (b[i] == b'r' && b.get(i + 1) == Some(&b'"')) {
            let raw = b[i] == b'r';
            i += if raw { 2 } else { 1 };
            out.push_str("\"\"");
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && !raw {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// What is wrong with one file, as `file:line: why` lines.
fn violations(s: &Source) -> Vec<String> {
    let Some(top) = s.module.first().map(String::as_str) else {
        return Vec::new();
    };
    if !CORE.contains(&top) {
        return Vec::new();
    }
    let code = strip(&s.text);
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let at = format!("{}:{}", s.file.display(), n + 1);
        for target in referenced_modules(line, &s.module) {
            if EDGES.contains(&target.as_str()) {
                out.push(format!("{at}: core module `{top}` uses edge `{target}`"));
            }
            if top == "gateway" && target == "envoy" {
                out.push(format!(
                    "{at}: `gateway` uses `envoy` (names belong to `ir::names`; Envoy protos to `envoy`)"
                ));
            }
        }
        for word in FORBIDDEN {
            if contains_path(line, word) {
                out.push(format!("{at}: core module `{top}` uses `{word}`"));
            }
        }
    }
    out
}

/// `word` appears as a path (not as part of a longer identifier).
fn contains_path(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && (word.ends_with("::") || !after.is_some_and(|c| c.is_alphanumeric() || c == '_'))
    })
}

/// The crate-level modules the `crate::`, `super::` and `self::` paths on a line lead to.
fn referenced_modules(line: &str, module: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let boundary =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        if boundary
            && (line[i..].starts_with("crate::") || line[i..].starts_with("super::") || line[i..].starts_with("self::"))
        {
            let (segments, groups, len) = path_at(&line[i..]);
            if let Some(resolved) = resolve(&segments, module) {
                if resolved.is_empty() {
                    out.extend(groups);
                } else {
                    out.push(resolved[0].clone());
                }
            }
            i += len.max(1);
        } else {
            i += 1;
        }
    }
    out
}

/// The segments of the path starting at `s` (`super::super::x::y`), the first identifier of each item of
/// a `{...}` group that directly follows the crate root (`crate::{a, b::c}` gives `a`, `b`), and the
/// path's length.
fn path_at(s: &str) -> (Vec<String>, Vec<String>, usize) {
    let mut segments = Vec::new();
    let mut i = 0;
    loop {
        let ident: String = s[i..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            break;
        }
        i += ident.len();
        segments.push(ident);
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            break;
        }
    }
    let mut groups = Vec::new();
    if s[i..].starts_with('{') {
        let mut depth = 0;
        let mut item = String::new();
        for (j, c) in s[i..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 1 && (c == ',' || c == '{') || depth == 0 {
                let first: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !first.is_empty() {
                    groups.push(first);
                }
                item.clear();
                if depth == 0 {
                    i += j;
                    break;
                }
            } else if depth == 1 {
                item.push(c);
            }
        }
    }
    (segments, groups, i)
}

/// The absolute module path `segments` names from `module` (`None` when it climbs out of the crate);
/// empty when it names the crate root itself (the caller then looks at the group that follows).
fn resolve(segments: &[String], module: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}
