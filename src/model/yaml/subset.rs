//! The commonest YAML read straight from its text, without a parser: one line at a time, with block
//! mappings and sequences by indentation, flow collections that close on their line, one-line quoted
//! scalars and plain scalars of a conservative alphabet. Manifests that `kubectl`, `helm template` and
//! pier's own workloads write are all of this shape.
//!
//! Why: the event parser (granit-parser) was a sixth of `pier serve`'s start at 50,000 routes, most
//! of the directory read, and tokenising each byte into events is what it costs. Here the common
//! document costs a scan of its lines.
//!
//! It answers `None` for anything outside that subset, however valid: tabs, carriage returns,
//! non-ASCII text, block scalars, anchors, aliases, tags, directives, complex keys, escapes,
//! multi-line scalars or flow collections, plain scalars with characters it does not list, empty
//! flow entries, and every error. The event-parser reader (`fast`) then reads the document, and
//! serde-saphyr after it; scalars are typed by `fast`'s rules, which defer to serde-saphyr for numbers.
//! In debug builds every answer is checked against serde-saphyr's (`fast::agrees`), and property
//! tests (`src/model/yaml/tests/subset_props.rs`) hold it to serde-saphyr on generated documents,
//! spliced pieces and edited manifests.

use std::borrow::Cow;

use granit_parser::ScalarStyle;
use serde_json::{Map, Value};

use super::fast::{MAX_FAST_DEPTH, map_key, scalar};

/// Longest key read here: the parser looks no further than 1,024 characters for a key's `:`
/// (serde-saphyr's `simple_key_max_lookahead`), and refuses or reads otherwise a longer one.
const MAX_KEY: usize = 1_000;

/// A line with content: its indentation in spaces, and the rest.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// The document `text` as serde-saphyr reads it, or `None` when it is not of the subset.
pub(super) fn build(text: &str) -> Option<Value> {
    // Outside the alphabet: tabs, carriage returns, control characters, and non-ASCII text (some of it
    // breaks lines in YAML 1.1 parsers).
    if text.bytes().any(|b| (b < 0x20 && b != b'\n') || b >= 0x7f) {
        return None;
    }
    let mut r = Reader {
        rest: text,
        current: None,
        refused: false,
    };
    r.advance();
    let value = r.block(r.line()?.indent, 0)?;
    (r.current.is_none() && !r.refused).then_some(value)
}

/// Lines read one at a time, never collected: a document is parsed in one pass over its text.
struct Reader<'a> {
    /// The text after the current line.
    rest: &'a str,
    current: Option<Line<'a>>,
    /// A line this reader leaves to the parser (a marker or a directive inside the document) ended it.
    refused: bool,
}

impl<'a> Reader<'a> {
    fn line(&self) -> Option<Line<'a>> {
        self.current
    }

    /// Moves to the next line with content.
    fn advance(&mut self) {
        self.current = None;
        while !self.rest.is_empty() {
            let (line, rest) = self.rest.split_once('\n').unwrap_or((self.rest, ""));
            self.rest = rest;
            let t = line.trim_start_matches(' ');
            // Blank lines and whole-line comments, at any indentation, say nothing.
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            // A marker-like line inside a document is the splitter's business, and a directive the
            // parser's.
            if t.starts_with("---") || t.starts_with("...") || t.starts_with('%') {
                self.refused = true;
                return;
            }
            self.current = Some(Line {
                indent: line.len() - t.len(),
                text: t,
            });
            return;
        }
    }

    /// The collection starting at the current line, which has `indent`.
    fn block(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth >= MAX_FAST_DEPTH {
            return None;
        }
        if is_entry(self.line()?.text) {
            self.sequence(indent, depth)
        } else {
            self.mapping(indent, depth)
        }
    }

    fn mapping(&mut self, indent: usize, depth: usize) -> Option<Value> {
        let mut map = Map::new();
        while let Some(line) = self.line() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || is_entry(line.text) {
                return None;
            }
            let (key, rest) = split_key(line.text)?;
            self.advance();
            let value = if rest.is_empty() {
                self.nested(indent, depth)?
            } else {
                let value = inline(rest, depth)?;
                self.ends_item(indent)?;
                value
            };
            if map.insert(key, value).is_some() {
                // A duplicate key: serde-saphyr refuses it, in its words.
                return None;
            }
        }
        Some(Value::Object(map))
    }

    /// The value of a key with nothing after it on its line: a more indented block, a sequence at the
    /// key's own indentation, or null.
    fn nested(&mut self, indent: usize, depth: usize) -> Option<Value> {
        match self.line() {
            Some(l) if l.indent > indent => self.block(l.indent, depth + 1),
            Some(l) if l.indent == indent && is_entry(l.text) => self.sequence(indent, depth + 1),
            _ => Some(Value::Null),
        }
    }

    fn sequence(&mut self, indent: usize, depth: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.line() {
            if line.indent < indent || (line.indent == indent && !is_entry(line.text)) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            // `-` alone (the item on the lines below) is left to the parser.
            let after = line.text.strip_prefix("- ")?;
            let item = after.trim_start_matches(' ');
            let column = indent + line.text.len() - item.len();
            if item.is_empty() || is_entry(item) {
                return None;
            }
            if split_key(item).is_some() {
                // A compact mapping: its first key on the entry's line, the others at that column.
                self.current = Some(Line {
                    indent: column,
                    text: item,
                });
                items.push(self.mapping(column, depth + 1)?);
            } else {
                self.advance();
                items.push(inline(item, depth)?);
                self.ends_item(indent)?;
            }
        }
        Some(Value::Array(items))
    }

    /// After a value written on its line: a more indented line would continue it (a plain scalar over
    /// lines) or be an error, either the parser's to read.
    fn ends_item(&self, indent: usize) -> Option<()> {
        match self.line() {
            Some(l) if l.indent > indent => None,
            _ => Some(()),
        }
    }
}

fn is_entry(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// A mapping entry's key and what follows `: ` on its line (empty for a value on the lines below).
fn split_key(text: &str) -> Option<(String, &str)> {
    let (key, after) = key_token(text)?;
    let after = after.strip_prefix(':')?;
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    let rest = after.trim_start_matches(' ');
    Some((key, if rest.starts_with('#') { "" } else { rest }))
}

/// A key at the start of `text`, quoted or plain (letters, digits and `._/-`, not led by `-`), and
/// what follows it.
fn key_token(text: &str) -> Option<(String, &str)> {
    let (raw, style, after) = match text.as_bytes().first()? {
        b'"' | b'\'' => quoted(text)?,
        _ => {
            let end = text
                .bytes()
                .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-')))
                .unwrap_or(text.len());
            if end == 0 || text.starts_with('-') {
                return None;
            }
            (Cow::Borrowed(&text[..end]), ScalarStyle::Plain, &text[end..])
        }
    };
    if text.len() - after.len() > MAX_KEY {
        return None;
    }
    Some((map_key(raw, style)?, after))
}

/// A value written on the rest of its line, in block context.
fn inline(text: &str, depth: usize) -> Option<Value> {
    match text.as_bytes()[0] {
        b'{' | b'[' => {
            let (value, rest) = flow(text, depth + 1)?;
            line_ends(rest).then_some(value)
        }
        b'"' | b'\'' => {
            let (s, style, rest) = quoted(text)?;
            if !line_ends(rest) {
                return None;
            }
            scalar(s, style)
        }
        _ => plain_block(text),
    }
}

/// Nothing but spaces, or a comment after at least one, is left on the line.
fn line_ends(rest: &str) -> bool {
    let t = rest.trim_start_matches(' ');
    t.is_empty() || (t.len() < rest.len() && t.starts_with('#'))
}

/// A plain scalar running to the end of its line (or to a comment).
fn plain_block(text: &str) -> Option<Value> {
    if !plain_start(text) {
        return None;
    }
    let text = text.find(" #").map_or(text, |end| &text[..end]).trim_end_matches(' ');
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b" ._/-+=~$^(),;:".contains(&b);
    if !text.bytes().all(allowed) || text.contains(": ") || text.ends_with(':') {
        return None;
    }
    scalar(Cow::Borrowed(text), ScalarStyle::Plain)
}

/// A plain scalar may start here: not an indicator (`-` only before a character of its own).
fn plain_start(text: &str) -> bool {
    let b = text.as_bytes();
    match b[0] {
        b'-' => b
            .get(1)
            .is_some_and(|c| !matches!(c, b' ' | b',' | b'[' | b']' | b'{' | b'}')),
        c => c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'/' | b'+' | b'=' | b'~' | b'$' | b'^' | b'('),
    }
}

/// A flow collection closed on this line, and what follows it.
fn flow(text: &str, depth: usize) -> Option<(Value, &str)> {
    if depth >= MAX_FAST_DEPTH {
        return None;
    }
    let mapping = text.starts_with('{');
    let close = if mapping { '}' } else { ']' };
    let mut rest = text[1..].trim_start_matches(' ');
    let mut map = Map::new();
    let mut items = Vec::new();
    if let Some(after) = rest.strip_prefix(close) {
        return Some((collection(mapping, map, items), after));
    }
    loop {
        let after = if mapping {
            let (key, after) = flow_key(rest)?;
            let (value, after) = flow_node(after.trim_start_matches(' '), depth)?;
            if map.insert(key, value).is_some() {
                return None;
            }
            after
        } else {
            let (value, after) = flow_node(rest, depth)?;
            items.push(value);
            after
        };
        rest = after.trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix(close) {
            return Some((collection(mapping, map, items), after));
        }
        rest = rest.strip_prefix(',')?.trim_start_matches(' ');
        // An empty entry or a trailing comma: the parser's to judge.
        if rest.is_empty() || rest.starts_with([',', close]) {
            return None;
        }
    }
}

fn collection(mapping: bool, map: Map<String, Value>, items: Vec<Value>) -> Value {
    if mapping {
        Value::Object(map)
    } else {
        Value::Array(items)
    }
}

/// A flow mapping's key and what follows its `: `.
fn flow_key(text: &str) -> Option<(String, &str)> {
    let (key, after) = key_token(text)?;
    Some((key, after.strip_prefix(": ")?))
}

/// A value inside a flow collection, and what follows it.
fn flow_node(text: &str, depth: usize) -> Option<(Value, &str)> {
    match text.as_bytes().first()? {
        b'{' | b'[' => flow(text, depth + 1),
        b'"' | b'\'' => {
            let (s, style, rest) = quoted(text)?;
            Some((scalar(s, style)?, rest))
        }
        _ => {
            if !plain_start(text) {
                return None;
            }
            let allowed = |b: u8| b.is_ascii_alphanumeric() || b" ._/-+=~$^();".contains(&b);
            let end = text.bytes().position(|b| !allowed(b))?;
            // Only a separator or the collection's end may stop it (`:` in a sequence would make a
            // pair, anything else a character this reader does not list).
            if !matches!(text.as_bytes()[end], b',' | b']' | b'}') {
                return None;
            }
            let value = text[..end].trim_end_matches(' ');
            Some((scalar(Cow::Borrowed(value), ScalarStyle::Plain)?, &text[end..]))
        }
    }
}

/// A quoted scalar closed on this line (double-quoted without escapes), its style, and what follows.
fn quoted(text: &str) -> Option<(Cow<'_, str>, ScalarStyle, &str)> {
    let body = &text[1..];
    if text.starts_with('"') {
        let end = body.find(['"', '\\'])?;
        if body.as_bytes()[end] == b'\\' {
            return None;
        }
        return Some((Cow::Borrowed(&body[..end]), ScalarStyle::DoubleQuoted, &body[end + 1..]));
    }
    // Single-quoted: `''` is one quote.
    let mut out: Option<String> = None;
    let mut from = 0;
    loop {
        let end = from + body[from..].find('\'')?;
        if body[end + 1..].starts_with('\'') {
            out.get_or_insert_with(String::new).push_str(&body[from..=end]);
            from = end + 2;
            continue;
        }
        let value = match out {
            Some(mut s) => {
                s.push_str(&body[from..end]);
                Cow::Owned(s)
            }
            None => Cow::Borrowed(&body[..end]),
        };
        return Some((value, ScalarStyle::SingleQuoted, &body[end + 1..]));
    }
}
