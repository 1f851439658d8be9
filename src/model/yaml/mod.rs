//! The one parser every entry point uses (directory source, golden tests, e2e, `pier translate`): text of
//! multi-document YAML or JSON in, typed [`Object`]s out, each tagged with where it came from.
//!
//! Owns: splitting a file into documents (`split`), YAML→JSON with budgets (`read`: `subset` reads
//! the commonest documents line by line, `fast` the common ones from parser events, each passing on
//! what it cannot read exactly as serde-saphyr does, and serde-saphyr reads the rest), writing YAML
//! back (`emit`), `kind: List` expansion, dispatch on (apiVersion, kind) and the per-kind
//! normalisation kubectl or the API server would apply (`kinds`), and error messages that name file,
//! document, object and field. It does no I/O and does not build the [`Model`](super::Model) —
//! duplicates are [`insert`](super::insert)'s business.
//!
//! Every document goes through a `serde_json::Value` before it is typed: YAML-isms (merge keys, integer
//! map keys) are normalised once, JSON and YAML inputs take the same path, and `serde_path_to_error` can
//! report field paths uniformly. Unsupported kinds are warnings, not errors, so a directory holding a
//! whole application's manifests still loads.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::Object;
pub use read::{MAX_DEPTH, ParseOptions};

/// The size limit of one text, and the budget of what its documents may expand to, unless the operator
/// sets another (`--max-file-bytes`). Kubernetes objects are at most ~1.5 MiB (etcd's limit), and a
/// manifest file is kilobytes: 8 MiB holds several maximal objects or a `kubectl get -o yaml` List of
/// thousands, while a file parsed into values costs tens of times its size in memory.
pub const DEFAULT_MAX_BYTES: usize = 8 << 20;

mod btls;
mod btls_v1alpha2;
mod emit;
pub use emit::RootMap;
mod fast;
mod kinds;
mod read;
mod split;
mod subset;
#[cfg(test)]
mod tests;

/// Where a document came from: a display name (usually a file path) and its 0-based index in that file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocRef {
    /// Shared by every document of a file and every map that says where an object came from (the
    /// directory cache keeps each object's origin twice).
    pub source: Arc<str>,
    pub index: usize,
}

impl DocRef {
    pub fn new(source: impl Into<Arc<str>>, index: usize) -> Self {
        Self {
            source: source.into(),
            index,
        }
    }
}

impl fmt::Display for DocRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} document {}", self.source, self.index)
    }
}

/// Something skipped on purpose (an unsupported kind, a file the reader will not open); loading goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub source: String,
    /// The document, unless the warning is about the whole file.
    pub index: Option<usize>,
    pub message: String,
}

impl Warning {
    pub fn document(doc: &DocRef, message: String) -> Self {
        Self {
            source: doc.source.to_string(),
            index: Some(doc.index),
            message,
        }
    }

    pub fn file(source: impl Into<String>, message: String) -> Self {
        Self {
            source: source.into(),
            index: None,
            message,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(index) => write!(f, "{} document {index}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

/// Everything one text yielded, in document order.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub objects: Vec<(DocRef, Object)>,
    pub warnings: Vec<Warning>,
}

/// The position of a failing object, as precise as the parser got before failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub doc: DocRef,
    /// Index in the `items` of a `kind: List` document.
    pub item: Option<usize>,
    /// `Kind namespace/name` once the kind and metadata were readable.
    pub object: Option<String>,
}

impl Location {
    fn new(doc: &DocRef, item: Option<usize>) -> Self {
        Self {
            doc: doc.clone(),
            item,
            object: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.doc.source, self.doc.index)?;
        if let Some(item) = self.item {
            write!(f, " items[{item}]")?;
        }
        if let Some(object) = &self.object {
            write!(f, " ({object})")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text is not well-formed YAML/JSON; `message` carries the line and column.
    #[error("{file}: document {index}: {message}")]
    Syntax {
        file: String,
        index: usize,
        message: String,
    },
    /// The document as a whole is unusable (not a mapping, no apiVersion/kind/name).
    #[error("{at}: {message}")]
    Document { at: Location, message: String },
    /// One field is wrong; `path` is like `spec.tls.mode` or `spec.ports[0].port`.
    #[error("{at}: {path}: {message}")]
    Field {
        at: Location,
        path: String,
        message: String,
    },
}

impl ParseError {
    /// The document the error is in.
    pub fn doc(&self) -> DocRef {
        match self {
            ParseError::Syntax { file, index, .. } => DocRef::new(file.clone(), *index),
            ParseError::Document { at, .. } | ParseError::Field { at, .. } => at.doc.clone(),
        }
    }
}

/// Parses every document of `text`. `source` names the text in errors and in each [`DocRef`].
pub fn parse(source: &str, text: &str) -> Result<Parsed, ParseError> {
    parse_with(source, text, ParseOptions::default())
}

/// [`parse`] with a file's limits and syntax.
pub fn parse_with(source: &str, text: &str, opts: ParseOptions) -> Result<Parsed, ParseError> {
    let mut parsed = Parsed::default();
    let shared: Arc<str> = source.into();
    for (index, value) in read::documents(source, text, opts)?.into_iter().enumerate() {
        let Some(value) = value else { continue };
        let doc = DocRef::new(shared.clone(), index);
        if is_list(&value) {
            parse_list(&doc, value, &mut parsed)?;
        } else if let Some(object) = parse_object(&doc, None, value, &mut parsed.warnings)? {
            parsed.objects.push((doc, object));
        }
    }
    Ok(parsed)
}

/// Decodes one object that arrives already as JSON (a watch event from the API server): the same
/// dispatch, normalisation and field-path errors as [`parse`], with `source` naming the object's origin.
/// `Ok(None)` for a kind pier does not read.
pub fn decode_value(source: &str, value: Value) -> Result<Option<Object>, ParseError> {
    let mut warnings = Vec::new();
    parse_object(&DocRef::new(source, 0), None, value, &mut warnings)
}

/// The documents of a YAML (or JSON) stream as JSON values, `None` for an empty one: the same parser,
/// budgets and errors as [`parse`], for callers that edit manifests rather than read objects.
pub fn values(source: &str, text: &str) -> Result<Vec<Option<Value>>, ParseError> {
    read::documents(source, text, ParseOptions::default())
}

/// `value` as YAML, the one way pier writes it (`pier translate -o yaml`, `pier crds`, goldens): block
/// collections, long strings kept on one line (folding them would make diffs of resource names noisy).
pub fn to_yaml<T: serde::Serialize>(value: &T) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string_with_options(value, yaml_options())
}

/// [`to_yaml`] written out as it is serialized, for a document too large to hold twice: the same bytes,
/// laid out by pier's own emitter (`emit`), which leaves to serde-saphyr every scalar whose style it
/// does not know for certain.
pub fn to_yaml_writer<W: std::io::Write, T: serde::Serialize>(
    out: &mut W,
    value: &T,
) -> Result<(), serde_saphyr::SerializeError> {
    value.serialize(&mut emit::Emitter::new(out))
}

fn yaml_options() -> serde_saphyr::SerializerOptions {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    options
}

/// kubectl's `-o yaml` of several objects: `kind: List` with `items`. The apiVersion is not checked
/// because nothing in it changes how the items are read.
fn is_list(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("List") && value.get("apiVersion").is_some()
}

fn parse_list(doc: &DocRef, mut value: Value, parsed: &mut Parsed) -> Result<(), ParseError> {
    let items = match value.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items,
        Some(Value::Null) | None => Vec::new(),
        Some(other) => {
            return Err(ParseError::Field {
                at: Location::new(doc, None),
                path: "items".into(),
                message: format!("expected a list, found {}", type_name(&other)),
            });
        }
    };
    for (item, value) in items.into_iter().enumerate() {
        if let Some(object) = parse_object(doc, Some(item), value, &mut parsed.warnings)? {
            parsed.objects.push((doc.clone(), object));
        }
    }
    Ok(())
}

fn parse_object(
    doc: &DocRef,
    item: Option<usize>,
    value: Value,
    warnings: &mut Vec<Warning>,
) -> Result<Option<Object>, ParseError> {
    let mut at = Location::new(doc, item);
    if !value.is_object() {
        let message = format!("expected a mapping (an object), found {}", type_name(&value));
        return Err(ParseError::Document { at, message });
    }
    let api_version = required_str(&value, "apiVersion", &at)?;
    let kind = required_str(&value, "kind", &at)?;
    let Some(known) = kinds::Kind::of(&api_version, &kind) else {
        let prefix = item.map(|i| format!("items[{i}]: ")).unwrap_or_default();
        let message = format!("{prefix}skipping unsupported kind {kind:?} (apiVersion {api_version:?})");
        warnings.push(Warning::document(doc, message));
        return Ok(None);
    };
    known.decode(value, &mut at).map(Some)
}

fn required_str(value: &Value, field: &str, at: &Location) -> Result<String, ParseError> {
    match value.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        None | Some(Value::Null) => Err(ParseError::Document {
            at: at.clone(),
            message: format!("missing {field}"),
        }),
        Some(other) => Err(ParseError::Field {
            at: at.clone(),
            path: field.into(),
            message: format!("expected a non-empty string, found {}", type_name(other)),
        }),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
