//! Keeps the layers honest: the pure core (`api`, `model`, `ir`, `gateway`, `envoy`, `snapshot`,
//! `translate`, `options`) never reaches an edge (every other top-level module; each one must be
//! classified, so a new module cannot slip through unclassified), core modules depend only in one
//! direction ([`CORE_MAY_USE`]: `gateway/` never reaches `envoy/`, names come from `ir::names`), the
//! core does no I/O and reads no clock, environment, randomness or thread-local state, and a few edges
//! keep out of each other ([`EDGE_MAY_NOT_USE`]: the ADS server serves data and never reaches the
//! translator).
//!
//! The check reads the crate's sources: it follows `mod` declarations from `src/lib.rs` (honouring
//! `#[path]`), strips comments and string literals, and resolves every `crate::`, `super::` and `self::`
//! path — including `use` groups that rustfmt wraps over several lines, and `std::{fs, env}` groups — to
//! the module it names. A self-test runs the same checker on planted violations, so the test cannot pass
//! by finding nothing.

mod parse;
mod selftest;

use std::path::{Path, PathBuf};

use parse::{crate_sources, path_at, resolve, strip};

const CORE: &[&str] = &[
    "api",
    "model",
    "ir",
    "gateway",
    "envoy",
    "snapshot",
    "translate",
    "options",
    "par",
];
const EDGES: &[&str] = &[
    "source", "xds", "status", "runtime", "admin", "testkit", "demo", "cli", "crds", "certs", "ops", "resolve",
];
/// Which core modules each core module may use: the direction of the pipeline (objects → model → IR →
/// Envoy), with `translate` composing them and `api`/`options` underneath everything.
const CORE_MAY_USE: &[(&str, &[&str])] = &[
    ("api", &[]),
    // A parallel map over a slice: threads, no I/O, output independent of the thread count.
    ("par", &[]),
    // Translator options carry IR settings (DNS) as the translator will write them.
    ("options", &["api", "ir"]),
    // The YAML writer renders a long list in pieces on every core (`model::yaml::RootMap`).
    ("model", &["api", "options", "par"]),
    ("ir", &["api"]),
    ("gateway", &["api", "options", "model", "ir"]),
    ("envoy", &["api", "options", "ir"]),
    // What is served, as data: packed resources (Envoy's), statuses (Gateway API's), ordered hosts.
    ("snapshot", &["api", "options", "ir", "gateway", "envoy"]),
    (
        "translate",
        &["api", "options", "model", "ir", "gateway", "envoy", "snapshot", "par"],
    ),
];
/// Edges that must not depend on some others, and why: each rule is an edge of the import graph that was
/// removed and must not grow back.
const EDGE_MAY_NOT_USE: &[(&str, &[&str], &str)] = &[
    (
        "xds",
        &[
            "translate",
            "runtime",
            "status",
            "source",
            "admin",
            "ops",
            "cli",
            "demo",
        ],
        "the ADS server serves `snapshot` data, whatever produced it",
    ),
    (
        "status",
        &["xds", "translate", "runtime", "source"],
        "the status writer receives statuses and NACK verdicts over channels",
    ),
    (
        "ops",
        &["cli", "runtime"],
        "operator tools take their own argument structs, not clap's",
    ),
    ("demo", &["cli"], "`cli` runs the demo; the demo never reaches back"),
];
/// Text that means I/O, a clock, the environment, randomness or a network/Kubernetes client.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "std::fs",
    "std::env",
    "std::process",
    "std::net::TcpStream",
    "std::net::TcpListener",
    "std::net::UdpSocket",
    "Instant::now",
    "SystemTime",
    "Utc::now",
    "rand::",
    "getrandom",
    "tonic::transport",
    "kube::Client",
    "kube::Api",
    "kube::runtime",
    "thread_local!",
];
/// Known exceptions to [`FORBIDDEN`], each with its reason; anything else is a violation.
const ALLOWED: &[(&str, &str, &str)] = &[(
    "src/model/objects.rs",
    "thread_local!",
    "the model's read recorder (what a translation step read, for the incremental engine): a per-thread \
     stack of frames, pure within a call; issue 26 moves it into an explicit context",
)];
/// Test scaffolding inside core modules (`tests` modules, the IR builder, Envoy fixtures): it may build
/// what it checks from any core module, against the pipeline's direction, but never from an edge.
fn scaffolding(module: &[String]) -> bool {
    // A `tests` module and its children (`check/tests/incremental.rs`) are test code.
    module.iter().any(|m| m == "tests") || module == ["ir", "build"] || module == ["envoy", "fixture"]
}

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
fn every_top_level_module_is_core_or_edge() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let unclassified: Vec<String> = crate_sources(&root)
        .iter()
        .filter_map(|s| s.module.first().cloned())
        .filter(|m| !CORE.contains(&m.as_str()) && !EDGES.contains(&m.as_str()))
        .collect();
    assert!(
        unclassified.is_empty(),
        "modules neither core nor edge: {unclassified:?}"
    );
}

/// What is wrong with one file, as `file:line: why` lines.
fn violations(s: &Source) -> Vec<String> {
    let Some(top) = s.module.first().map(String::as_str) else {
        return Vec::new();
    };
    if !CORE.contains(&top) {
        return edge_violations(s, top);
    }
    let may_use = CORE_MAY_USE
        .iter()
        .find(|(m, _)| *m == top)
        .map_or(&[][..], |(_, allowed)| *allowed);
    let code = strip(&s.text);
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    // Whole-file scans, so a `use` group wrapped over several lines is read as one.
    for (offset, target) in referenced_modules(&code, &s.module) {
        let at = format!("{}:{}", s.file.display(), line_of(offset));
        if EDGES.contains(&target.as_str()) {
            out.push(format!("{at}: core module `{top}` uses edge `{target}`"));
        } else if CORE.contains(&target.as_str())
            && target != top
            && !may_use.contains(&target.as_str())
            && !scaffolding(&s.module)
        {
            let why = if top == "gateway" && target == "envoy" {
                " (names belong to `ir::names`; Envoy protos to `envoy`)"
            } else {
                ""
            };
            out.push(format!(
                "{at}: `{top}` uses `{target}`, against the direction of the pipeline{why}"
            ));
        }
    }
    for (offset, path) in std_paths(&code) {
        for word in FORBIDDEN {
            let file = s.file.to_string_lossy();
            let allowed = ALLOWED.iter().any(|(f, w, _)| *f == file && w == word);
            if contains_path(&path, word) && !allowed {
                out.push(format!(
                    "{}:{}: core module `{top}` uses `{word}`",
                    s.file.display(),
                    line_of(offset)
                ));
            }
        }
    }
    out
}

/// What an edge uses that [`EDGE_MAY_NOT_USE`] keeps it from.
fn edge_violations(s: &Source, top: &str) -> Vec<String> {
    let Some((_, forbidden, why)) = EDGE_MAY_NOT_USE.iter().find(|(m, _, _)| *m == top) else {
        return Vec::new();
    };
    let code = strip(&s.text);
    referenced_modules(&code, &s.module)
        .into_iter()
        .filter(|(_, target)| forbidden.contains(&target.as_str()))
        .map(|(offset, target)| {
            let line = code[..offset].matches('\n').count() + 1;
            format!("{}:{line}: `{top}` uses `{target}`: {why}", s.file.display())
        })
        .collect()
}

/// Every path the code names that a forbidden word could be: each line as written, plus each item of
/// a `std::…::{a, b}` group spelled out in full (`std::fs`), with its offset.
fn std_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        out.push((offset, line.to_string()));
        offset += line.len();
    }
    for (i, _) in code.match_indices("std::") {
        let (segments, groups, _) = path_at(&code[i..]);
        for g in groups {
            out.push((i, format!("{}::{g}", segments.join("::"))));
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

/// The crate-level modules the `crate::`, `super::` and `self::` paths in `code` lead to, with the
/// offset of each path.
fn referenced_modules(code: &str, module: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let boundary =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        if boundary
            && (code[i..].starts_with("crate::") || code[i..].starts_with("super::") || code[i..].starts_with("self::"))
        {
            let (segments, groups, len) = path_at(&code[i..]);
            if let Some(resolved) = resolve(&segments, module) {
                if resolved.is_empty() {
                    out.extend(groups.into_iter().map(|g| (i, g)));
                } else {
                    out.push((i, resolved[0].clone()));
                }
            }
            i += len.max(1);
        } else {
            i += 1;
        }
    }
    out
}
