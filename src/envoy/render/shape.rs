//! Every message type of the Envoy descriptor set as the JSON writer (`src/envoy/render/stream`) and
//! the fingerprint walk (`src/envoy/fingerprint.rs`) need it, built once: fields sorted by proto name,
//! their wire types, their presence, and nested types by index. Walking prost-reflect's descriptors
//! per value clones a reference-counted pool handle at every step; this table is plain data, read off
//! the descriptor set itself (`src/envoy/render/descriptors/mod.rs`), so a process that only
//! fingerprints and writes resources never builds the pool.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto};

use super::descriptors::{self, Msg};
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
    /// Written through prost-reflect's value: the other well-known types (`Timestamp`, `FieldMask`, …).
    Value,
}

#[derive(Debug)]
pub(crate) struct MessageShape {
    /// The type's full name (`envoy.config.cluster.v3.Cluster`).
    pub name: Box<str>,
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

    /// The table, from the descriptor set read as plain protobuf (`src/envoy/render/descriptors/mod.rs`).
    fn build() -> Shapes {
        let set = descriptors::set();
        let (messages, enums) = descriptors::types(&set);
        let by_name: HashMap<String, u32> = (0..).zip(&messages).map(|(i, m)| (m.name.clone(), i)).collect();
        let enum_index: HashMap<&str, u32> = (0..).zip(&enums).map(|(i, e)| (e.name.as_str(), i)).collect();
        let types = Types {
            messages: &messages,
            by_name: &by_name,
            enums: &enum_index,
        };
        let shapes = messages
            .iter()
            .map(|m| MessageShape {
                name: m.name.as_str().into(),
                fields: types.fields(m),
                layout: known_layout(&m.name).unwrap_or(Layout::Fields),
            })
            .collect();
        let enums = enums
            .iter()
            .map(|e| EnumShape {
                null: e.name == "google.protobuf.NullValue",
                names: descriptors::enum_names(e.proto)
                    .into_iter()
                    .map(|(n, name)| (n, name.into()))
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

/// Type references of the descriptor set resolved to the table's indices.
struct Types<'t, 'a> {
    messages: &'t [Msg<'a>],
    by_name: &'t HashMap<String, u32>,
    enums: &'t HashMap<&'t str, u32>,
}

impl Types<'_, '_> {
    fn message(&self, f: &FieldDescriptorProto) -> &DescriptorProto {
        self.messages[self.by_name[descriptors::referenced(f.type_name())] as usize].proto
    }

    fn ty(&self, f: &FieldDescriptorProto) -> Ty {
        match f.r#type() {
            Type::Double => Ty::Double,
            Type::Float => Ty::Float,
            Type::Int64 => Ty::Int64,
            Type::Uint64 => Ty::Uint64,
            Type::Int32 => Ty::Int32,
            Type::Fixed64 => Ty::Fixed64,
            Type::Fixed32 => Ty::Fixed32,
            Type::Bool => Ty::Bool,
            Type::String => Ty::String,
            Type::Bytes => Ty::Bytes,
            Type::Uint32 => Ty::Uint32,
            Type::Sfixed32 => Ty::Sfixed32,
            Type::Sfixed64 => Ty::Sfixed64,
            Type::Sint32 => Ty::Sint32,
            Type::Sint64 => Ty::Sint64,
            Type::Enum => Ty::Enum(self.enums[descriptors::referenced(f.type_name())]),
            Type::Message | Type::Group => Ty::Message(self.by_name[descriptors::referenced(f.type_name())]),
        }
    }

    /// The map entry type `f` holds, if it is a map field.
    fn map_entry(&self, f: &FieldDescriptorProto) -> Option<&DescriptorProto> {
        if !matches!(f.r#type(), Type::Message) {
            return None;
        }
        let m = self.message(f);
        m.options.as_ref().is_some_and(|o| o.map_entry()).then_some(m)
    }

    fn fields(&self, m: &Msg<'_>) -> Fields {
        let mut sorted: Vec<FieldShape> = m.proto.field.iter().map(|f| self.field(f, m.proto3)).collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        let mut by_number: Vec<(u32, u16)> = (0u16..).zip(&sorted).map(|(i, f)| (f.number, i)).collect();
        by_number.sort_unstable();
        Fields {
            sorted: sorted.into_boxed_slice(),
            by_number: by_number.into_boxed_slice(),
        }
    }

    /// As prost-reflect reads a field: presence for proto3 `optional`, oneof members, and singular
    /// messages (in proto2 files, every singular field).
    fn field(&self, f: &FieldDescriptorProto, proto3: bool) -> FieldShape {
        let repeated = f.label() == Label::Repeated;
        let entry = self.map_entry(f).filter(|_| repeated);
        let card = match entry {
            Some(entry) => Card::Map {
                key: self.ty(entry_field(entry, 1)),
                value: self.ty(entry_field(entry, 2)),
            },
            None if repeated => Card::List,
            None => Card::One,
        };
        let message = matches!(f.r#type(), Type::Message | Type::Group);
        FieldShape {
            name: f.name().into(),
            number: u32::try_from(f.number()).expect("field numbers are positive"),
            ty: self.ty(f),
            card,
            presence: f.proto3_optional() || f.oneof_index.is_some() || (!repeated && (message || !proto3)),
            oneof: f.oneof_index.and_then(|i| u32::try_from(i).ok()),
        }
    }
}

/// Field `number` of a map entry (1 the key, 2 the value).
fn entry_field(entry: &DescriptorProto, number: i32) -> &FieldDescriptorProto {
    entry
        .field
        .iter()
        .find(|f| f.number() == number)
        .expect("a map entry has a key and a value")
}

/// The layout a type has by its name alone: the well-known types.
fn known_layout(name: &str) -> Option<Layout> {
    Some(match name {
        "google.protobuf.Any" => Layout::Any,
        "google.protobuf.Duration" => Layout::Duration,
        "google.protobuf.Struct" => Layout::Json(Json::Struct),
        "google.protobuf.Value" => Layout::Json(Json::Value),
        "google.protobuf.ListValue" => Layout::Json(Json::List),
        "google.protobuf.Int64Value" => Layout::Wrapper(Ty::Int64),
        "google.protobuf.UInt64Value" => Layout::Wrapper(Ty::Uint64),
        "google.protobuf.Int32Value" => Layout::Wrapper(Ty::Int32),
        "google.protobuf.UInt32Value" => Layout::Wrapper(Ty::Uint32),
        "google.protobuf.BoolValue" => Layout::Wrapper(Ty::Bool),
        "google.protobuf.StringValue" => Layout::Wrapper(Ty::String),
        name if is_well_known(name) => Layout::Value,
        _ => return None,
    })
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
