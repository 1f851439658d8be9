//! Canonical proto3 JSON written straight into any serializer, one field at a time.
//!
//! [`encoded_to_json`](super::encoded_to_json) decodes a resource with prost-reflect and builds a
//! `serde_json::Value` of it: a map per message, a string per name, all sorted and then dropped. For
//! `pier translate` at 5,000 routes that was two fifths of the command. [`Encoded`] writes the same
//! bytes from the encoding itself: fields in the order the value would sort its keys (by proto field
//! name, from a table built once, `src/envoy/render/shape.rs`), read off the wire
//! (`src/envoy/render/stream/wire.rs`), and each value written with the very serializer calls a
//! `Value` makes when it is written (non-negative integers as `u64`, 64-bit integers as strings,
//! `null` as unit).
//!
//! What is not written here goes through prost-reflect's value, so it cannot differ: the well-known
//! types other than `Any`, `Duration`, `Struct`, `Value`, `ListValue` and the integer, boolean and
//! string wrappers (`Timestamp`, `FieldMask`, …), and any message encoded in a way prost never
//! writes (see `wire.rs`). Bytes are written here, as prost-reflect writes them (standard base64 with
//! padding), so a TLS context's `DataSource` does not make a process build prost-reflect's pool.
//! Floating-point numbers are converted by `serde_json`'s value serializer, exactly as on
//! prost-reflect's value path, with pier's whole-doubles rule. The golden test `streamed` holds this
//! writer byte-identical to the value on every case, in YAML and JSON, and
//! `src/envoy/render/stream/tests.rs` on random messages of every Envoy type.

mod json;
#[cfg(test)]
mod tests;
mod wire;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use serde::ser::{Error, Serialize, SerializeMap, SerializeSeq, Serializer};

use super::integral_doubles_as_integers;
use super::shape::{Card, Layout, Shapes, Ty, is_well_known};
pub(crate) use json::Json;
use wire::{Scalar, Set, Values, Wire};

/// An encoded message of type `name` (a full name), written as canonical proto3 JSON.
pub struct Encoded<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
}

impl Serialize for Encoded<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let index = Shapes::get()
            .message(self.name)
            .ok_or_else(|| S::Error::custom(format!("{} is not in the Envoy descriptor set", self.name)))?;
        Message(index, self.bytes).serialize(s)
    }
}

/// A message of the type at this index, encoded.
struct Message<'a>(u32, &'a [u8]);

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Message(index, bytes) = *self;
        let shape = &Shapes::get().messages[index as usize];
        match &shape.layout {
            Layout::Fields => match wire::fields(&shape.fields, bytes) {
                Some(set) => {
                    let mut map = s.serialize_map(Some(set.len()))?;
                    entries(&mut map, &set)?;
                    map.end()
                }
                None => through_value(index, bytes, s),
            },
            Layout::Any => any(index, bytes, s),
            Layout::Duration => match duration(bytes) {
                Some(text) => s.serialize_str(&text),
                None => through_value(index, bytes, s),
            },
            Layout::Json(json) => match json.decode(bytes) {
                Some(decoded) => decoded.serialize(s),
                None => through_value(index, bytes, s),
            },
            Layout::Wrapper(ty) => match wrapped(*ty, bytes) {
                Some(value) => One(value).serialize(s),
                None => through_value(index, bytes, s),
            },
            Layout::Value => through_value(index, bytes, s),
        }
    }
}

/// A duration's text as prost-reflect writes it (prost-types' `Display`), if in the range it accepts.
fn duration(bytes: &[u8]) -> Option<String> {
    const MAX_SECONDS: u64 = 315_576_000_000;
    const MAX_NANOS: u32 = 999_999_999;
    let [seconds, nanos] = wire::pair(bytes)?;
    let (Some(Scalar::I64(seconds)), Some(Scalar::I32(nanos))) = (typed(Ty::Int64, seconds), typed(Ty::Int32, nanos))
    else {
        return None;
    };
    let in_range = seconds.unsigned_abs() <= MAX_SECONDS && nanos.unsigned_abs() <= MAX_NANOS;
    in_range.then(|| prost_types::Duration { seconds, nanos }.to_string())
}

/// A wrapper's value (field 1), its type's default when absent.
fn wrapped(ty: Ty, bytes: &[u8]) -> Option<Scalar<'_>> {
    let [value, _] = wire::pair(bytes)?;
    typed(ty, value)
}

/// A field read as one value of `ty`, its type's default when absent; `None` if not written as `ty`.
fn typed(ty: Ty, wire: Option<Wire<'_>>) -> Option<Scalar<'_>> {
    match (wire, ty) {
        (Some(wire), ty) => wire::scalar(ty, wire),
        (None, Ty::String) => Some(Scalar::Str("")),
        (None, Ty::Bytes) => Some(Scalar::Bytes(&[])),
        (None, ty) => wire::scalar(ty, zero(ty)),
    }
}

fn entries<M: SerializeMap>(map: &mut M, set: &[Set<'_, '_>]) -> Result<(), M::Error> {
    for field in set {
        map.serialize_entry(&*field.field.name, &Field(field))?;
    }
    Ok(())
}

/// One set field's value: a scalar, a list or a map.
struct Field<'s, 'f, 'a>(&'s Set<'f, 'a>);

impl Serialize for Field<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (&self.0.values, self.0.field.card) {
            (Values::One(value), _) => One(*value).serialize(s),
            (Values::List(values), _) => {
                let mut seq = s.serialize_seq(Some(values.len()))?;
                for value in values {
                    seq.serialize_element(&One(*value))?;
                }
                seq.end()
            }
            (Values::Map(entries), card) => {
                let Card::Map { value: ty, .. } = card else {
                    return Err(S::Error::custom("map entries in a field that is not a map"));
                };
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, &MapValue(*value, ty))?;
                }
                map.end()
            }
        }
    }
}

/// A map's value; absent from its entry, the default of its type.
struct MapValue<'a>(Option<Scalar<'a>>, Ty);

impl Serialize for MapValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value = match (self.0, self.1) {
            (Some(value), _) => value,
            (None, Ty::Message(m)) => Scalar::Message(m, &[]),
            (None, ty) => typed(ty, None).ok_or_else(|| S::Error::custom("a map value without a default"))?,
        };
        One(value).serialize(s)
    }
}

fn zero(ty: Ty) -> Wire<'static> {
    match ty {
        Ty::Float | Ty::Fixed32 | Ty::Sfixed32 => Wire::Fixed32(0),
        Ty::Double | Ty::Fixed64 | Ty::Sfixed64 => Wire::Fixed64(0),
        _ => Wire::Varint(0),
    }
}

/// As prost-reflect writes an `Any`: `@type` (which sorts before any field name), then the payload's
/// fields, or `value` for a well-known payload. Anything else goes through its value.
fn any<S: Serializer>(index: u32, bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    let Some((url, payload)) = any_parts(bytes) else {
        return through_value(index, bytes, s);
    };
    let Some(name) = url.rsplit_once('/').map(|(_, name)| name) else {
        return through_value(index, bytes, s);
    };
    let shapes = Shapes::get();
    let Some(inner) = shapes.message(name) else {
        return through_value(index, bytes, s);
    };
    let inner_shape = &shapes.messages[inner as usize];
    match &inner_shape.layout {
        Layout::Fields => {
            let Some(set) = wire::fields(&inner_shape.fields, payload) else {
                return through_value(index, bytes, s);
            };
            let mut map = s.serialize_map(Some(set.len() + 1))?;
            map.serialize_entry("@type", url)?;
            entries(&mut map, &set)?;
            map.end()
        }
        _ if is_well_known(name) => {
            let mut map = s.serialize_map(Some(2))?;
            map.serialize_entry("@type", url)?;
            map.serialize_entry("value", &Message(inner, payload))?;
            map.end()
        }
        _ => through_value(index, bytes, s),
    }
}

/// An `Any`'s type URL and payload, each written at most once.
fn any_parts(bytes: &[u8]) -> Option<(&str, &[u8])> {
    match wire::pair(bytes)? {
        [Some(Wire::Len(url)), Some(Wire::Len(payload))] => Some((std::str::from_utf8(url).ok()?, payload)),
        [Some(Wire::Len(url)), None] => Some((std::str::from_utf8(url).ok()?, &[])),
        _ => None,
    }
}

/// One value of a field.
struct One<'a>(Scalar<'a>);

impl Serialize for One<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Scalar::Bool(b) => s.serialize_bool(b),
            Scalar::I32(n) => integer(s, i64::from(n)),
            Scalar::U32(n) => s.serialize_u64(u64::from(n)),
            Scalar::I64(n) => s.serialize_str(&n.to_string()),
            Scalar::U64(n) => s.serialize_str(&n.to_string()),
            Scalar::F32(f) if f.is_finite() => float(s, Serializer::serialize_f32(serde_json::value::Serializer, f)),
            Scalar::F64(f) if f.is_finite() => float(s, Serializer::serialize_f64(serde_json::value::Serializer, f)),
            Scalar::F32(f) => s.serialize_str(non_finite(f64::from(f))),
            Scalar::F64(f) => s.serialize_str(non_finite(f)),
            Scalar::Str(text) => s.serialize_str(text),
            Scalar::Bytes(bytes) => s.serialize_str(&BASE64_STANDARD.encode(bytes)),
            Scalar::Enum(e, n) => enumeration(s, e, n),
            Scalar::Message(m, bytes) => Message(m, bytes).serialize(s),
        }
    }
}

/// prost-reflect's own rendering as a value, with pier's whole-doubles rule, written as values are.
fn through_value<S: Serializer>(index: u32, bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    let desc = super::descriptor(&Shapes::get().messages[index as usize].name).map_err(S::Error::custom)?;
    super::decoded_to_json(desc, bytes)
        .map_err(S::Error::custom)?
        .serialize(s)
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

fn enumeration<S: Serializer>(s: S, e: u32, n: i32) -> Result<S::Ok, S::Error> {
    let shape = &Shapes::get().enums[e as usize];
    if shape.null {
        return s.serialize_unit();
    }
    match shape.names.get(&n) {
        Some(name) => s.serialize_str(name),
        None => integer(s, i64::from(n)),
    }
}
