//! The common document read straight from parser events: 2–2.5× faster than serde-saphyr's
//! deserializer into a `Value`, which was a third of `pier serve`'s start-up at 10,000 routes.
//!
//! It reads only what it can read exactly as serde-saphyr does (read.rs's options: YAML 1.2 booleans,
//! the same null spellings, the same parser and lookahead) and answers `None` for anything else:
//! anchors, aliases, tags, directives, merge keys, duplicate keys, collections or null-like text as
//! keys, deep nesting, large documents, and every parse error. The caller then reads the document with
//! serde-saphyr, which gives the answer and the error message, with all its budgets. A plain scalar
//! that could be a number is resolved by serde-saphyr too, on that scalar alone, so numbers, `0x1F`,
//! `1_000`, `.inf` and `10.0.0.1` mean what they always did.
//!
//! Built on granit-parser, the event parser serde-saphyr itself runs, so both see the same events.
//! In debug builds (every test, the fuzz targets) each answer is checked against serde-saphyr's,
//! including those of `subset`, which reads the simplest documents before any parser runs.

use std::borrow::Cow;

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value};

use super::read::{Cost, cost};

/// Deeper than this is serde-saphyr's to judge (its limit is `MAX_DEPTH`, 64); Kubernetes objects
/// nest a dozen levels.
pub(super) const MAX_FAST_DEPTH: usize = 32;
/// Values and keys beyond which serde-saphyr's per-document and per-file budgets decide.
const MAX_FAST_NODES: usize = 100_000;

enum Frame {
    Seq(Vec<Value>),
    /// A mapping and the key read for its next value.
    Map(Map<String, Value>, Option<String>),
}

/// The document `text` as serde-saphyr reads it, with what it cost the file's budget, or `None` when
/// serde-saphyr must read it. `budget` is what the file's budget has left, in values and in scalar
/// bytes.
pub(super) fn document(text: &str, budget: (usize, usize)) -> Option<(Value, Cost)> {
    // Half the budget: serde-saphyr counts in its own way, and a document near a limit is its call.
    // Without aliases a document's scalars (numbers too, which serde-saphyr counts) are part of its
    // text, so its length bounds them.
    if text.len() > budget.1 / 2 {
        return None;
    }
    let value = build(text)?;
    let spent = cost(&value);
    if spent.nodes > budget.0.min(MAX_FAST_NODES) / 2 {
        return None;
    }
    #[cfg(debug_assertions)]
    agrees(text, &value);
    Some((value, spent))
}

fn build(text: &str) -> Option<Value> {
    if let Some(value) = super::subset::build(text) {
        return Some(value);
    }
    let options = granit_parser::options! {
        simple_key_max_lookahead: serde_saphyr::Budget::default().simple_key_max_lookahead,
        emit_comments: false,
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut root = None;
    let mut documents = 0;
    for item in Parser::new_from_str_with_options(text, options) {
        let (event, _) = item.ok()?;
        let value = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::DocumentStart(_, version) => {
                documents += 1;
                if documents > 1 || version.is_some() {
                    return None;
                }
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                if let Some(Frame::Map(_, key @ None)) = stack.last_mut() {
                    *key = Some(map_key(text, style)?);
                    continue;
                }
                scalar(text, style)?
            }
            Event::SequenceStart(_, anchor, tag) | Event::MappingStart(_, anchor, tag)
                if anchor != 0 || tag.is_some() || stack.len() >= MAX_FAST_DEPTH || key_pending(&stack) =>
            {
                return None;
            }
            Event::SequenceStart(..) => {
                stack.push(Frame::Seq(Vec::new()));
                continue;
            }
            Event::MappingStart(..) => {
                stack.push(Frame::Map(Map::new(), None));
                continue;
            }
            Event::SequenceEnd => match stack.pop()? {
                Frame::Seq(items) => Value::Array(items),
                Frame::Map(..) => return None,
            },
            Event::MappingEnd => match stack.pop()? {
                Frame::Map(map, None) => Value::Object(map),
                _ => return None,
            },
            // Aliases, and whatever else the parser may emit: serde-saphyr's, with its budgets.
            _ => return None,
        };
        match stack.last_mut() {
            None if root.is_none() => root = Some(value),
            None => return None,
            Some(Frame::Seq(items)) => items.push(value),
            Some(Frame::Map(map, key)) => {
                if map.insert(key.take()?, value).is_some() {
                    // A duplicate key: serde-saphyr refuses it, in its words.
                    return None;
                }
            }
        }
    }
    stack.is_empty().then(|| root.unwrap_or(Value::Null))
}

/// A collection where a mapping key is expected (`? [a]: 1`).
fn key_pending(stack: &[Frame]) -> bool {
    matches!(stack.last(), Some(Frame::Map(_, None)))
}

/// A key as text. Plain keys that could mean something else (null, a number, a merge) are left to
/// serde-saphyr.
pub(super) fn map_key(text: Cow<'_, str>, style: ScalarStyle) -> Option<String> {
    if style == ScalarStyle::Plain && (text == "<<" || is_null(&text) || numeral_like(&text)) {
        return None;
    }
    Some(text.into_owned())
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// Could serde-saphyr read this plain scalar as a number? Its integer and float forms all start with
/// a digit, a sign or a dot, after trimming whitespace.
fn numeral_like(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
        || s.starts_with([' ', '\t', '\r', '\n'])
        || s.ends_with([' ', '\t', '\r', '\n'])
}

/// A plain scalar typed as serde-saphyr types it (strict booleans); other scalars are strings.
pub(super) fn scalar(text: Cow<'_, str>, style: ScalarStyle) -> Option<Value> {
    if style != ScalarStyle::Plain {
        return Some(Value::String(text.into_owned()));
    }
    let value = match &*text {
        t if is_null(t) => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        t if numeral_like(t) => return number(t),
        _ => Value::String(text.into_owned()),
    };
    Some(value)
}

/// A decimal integer directly; anything else serde-saphyr resolves on its own, which refuses
/// non-finite floats as pier's reader does.
fn number(t: &str) -> Option<Value> {
    let (negative, digits) = t.strip_prefix('-').map_or((false, t), |d| (true, d));
    let decimal = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if decimal {
        let n: i64 = digits.parse().ok()?;
        return Some(if negative { Value::from(-n) } else { Value::from(n) });
    }
    // Digits with two or more dots (an IPv4 address, a version) are no number in any YAML form: a
    // float has one dot at most. Resolving each through serde-saphyr was a twentieth of the read
    // (an EndpointSlice's addresses; `callgrind` at 2,000 routes).
    if t.starts_with(|c: char| c.is_ascii_digit())
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.bytes().filter(|b| *b == b'.').count() >= 2
    {
        return Some(Value::String(t.to_string()));
    }
    // Alone, the scalar must parse as the same plain scalar it was in place: one word of these
    // characters does (a scalar spanning lines, with spaces or other indicators, may not).
    if !t
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'))
    {
        return None;
    }
    match serde_saphyr::from_str_with_options::<Value>(t, super::read::yaml_options_default()).ok()? {
        Value::String(s) if s != t => None,
        v @ (Value::Number(_) | Value::String(_) | Value::Bool(_)) => Some(v),
        _ => None,
    }
}

/// Every fast answer is serde-saphyr's answer: checked wherever debug assertions are on.
#[cfg(debug_assertions)]
fn agrees(text: &str, fast: &Value) {
    let slow = serde_saphyr::from_str_with_options::<Value>(text, super::read::yaml_options_default());
    match slow {
        Ok(slow) => assert_eq!(&slow, fast, "the fast YAML reader disagrees on:\n{text}"),
        Err(e) => panic!("the fast YAML reader accepted what serde-saphyr refuses ({e}):\n{text}"),
    }
}
