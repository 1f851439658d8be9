//! Text → one JSON value per document, within budgets an outsider who writes a file cannot get around.
//!
//! A file's cost is bounded by what it *parses into*, not only by its length: YAML aliases let a few
//! hundred bytes stand for gigabytes (each document of a 600 KB file expanding to 60 MB aborted
//! `pier serve` on a failed allocation). The budget is the file's size cap, spent across all its
//! documents: scalar bytes (each alias counted every time it is used) and values (nodes) each at most
//! `max_bytes`. A file without aliases never exceeds it (its scalars are part of its text, and every
//! value takes at least one byte of it), so the bound only ever refuses expansion.
//!
//! Nesting is bounded to [`MAX_DEPTH`] levels by the streaming parser itself, so a deep file is refused
//! after reading as far as the limit, in linear time; JSON, parsed by serde_json, is held to the same
//! depth. A `.json` file is JSON only: a JSON error is the answer, never a cue to try YAML.

use serde_json::Value;
use serde_saphyr::budget::BudgetBreach;

use super::{ParseError, split};

/// How deeply mappings and lists may nest. Kubernetes objects nest a dozen levels at most.
pub const MAX_DEPTH: usize = 64;

/// Values one YAML document may hold, whatever the file budget left (serde-saphyr's default).
const MAX_NODES_PER_DOCUMENT: usize = 250_000;

/// How a text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// JSON only (a `.json` file); otherwise a text that starts like JSON is tried as JSON, then YAML.
    pub json_only: bool,
    /// The text's own size limit, and the budget of what its documents may expand to.
    pub max_bytes: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            json_only: false,
            max_bytes: super::DEFAULT_MAX_BYTES,
        }
    }
}

/// One entry per document, `None` for an empty one (only comments, or a bare `---`), so indices match
/// what a reader counts in the file. Counting is the YAML parser's: a header comment before the first
/// `---` does not make a document of its own.
pub(super) fn documents(source: &str, text: &str, opts: ParseOptions) -> Result<Vec<Option<Value>>, ParseError> {
    let syntax = |index: usize, message: String| ParseError::Syntax {
        file: source.into(),
        index,
        message,
    };
    if text.len() > opts.max_bytes {
        let message = format!(
            "{} bytes is over the {}-byte limit for one file",
            text.len(),
            opts.max_bytes
        );
        return Err(syntax(0, message));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // JSON is YAML, but YAML parsers reject tab indentation that JSON allows, and serde_json's messages are
    // better for JSON files; YAML remains the fallback for flow-style YAML that merely starts with `{`.
    if opts.json_only {
        return json_documents(text).map_err(|(index, m)| syntax(index, m));
    }
    if text.trim_start().starts_with(['{', '[']) {
        return json_documents(text)
            .or_else(|json_error| yaml_documents(text, opts.max_bytes).map_err(|_| json_error))
            .map_err(|(index, m)| syntax(index, m));
    }
    yaml_documents(text, opts.max_bytes).map_err(|(index, m)| syntax(index, m))
}

type DocError = (usize, String);

fn json_documents(text: &str) -> Result<Vec<Option<Value>>, DocError> {
    let mut docs = Vec::new();
    for value in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let index = docs.len();
        let value = value.map_err(|e| (index, format!("invalid JSON: {e}")))?;
        if cost(&value).depth > MAX_DEPTH {
            return Err((index, format!("invalid JSON: nested deeper than {MAX_DEPTH} levels")));
        }
        docs.push((!value.is_null()).then_some(value));
    }
    Ok(docs)
}

fn yaml_documents(text: &str, max_bytes: usize) -> Result<Vec<Option<Value>>, DocError> {
    let mut docs = Vec::new();
    let mut left = Cost {
        nodes: max_bytes,
        scalar_bytes: max_bytes,
        depth: 0,
    };
    for doc in split::documents(text) {
        let index = docs.len();
        let read = match super::fast::document(&doc.text, (left.nodes, left.scalar_bytes)) {
            Some(fast) => Ok(fast),
            None => serde_saphyr::from_str_with_options(&doc.text, yaml_options(&left)).map(|v: Value| {
                let spent = cost(&v);
                (v, spent)
            }),
        };
        let (value, spent) = match read {
            Ok(read) => read,
            // Again in place, for the file's line numbers: the same text after blank lines fails the
            // same way.
            Err(e) => {
                let e = serde_saphyr::from_str_with_options::<Value>(&doc.padded(), yaml_options(&left))
                    .err()
                    .unwrap_or(e);
                return Err((index, yaml_message(&e, &left, max_bytes)));
            }
        };
        left.nodes = left.nodes.saturating_sub(spent.nodes);
        left.scalar_bytes = left.scalar_bytes.saturating_sub(spent.scalar_bytes);
        docs.push((!value.is_null()).then_some(value));
    }
    Ok(docs)
}

/// The YAML the API server and kubectl accept, with budgets: YAML 1.2 scalars (`yes`, `on`, `y` stay
/// strings; only `true`/`false` are booleans), merge keys, duplicate keys and custom tags refused,
/// non-finite numbers refused (JSON cannot hold them), and bounds on depth, aliases, anchors, events,
/// and on values and scalar bytes to what the file's budget has `left`.
fn yaml_options(left: &Cost) -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        reject_unsupported_tags: true,
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_events: 1_000_000,
            max_nodes: left.nodes.min(MAX_NODES_PER_DOCUMENT),
            max_total_scalar_bytes: left.scalar_bytes,
        },
    }
}

/// [`yaml_options`] with a whole file's budget: for one scalar, or one document already read.
pub(super) fn yaml_options_default() -> serde_saphyr::Options {
    yaml_options(&Cost {
        nodes: MAX_NODES_PER_DOCUMENT,
        scalar_bytes: super::DEFAULT_MAX_BYTES,
        depth: 0,
    })
}

/// serde-saphyr's message, except for the budgets an attack trips, which are said in pier's words.
fn yaml_message(e: &serde_saphyr::Error, left: &Cost, max_bytes: usize) -> String {
    let mut inner = e;
    // A breach inside an alias comes wrapped with where the alias was used.
    while let serde_saphyr::Error::AliasError { error, .. } | serde_saphyr::Error::WithSnippet { error, .. } = inner {
        inner = error;
    }
    let serde_saphyr::Error::Budget { breach, .. } = inner else {
        return format!("invalid YAML: {e}");
    };
    let at = e
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
        .unwrap_or_default();
    let aliases = "aliases count each time they are used";
    match breach {
        BudgetBreach::Depth { .. } => format!("invalid YAML: nested deeper than {MAX_DEPTH} levels{at}"),
        BudgetBreach::ScalarBytes { .. } => {
            format!("invalid YAML: the file expands to more than {max_bytes} bytes of text, its limit ({aliases}){at}")
        }
        BudgetBreach::Nodes { .. } if left.nodes < MAX_NODES_PER_DOCUMENT => {
            format!("invalid YAML: the file expands to more than {max_bytes} values, its limit ({aliases}){at}")
        }
        BudgetBreach::Nodes { .. } => {
            format!("invalid YAML: more than {MAX_NODES_PER_DOCUMENT} values in one document ({aliases}){at}")
        }
        other => format!("invalid YAML: over a parser limit ({other:?}){at}"),
    }
}

/// What a document parsed into: values, bytes of strings (keys included), and deepest nesting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Cost {
    pub nodes: usize,
    pub scalar_bytes: usize,
    pub depth: usize,
}

/// Walks without recursion: the value may be as deep as serde_json allows, more than the stack would.
pub(super) fn cost(value: &Value) -> Cost {
    let mut c = Cost::default();
    // Each value with the depth of the collection holding it; only collections nest, as the YAML
    // parser counts depth.
    let mut stack = vec![(value, 0)];
    while let Some((v, outer)) = stack.pop() {
        c.nodes += 1;
        match v {
            Value::String(s) => c.scalar_bytes += s.len(),
            Value::Array(items) => {
                c.depth = c.depth.max(outer + 1);
                stack.extend(items.iter().map(|i| (i, outer + 1)));
            }
            Value::Object(map) => {
                c.depth = c.depth.max(outer + 1);
                for (k, v) in map {
                    c.nodes += 1;
                    c.scalar_bytes += k.len();
                    stack.push((v, outer + 1));
                }
            }
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(max_bytes: usize) -> ParseOptions {
        ParseOptions {
            json_only: false,
            max_bytes,
        }
    }

    fn err(text: &str, opts: ParseOptions) -> String {
        documents("cfg/x.yaml", text, opts).expect_err("refused").to_string()
    }

    /// `docs` documents, each a 1,000-byte string used 110 times through two levels of aliases:
    /// 111 KB of text per document once expanded, from ~1.1 KB of file.
    fn laughs(docs: usize) -> String {
        let one = format!(
            "a: &a {}\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n",
            "x".repeat(1_000)
        );
        vec![one; docs].join("---\n")
    }

    #[test]
    fn alias_expansion_is_bounded_across_the_documents_of_a_file() {
        // Each document alone is far within every per-document budget; together they are 11 MB.
        let text = laughs(100);
        assert!(text.len() < 120_000);
        let e = err(&text, opts(1 << 20));
        assert!(
            e.starts_with("cfg/x.yaml: document 9: invalid YAML: the file expands to more than 1048576 bytes of text"),
            "{e}"
        );
        // Nine documents fit in the same budget.
        assert_eq!(documents("cfg/x.yaml", &laughs(9), opts(1 << 20)).unwrap().len(), 9);
    }

    #[test]
    fn a_file_without_aliases_fits_its_own_budget() {
        // Mostly values and keys, the densest a file gets: about one value per two bytes of text.
        let doc = format!("k: [{}]\n", vec!["1"; 5_000].join(","));
        let text = vec![doc; 5].join("---\n");
        let docs = documents("cfg/x.yaml", &text, opts(text.len())).unwrap();
        assert_eq!(docs.len(), 5);
        let e = err(&text, opts(text.len() - 1));
        assert!(e.contains("over the") && e.contains("-byte limit for one file"), "{e}");
    }

    #[test]
    fn deep_nesting_is_refused_naming_file_and_limit() {
        let levels = 100_000;
        let flow = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let mapping = format!("{}1{}", "a: {".repeat(levels), "}".repeat(levels));
        let block: String = (0..200).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        for (what, text) in [("flow", &flow), ("mapping", &mapping), ("block", &block)] {
            let e = err(text, opts(1 << 20));
            assert!(e.starts_with("cfg/x.yaml: document 0: invalid "), "{what}: {e}");
            assert!(
                e.contains("nested deeper than") || e.contains("recursion limit"),
                "{what}: {e}"
            );
        }
        // JSON is held to the YAML parser's depth, not serde_json's deeper one.
        let json = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let e = err(&json, opts(1 << 20));
        assert_eq!(e, "cfg/x.yaml: document 0: invalid JSON: nested deeper than 64 levels");
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(documents("cfg/x.yaml", &ok, opts(1 << 20)).is_ok());
    }

    #[test]
    fn json_only_text_is_never_read_as_yaml() {
        // Flow YAML that is not JSON: read as YAML when sniffed, refused when the file says JSON.
        let text = "{apiVersion: v1, kind: Namespace, metadata: {name: a}}";
        assert!(documents("cfg/x.yaml", text, opts(1 << 20)).is_ok());
        let json_only = ParseOptions {
            json_only: true,
            ..opts(1 << 20)
        };
        let e = err(text, json_only);
        assert!(
            e.starts_with("cfg/x.yaml: document 0: invalid JSON: key must be a string"),
            "{e}"
        );
        // YAML in a .json file, even one that does not start like JSON.
        assert!(err("apiVersion: v1\n", json_only).contains("invalid JSON"));
    }

    #[test]
    fn cost_counts_keys_strings_and_depth() {
        let v = serde_json::json!({"ab": ["xyz", 1, {"c": null}]});
        // map, key ab, list, "xyz", 1, map, key c, null.
        assert_eq!(
            cost(&v),
            Cost {
                nodes: 8,
                scalar_bytes: 6,
                depth: 3
            }
        );
    }
}
