//! Canonical proto3 JSON written straight into any serializer, one field at a time.
//!
//! [`encoded_to_json`](super::encoded_to_json) builds a `serde_json::Value` per resource: a map per
//! message, a string per name, all sorted and then dropped. For `pier translate` at 5,000 routes that
//! was a third of the command. [`Encoded`] writes the same bytes without it: the message is still
//! decoded by prost-reflect, but its fields are written in the order the value would sort its keys
//! (by proto field name, computed once per message type), and each value is written with the very
//! serializer calls a `Value` makes when it is written (non-negative integers as `u64`, 64-bit
//! integers as strings, `null` as unit).
//!
//! What is not written here goes through the value, so it cannot differ: the well-known types other
//! than `Any` (durations, wrappers, `Struct`, …) and any message with a `bytes` field are rendered by
//! prost-reflect into a value, as before; floating-point numbers are converted by `serde_json`'s value
//! serializer, exactly as prost-reflect's value path converts them, with pier's whole-doubles rule. The
//! golden test `streamed` holds this writer byte-identical to the value on every case, in YAML and JSON.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, SerializeOptions, Value,
};
use serde::ser::{Error, Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{integral_doubles_as_integers, pool};

/// An encoded message of type `name` (a full name), written as canonical proto3 JSON.
pub struct Encoded<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
}

impl Encoded<'_> {
    /// The message decoded, ready to be written (a separate step, so it can run ahead on another
    /// thread while earlier messages are written).
    pub fn decode(&self) -> Result<Decoded, String> {
        let desc = pool()
            .get_message_by_name(self.name)
            .ok_or_else(|| format!("{} is not in the Envoy descriptor set", self.name))?;
        DynamicMessage::decode(desc, self.bytes)
            .map(Decoded)
            .map_err(|e| format!("{} does not match its own descriptor: {e}", self.name))
    }
}

impl Serialize for Encoded<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.decode().map_err(S::Error::custom)?.serialize(s)
    }
}

/// A decoded message, written as canonical proto3 JSON.
#[derive(Debug)]
pub struct Decoded(DynamicMessage);

impl Serialize for Decoded {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Message(&self.0).serialize(s)
    }
}

/// How a message type is written.
enum Layout {
    /// Its set fields, in this order (sorted by proto name, as a value's keys are).
    Fields(Box<[FieldDescriptor]>),
    /// `@type`, then the payload's fields.
    Any,
    /// Through a value: the other well-known types, and messages with `bytes` fields.
    Value,
}

/// Every message type's layout, computed once for the whole descriptor pool.
fn layout(desc: &MessageDescriptor) -> &'static Layout {
    static LAYOUTS: OnceLock<HashMap<String, Layout>> = OnceLock::new();
    let layouts = LAYOUTS.get_or_init(|| {
        pool()
            .all_messages()
            .map(|m| (m.full_name().to_string(), Layout::of(&m)))
            .collect()
    });
    layouts.get(desc.full_name()).unwrap_or(&Layout::Value)
}

impl Layout {
    fn of(desc: &MessageDescriptor) -> Layout {
        match desc.full_name() {
            "google.protobuf.Any" => return Layout::Any,
            name if is_well_known(name) => return Layout::Value,
            _ => {}
        }
        if desc.fields().any(|f| has_bytes(&f.kind())) {
            return Layout::Value;
        }
        let mut fields: Vec<FieldDescriptor> = desc.fields().collect();
        fields.sort_by(|a, b| a.name().cmp(b.name()));
        Layout::Fields(fields.into_boxed_slice())
    }
}

/// The types prost-reflect writes in their own JSON form (its `get_well_known_type_serializer`).
fn is_well_known(name: &str) -> bool {
    name.strip_prefix("google.protobuf.").is_some_and(|name| {
        matches!(
            name,
            "Any"
                | "Timestamp"
                | "Duration"
                | "Struct"
                | "FloatValue"
                | "DoubleValue"
                | "Int32Value"
                | "Int64Value"
                | "UInt32Value"
                | "UInt64Value"
                | "BoolValue"
                | "StringValue"
                | "BytesValue"
                | "FieldMask"
                | "ListValue"
                | "Value"
                | "Empty"
        )
    })
}

/// Whether a field holds bytes directly, or as a map's value (a message field is judged on its own).
fn has_bytes(kind: &Kind) -> bool {
    match kind {
        Kind::Bytes => true,
        Kind::Message(m) if m.is_map_entry() => has_bytes(&m.map_entry_value_field().kind()),
        _ => false,
    }
}

fn options() -> SerializeOptions {
    SerializeOptions::new().use_proto_field_name(true)
}

struct Message<'a>(&'a DynamicMessage);

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let message = self.0;
        match layout(&message.descriptor()) {
            Layout::Fields(fields) => {
                let set: Vec<&FieldDescriptor> = fields.iter().filter(|f| message.has_field(f)).collect();
                let mut map = s.serialize_map(Some(set.len()))?;
                fields_into(&mut map, message, &set)?;
                map.end()
            }
            Layout::Any => any(message, s),
            Layout::Value => through_value(message, s),
        }
    }
}

fn fields_into<M: SerializeMap>(
    map: &mut M,
    message: &DynamicMessage,
    set: &[&FieldDescriptor],
) -> Result<(), M::Error> {
    for field in set {
        let value = message.get_field(field);
        map.serialize_entry(field.name(), &Field(value.as_ref(), &field.kind()))?;
    }
    Ok(())
}

/// As prost-reflect writes an `Any`: `@type` (which sorts before any field name), then the payload's
/// fields, or `value` for a well-known payload.
fn any<S: Serializer>(message: &DynamicMessage, s: S) -> Result<S::Ok, S::Error> {
    let (Some(url), Some(bytes)) = (message.get_field_by_number(1), message.get_field_by_number(2)) else {
        return Err(S::Error::custom("an Any without its fields"));
    };
    let (Some(url), Some(bytes)) = (url.as_str(), bytes.as_bytes()) else {
        return Err(S::Error::custom("an Any whose fields are not a URL and bytes"));
    };
    let name = url
        .rsplit_once('/')
        .map(|(_, name)| name)
        .ok_or_else(|| S::Error::custom(format!("type URL {url:?} names no message")))?;
    let desc = pool()
        .get_message_by_name(name)
        .ok_or_else(|| S::Error::custom(format!("message '{name}' not found")))?;
    let payload = DynamicMessage::decode(desc, bytes.as_ref()).map_err(S::Error::custom)?;
    match layout(&payload.descriptor()) {
        Layout::Fields(fields) => {
            let set: Vec<&FieldDescriptor> = fields.iter().filter(|f| payload.has_field(f)).collect();
            let mut map = s.serialize_map(Some(set.len() + 1))?;
            map.serialize_entry("@type", url)?;
            fields_into(&mut map, &payload, &set)?;
            map.end()
        }
        _ if is_well_known(name) => {
            let mut map = s.serialize_map(Some(2))?;
            map.serialize_entry("@type", url)?;
            map.serialize_entry("value", &Message(&payload))?;
            map.end()
        }
        // A payload with bytes fields: its own value, with `@type` among its keys.
        _ => {
            let mut value = serde_json::to_value(WithOptions(message)).map_err(S::Error::custom)?;
            integral_doubles_as_integers(&mut value);
            value.serialize(s)
        }
    }
}

/// prost-reflect's own rendering as a value, with pier's whole-doubles rule, written as values are.
fn through_value<S: Serializer>(message: &DynamicMessage, s: S) -> Result<S::Ok, S::Error> {
    let mut value = serde_json::to_value(WithOptions(message)).map_err(S::Error::custom)?;
    integral_doubles_as_integers(&mut value);
    value.serialize(s)
}

struct WithOptions<'a>(&'a DynamicMessage);

impl Serialize for WithOptions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_with_options(s, &options())
    }
}

/// One field's value of kind `.1`.
struct Field<'a>(&'a Value, &'a Kind);

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::I32(n) => integer(s, i64::from(*n)),
            Value::U32(n) => s.serialize_u64(u64::from(*n)),
            Value::I64(n) => s.serialize_str(&n.to_string()),
            Value::U64(n) => s.serialize_str(&n.to_string()),
            Value::F32(f) if f.is_finite() => {
                float(s, serde::Serializer::serialize_f32(serde_json::value::Serializer, *f))
            }
            Value::F64(f) if f.is_finite() => {
                float(s, serde::Serializer::serialize_f64(serde_json::value::Serializer, *f))
            }
            Value::F32(f) => s.serialize_str(non_finite(f64::from(*f))),
            Value::F64(f) => s.serialize_str(non_finite(*f)),
            Value::String(text) => s.serialize_str(text),
            Value::Bytes(_) => Err(S::Error::custom("bytes are written through a value")),
            Value::EnumNumber(n) => enumeration(s, *n, self.1),
            Value::Message(m) => Message(m).serialize(s),
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Field(item, self.1))?;
                }
                seq.end()
            }
            Value::Map(entries) => map(s, entries, self.1),
        }
    }
}

/// As a value writes an integer: its sign decides `u64` or `i64`.
fn integer<S: Serializer>(s: S, n: i64) -> Result<S::Ok, S::Error> {
    match u64::try_from(n) {
        Ok(n) => s.serialize_u64(n),
        Err(_) => s.serialize_i64(n),
    }
}

fn float<S: Serializer>(s: S, value: Result<serde_json::Value, serde_json::Error>) -> Result<S::Ok, S::Error> {
    let mut value = value.map_err(S::Error::custom)?;
    integral_doubles_as_integers(&mut value);
    value.serialize(s)
}

fn non_finite(f: f64) -> &'static str {
    match f {
        f64::INFINITY => "Infinity",
        f64::NEG_INFINITY => "-Infinity",
        _ => "NaN",
    }
}

fn enumeration<S: Serializer>(s: S, n: i32, kind: &Kind) -> Result<S::Ok, S::Error> {
    let Kind::Enum(e) = kind else {
        return Err(S::Error::custom("an enum number in a field that is not an enum"));
    };
    if e.full_name() == "google.protobuf.NullValue" {
        return s.serialize_unit();
    }
    match e.get_value(n) {
        Some(v) => s.serialize_str(v.name()),
        None => integer(s, i64::from(n)),
    }
}

/// A map field: its keys as strings, sorted as a value's keys are.
fn map<S: Serializer>(s: S, entries: &HashMap<MapKey, Value>, kind: &Kind) -> Result<S::Ok, S::Error> {
    let Kind::Message(entry) = kind else {
        return Err(S::Error::custom("a map in a field that is not a map"));
    };
    let value_kind = entry.map_entry_value_field().kind();
    let mut sorted: Vec<(String, &Value)> = entries.iter().map(|(k, v)| (key(k), v)).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut map = s.serialize_map(Some(sorted.len()))?;
    for (k, v) in &sorted {
        map.serialize_entry(k, &Field(v, &value_kind))?;
    }
    map.end()
}

fn key(k: &MapKey) -> String {
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(text) => text.clone(),
    }
}
