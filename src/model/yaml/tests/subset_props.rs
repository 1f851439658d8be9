//! Property tests of the line reader (`subset`): generated documents, the fast reader's pieces, and
//! edited manifests. Whatever it reads is serde-saphyr's answer; what it does not read is left alone.

use super::super::{split, subset};
use super::subset::{KUBECTL, WORKLOAD, slow};

/// Scalars and keys the generated documents draw from: every kind the reader types, and look-alikes.
const SCALARS: &[&str] = &[
    "a",
    "b c",
    "k8s.io/x",
    "1",
    "-2",
    "007",
    "1.5",
    "1e3",
    "0x1F",
    "+5",
    ".5",
    "10.0.0.1",
    "1.2.3",
    "10s",
    "~",
    "null",
    "Null",
    "true",
    "True",
    "yes",
    "off",
    "'q'",
    "'it''s'",
    "\"d\"",
    "\"\"",
    "''",
    "http://a:1/b",
    "a,b",
    "-x",
    "a:b",
    "x #c",
    "=",
    "~x",
    "$x",
    "(a)",
    "a;b",
    ".inf",
    "-.inf",
    ".nan",
    "<<",
    "-",
    "a: b",
];
const KEYS: &[&str] = &[
    "a",
    "b",
    "k8s.io/name",
    "x-y",
    "\"q k\"",
    "'s'",
    "\"\"",
    "on",
    "true",
    "1",
    "~",
    "<<",
    "a.b",
    "-k",
];

/// A document's tree; each collection says how it is written.
#[derive(Debug, Clone)]
enum Node {
    Scalar(usize),
    /// Entries, flow style, and (block) extra indentation: 2 or 4, or 0 for a sequence under a key.
    Map(Vec<(usize, Node)>, bool, usize),
    Seq(Vec<Node>, bool, usize),
}

fn node() -> impl proptest::strategy::Strategy<Value = Node> {
    use proptest::prelude::*;
    let leaf = (0..SCALARS.len()).prop_map(Node::Scalar);
    leaf.prop_recursive(4, 40, 4, |inner| {
        let style = (any::<bool>(), prop_oneof![Just(0usize), Just(2), Just(4)]);
        prop_oneof![
            (
                proptest::collection::vec((0..KEYS.len(), inner.clone()), 0..4),
                style.clone()
            )
                .prop_map(|(e, (flow, step))| Node::Map(e, flow, step)),
            (proptest::collection::vec(inner, 0..4), style).prop_map(|(i, (flow, step))| Node::Seq(i, flow, step)),
        ]
    })
}

fn flow_text(n: &Node) -> String {
    match n {
        Node::Scalar(i) => SCALARS[*i].to_string(),
        Node::Map(e, ..) => {
            let e: Vec<String> = e
                .iter()
                .map(|(k, v)| format!("{}: {}", KEYS[*k], flow_text(v)))
                .collect();
            format!("{{{}}}", e.join(", "))
        }
        Node::Seq(i, ..) => format!("[{}]", i.iter().map(flow_text).collect::<Vec<_>>().join(", ")),
    }
}

/// `n` as the value after `key:` or `- ` (a leading space or a line break included), at `indent`.
fn value_text(n: &Node, indent: usize, under_key: bool) -> String {
    match n {
        Node::Map(e, false, step) if !e.is_empty() => {
            format!("\n{}", block_text(n, indent + (*step).max(2)))
        }
        Node::Seq(i, false, step) if !i.is_empty() => {
            let at = if under_key {
                indent + step
            } else {
                indent + (*step).max(2)
            };
            format!("\n{}", block_text(n, at))
        }
        _ => format!(" {}", flow_text(n)),
    }
}

fn block_text(n: &Node, indent: usize) -> String {
    let pad = " ".repeat(indent);
    match n {
        Node::Map(e, ..) => e
            .iter()
            .map(|(k, v)| format!("{pad}{}:{}\n", KEYS[*k], value_text(v, indent, true)))
            .collect(),
        Node::Seq(items, ..) => items
            .iter()
            .map(|v| match v {
                // A compact mapping: its first key on the entry's line.
                Node::Map(e, false, _) if !e.is_empty() => {
                    let inner = block_text(v, indent + 2);
                    format!("{pad}- {}", &inner[indent + 2..])
                }
                _ => format!("{pad}-{}\n", value_text(v, indent, false)),
            })
            .collect(),
        Node::Scalar(_) => format!("{pad}{}\n", flow_text(n)),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4_000, failure_persistence: None, ..Default::default() })]

    /// Generated documents, whole or with one piece spliced in anywhere.
    #[test]
    fn generated_documents_read_as_serde_saphyr_reads_them(
        root in node(),
        splice in proptest::option::of((0.0..1.0f64, 0..super::fast::PIECES.len())),
    ) {
        let mut text = block_text(&root, 0);
        if let Some((at, piece)) = splice {
            let mut i = (text.len() as f64 * at) as usize;
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            text.insert_str(i, super::fast::PIECES[piece]);
        }
        if let Some(value) = subset::build(&text) {
            proptest::prop_assert_eq!(slow(&text).ok(), Some(value), "{}", text);
        }
    }
}

/// Pieces for the property test: the fast reader's, and the shapes this reader parses itself.
const MORE: &[&str] = &[
    "a b",
    "x: y",
    "- x: 1\n  y: 2\n",
    "'it''s'",
    " # c",
    "\n# c\n",
    "http://a:1/b",
    "a,b",
    "{k: v}",
    "[a, b]",
    "-x",
    "\n- ",
    "\n  - ",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4_000, failure_persistence: None, ..Default::default() })]

    #[test]
    fn any_text_it_reads_reads_as_serde_saphyr_reads_it(
        picks in proptest::collection::vec(0..super::fast::PIECES.len() + MORE.len(), 0..24)
    ) {
        let piece = |i: usize| super::fast::PIECES.get(i).copied().unwrap_or_else(|| MORE[i - super::fast::PIECES.len()]);
        let text: String = picks.iter().map(|&i| piece(i)).collect();
        if let Some(value) = subset::build(&text) {
            proptest::prop_assert_eq!(slow(&text).ok(), Some(value), "{:?}", text);
        }
    }
}

/// One edit of a manifest: a piece spliced in, a few bytes cut, a line's indentation changed, a line
/// repeated.
fn edit(text: &mut String, kind: u8, at: f64, piece: usize) {
    let mut i = ((text.len() as f64) * at) as usize;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
    let line_end = text[i..].find('\n').map_or(text.len(), |n| i + n + 1);
    match kind {
        0 => text.insert_str(i, super::fast::PIECES[piece % super::fast::PIECES.len()]),
        1 => {
            let end = (i + 1 + piece % 8).min(text.len());
            if text.is_char_boundary(end) {
                text.replace_range(i..end, "");
            }
        }
        2 if piece.is_multiple_of(2) => text.insert_str(line_start, if piece.is_multiple_of(4) { " " } else { "  " }),
        2 => {
            if text[line_start..].starts_with("  ") {
                text.replace_range(line_start..line_start + 1 + piece % 2, "");
            }
        }
        _ => {
            let line = text[line_start..line_end].to_string();
            text.insert_str(line_start, &line);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 3_000, failure_persistence: None, ..Default::default() })]

    /// Manifests the reader takes, edited a little: whatever it still reads is serde-saphyr's answer.
    #[test]
    fn edited_manifests_read_as_serde_saphyr_reads_them(
        doc in 0..8usize,
        edits in proptest::collection::vec((0..4u8, 0.0..1.0f64, 0..64usize), 1..4),
    ) {
        let docs = split::documents(WORKLOAD);
        let mut text = docs.get(doc).map_or(KUBECTL.to_string(), |d| d.text.clone());
        for (kind, at, piece) in edits {
            edit(&mut text, kind, at, piece);
        }
        if let Some(value) = subset::build(&text) {
            proptest::prop_assert_eq!(slow(&text).ok(), Some(value), "{}", text);
        }
    }
}
