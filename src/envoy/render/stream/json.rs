//! `google.protobuf.Struct`, `Value` and `ListValue`, written as the JSON they stand for, as
//! prost-reflect writes them (decoded as prost-types' messages, as it decodes them): a missing kind
//! and `null_value` as `null`, numbers as doubles (pier's whole-doubles rule applied), a non-finite
//! number refused, object keys sorted as a JSON value's are. pier puts one in every cluster's
//! metadata, so these were most of what still went through a value.

use prost::Message as _;
use prost_types::value::Kind;
use serde::ser::{Error, Serialize, SerializeMap, SerializeSeq, Serializer};

/// Which of the three an encoding is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Json {
    Struct,
    Value,
    List,
}

impl Json {
    /// `bytes` decoded; `None` if they do not decode, for the caller to let prost-reflect say why.
    pub fn decode(self, bytes: &[u8]) -> Option<Decoded> {
        Some(match self {
            Json::Struct => Decoded::Struct(prost_types::Struct::decode(bytes).ok()?),
            Json::Value => Decoded::Value(prost_types::Value::decode(bytes).ok()?),
            Json::List => Decoded::List(prost_types::ListValue::decode(bytes).ok()?),
        })
    }
}

pub(crate) enum Decoded {
    Struct(prost_types::Struct),
    Value(prost_types::Value),
    List(prost_types::ListValue),
}

impl Serialize for Decoded {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Decoded::Struct(object) => Object(object).serialize(s),
            Decoded::Value(value) => One(value).serialize(s),
            Decoded::List(list) => List(list).serialize(s),
        }
    }
}

struct Object<'a>(&'a prost_types::Struct);

impl Serialize for Object<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut fields: Vec<(&String, &prost_types::Value)> = self.0.fields.iter().collect();
        fields.sort_by(|a, b| a.0.cmp(b.0));
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            map.serialize_entry(key, &One(value))?;
        }
        map.end()
    }
}

struct List<'a>(&'a prost_types::ListValue);

impl Serialize for List<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.values.len()))?;
        for value in &self.0.values {
            seq.serialize_element(&One(value))?;
        }
        seq.end()
    }
}

struct One<'a>(&'a prost_types::Value);

impl Serialize for One<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.kind {
            None | Some(Kind::NullValue(_)) => s.serialize_unit(),
            Some(Kind::BoolValue(b)) => s.serialize_bool(*b),
            Some(Kind::NumberValue(n)) if n.is_finite() => {
                super::float(s, Serializer::serialize_f64(serde_json::value::Serializer, *n))
            }
            Some(Kind::NumberValue(_)) => Err(S::Error::custom(
                "cannot serialize non-finite double in google.protobuf.Value",
            )),
            Some(Kind::StringValue(text)) => s.serialize_str(text),
            Some(Kind::ListValue(list)) => List(list).serialize(s),
            Some(Kind::StructValue(object)) => Object(object).serialize(s),
        }
    }
}
