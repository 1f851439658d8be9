//! Every message type of the Envoy descriptor set as the JSON writer (`src/envoy/render/stream`) and
//! the fingerprint walk (`src/envoy/fingerprint.rs`) need it, built once: fields sorted by proto name, their wire types,
//! their presence, and nested types by index. Walking prost-reflect's descriptors per value clones a
//! reference-counted pool handle at every step; this table is plain data.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_reflect::{Cardinality, FieldDescriptor, Kind, MessageDescriptor};

use super::pool;
use super::stream::Json;

/// A scalar or nested type, as the wire carries it and JSON writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ty {
    Double,
    Float,
    Int64,
    Uint64,
    Int32,
    Fixed64,
    Fixed32,
    Bool,
    String,
    Bytes,
    Uint32,
    Sfixed32,
    Sfixed64,
    Sint32,
    Sint64,
    /// An enum, by index in [`Shapes::enums`].
    Enum(u32),
    /// A message, by index in [`Shapes::messages`].
    Message(u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Card {
    One,
    List,
    Map { key: Ty, value: Ty },
}

#[derive(Debug)]
pub(crate) struct FieldShape {
    pub name: Box<str>,
    pub number: u32,
    pub ty: Ty,
    pub card: Card,
    /// Whether a default value is still written (message fields, oneof members, proto3 `optional`).
    pub presence: bool,
    /// The oneof it belongs to, by index within its message.
    pub oneof: Option<u32>,
}

/// A message's fields sorted by proto name, as a JSON value's keys sort, and their positions by number.
#[derive(Debug)]
pub(crate) struct Fields {
    pub sorted: Box<[FieldShape]>,
    pub by_number: Box<[(u32, u16)]>,
}

impl Fields {
    /// The place in `sorted` of the field numbered `number`, if the type has it.
    pub fn position(&self, number: u32) -> Option<u16> {
        let i = self.by_number.binary_search_by_key(&number, |(n, _)| *n).ok()?;
        Some(self.by_number[i].1)
    }

    /// The field numbered `number`, if the type has it.
    pub fn by_number(&self, number: u32) -> Option<&FieldShape> {
        Some(&self.sorted[usize::from(self.position(number)?)])
    }
}

/// How the JSON writer writes a message type.
#[derive(Debug)]
pub(crate) enum Layout {
    /// Its fields.
    Fields,
    /// `google.protobuf.Any`: `@type`, then the payload.
    Any,
    /// `google.protobuf.Duration`: `"1.500s"`.
    Duration,
    /// `google.protobuf.Struct`, `Value` or `ListValue`: the JSON it holds.
    Json(Json),
    /// A wrapper of one value (`google.protobuf.UInt32Value`, …), written as the value. Not the
    /// floating-point ones: prost-reflect writes their infinities as `null`, unlike a plain field's.
    Wrapper(Ty),
    /// Written through prost-reflect's value: the other well-known types, and any message with a
    /// `bytes` field (JSON's base64 is left to the library that defines it).
    Value,
}

#[derive(Debug)]
pub(crate) struct MessageShape {
    pub desc: MessageDescriptor,
    pub fields: Fields,
    pub layout: Layout,
}

#[derive(Debug)]
pub(crate) struct EnumShape {
    /// `google.protobuf.NullValue`, written as `null`.
    pub null: bool,
    /// The name prost-reflect gives each number (the first declared, where aliases share one).
    pub names: HashMap<i32, Box<str>>,
}

#[derive(Debug)]
pub(crate) struct Shapes {
    pub messages: Vec<MessageShape>,
    pub enums: Vec<EnumShape>,
    by_name: HashMap<String, u32>,
}

impl Shapes {
    pub fn get() -> &'static Shapes {
        static SHAPES: OnceLock<Shapes> = OnceLock::new();
        SHAPES.get_or_init(Shapes::build)
    }

    pub fn message(&self, full_name: &str) -> Option<u32> {
        self.by_name.get(full_name).copied()
    }

    fn build() -> Shapes {
        let messages: Vec<MessageDescriptor> = pool().all_messages().collect();
        let by_name: HashMap<String, u32> = (0..)
            .zip(&messages)
            .map(|(i, m)| (m.full_name().to_string(), i))
            .collect();
        let enums: Vec<_> = pool().all_enums().collect();
        let enum_index: HashMap<String, u32> = (0..).zip(&enums).map(|(i, e)| (e.full_name().to_string(), i)).collect();
        let ty = |kind: &Kind| match kind {
            Kind::Double => Ty::Double,
            Kind::Float => Ty::Float,
            Kind::Int64 => Ty::Int64,
            Kind::Uint64 => Ty::Uint64,
            Kind::Int32 => Ty::Int32,
            Kind::Fixed64 => Ty::Fixed64,
            Kind::Fixed32 => Ty::Fixed32,
            Kind::Bool => Ty::Bool,
            Kind::String => Ty::String,
            Kind::Bytes => Ty::Bytes,
            Kind::Uint32 => Ty::Uint32,
            Kind::Sfixed32 => Ty::Sfixed32,
            Kind::Sfixed64 => Ty::Sfixed64,
            Kind::Sint32 => Ty::Sint32,
            Kind::Sint64 => Ty::Sint64,
            Kind::Enum(e) => Ty::Enum(enum_index[e.full_name()]),
            Kind::Message(m) => Ty::Message(by_name[m.full_name()]),
        };
        let shapes = messages
            .iter()
            .map(|desc| MessageShape {
                desc: desc.clone(),
                fields: fields(desc, &ty),
                layout: layout(desc),
            })
            .collect();
        let enums = enums
            .iter()
            .map(|e| EnumShape {
                null: e.full_name() == "google.protobuf.NullValue",
                names: e
                    .values()
                    .filter_map(|v| Some((v.number(), e.get_value(v.number())?.name().into())))
                    .collect(),
            })
            .collect();
        Shapes {
            messages: shapes,
            enums,
            by_name,
        }
    }
}

fn layout(desc: &MessageDescriptor) -> Layout {
    match desc.full_name() {
        "google.protobuf.Any" => return Layout::Any,
        "google.protobuf.Duration" => return Layout::Duration,
        "google.protobuf.Struct" => return Layout::Json(Json::Struct),
        "google.protobuf.Value" => return Layout::Json(Json::Value),
        "google.protobuf.ListValue" => return Layout::Json(Json::List),
        "google.protobuf.Int64Value" => return Layout::Wrapper(Ty::Int64),
        "google.protobuf.UInt64Value" => return Layout::Wrapper(Ty::Uint64),
        "google.protobuf.Int32Value" => return Layout::Wrapper(Ty::Int32),
        "google.protobuf.UInt32Value" => return Layout::Wrapper(Ty::Uint32),
        "google.protobuf.BoolValue" => return Layout::Wrapper(Ty::Bool),
        "google.protobuf.StringValue" => return Layout::Wrapper(Ty::String),
        name if is_well_known(name) => return Layout::Value,
        _ => {}
    }
    if desc.fields().any(|f| has_bytes(&f.kind())) {
        return Layout::Value;
    }
    Layout::Fields
}

fn fields(desc: &MessageDescriptor, ty: &impl Fn(&Kind) -> Ty) -> Fields {
    let mut sorted: Vec<FieldShape> = desc.fields().map(|f| field(&f, ty)).collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut by_number: Vec<(u32, u16)> = (0u16..).zip(&sorted).map(|(i, f)| (f.number, i)).collect();
    by_number.sort_unstable();
    Fields {
        sorted: sorted.into_boxed_slice(),
        by_number: by_number.into_boxed_slice(),
    }
}

fn field(f: &FieldDescriptor, ty: &impl Fn(&Kind) -> Ty) -> FieldShape {
    let kind = f.kind();
    let card = match &kind {
        Kind::Message(m) if f.is_map() => Card::Map {
            key: ty(&m.map_entry_key_field().kind()),
            value: ty(&m.map_entry_value_field().kind()),
        },
        _ if f.cardinality() == Cardinality::Repeated => Card::List,
        _ => Card::One,
    };
    FieldShape {
        name: f.name().into(),
        number: f.number(),
        ty: ty(&kind),
        card,
        presence: f.supports_presence(),
        oneof: f
            .containing_oneof()
            .and_then(|o| f.parent_message().oneofs().position(|each| each.name() == o.name()))
            .map(|i| i as u32),
    }
}

/// The types prost-reflect writes in their own JSON form (its `get_well_known_type_serializer`).
pub(crate) fn is_well_known(name: &str) -> bool {
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
