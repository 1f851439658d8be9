//! The message table read off the raw descriptor set against prost-reflect's pool of the same set:
//! every message and enum, and every field's name, number, type, cardinality, presence and oneof.

use prost_reflect::{Cardinality, FieldDescriptor, Kind};

use super::super::pool;
use super::super::shape::{Card, Shapes, Ty};

/// The type `ty` names, as the pool spells it.
fn named(ty: Ty) -> String {
    let shapes = Shapes::get();
    match ty {
        Ty::Message(i) => shapes.messages[i as usize].name.to_string(),
        other => format!("{other:?}"),
    }
}

fn expected_ty(kind: &Kind) -> String {
    match kind {
        Kind::Message(m) => m.full_name().to_string(),
        Kind::Enum(_) => "Enum".to_string(),
        Kind::Double => "Double".into(),
        Kind::Float => "Float".into(),
        Kind::Int64 => "Int64".into(),
        Kind::Uint64 => "Uint64".into(),
        Kind::Int32 => "Int32".into(),
        Kind::Fixed64 => "Fixed64".into(),
        Kind::Fixed32 => "Fixed32".into(),
        Kind::Bool => "Bool".into(),
        Kind::String => "String".into(),
        Kind::Bytes => "Bytes".into(),
        Kind::Uint32 => "Uint32".into(),
        Kind::Sfixed32 => "Sfixed32".into(),
        Kind::Sfixed64 => "Sfixed64".into(),
        Kind::Sint32 => "Sint32".into(),
        Kind::Sint64 => "Sint64".into(),
    }
}

fn actual_ty(ty: Ty) -> String {
    match ty {
        Ty::Enum(_) => "Enum".to_string(),
        other => named(other),
    }
}

fn expected_card(f: &FieldDescriptor) -> String {
    match f.kind() {
        Kind::Message(m) if f.is_map() => format!(
            "map {} {}",
            expected_ty(&m.map_entry_key_field().kind()),
            expected_ty(&m.map_entry_value_field().kind())
        ),
        _ if f.cardinality() == Cardinality::Repeated => "list".into(),
        _ => "one".into(),
    }
}

fn actual_card(card: Card) -> String {
    match card {
        Card::Map { key, value } => format!("map {} {}", actual_ty(key), actual_ty(value)),
        Card::List => "list".into(),
        Card::One => "one".into(),
    }
}

#[test]
fn the_table_read_off_the_raw_set_is_the_pools() {
    let shapes = Shapes::get();
    let pool = pool();
    assert_eq!(
        shapes.messages.len(),
        pool.all_messages().len(),
        "every message type, once"
    );
    assert_eq!(shapes.enums.len(), pool.all_enums().len(), "every enum type, once");
    let mut fields = 0;
    for desc in pool.all_messages() {
        let index = shapes
            .message(desc.full_name())
            .unwrap_or_else(|| panic!("{} in the table", desc.full_name()));
        let shape = &shapes.messages[index as usize];
        assert_eq!(&*shape.name, desc.full_name());
        assert_eq!(
            shape.fields.sorted.len(),
            desc.fields().len(),
            "{}: field count",
            desc.full_name()
        );
        for f in desc.fields() {
            let at = || format!("{}.{}", desc.full_name(), f.name());
            let got = shape
                .fields
                .by_number(f.number())
                .unwrap_or_else(|| panic!("{}: by number", at()));
            assert_eq!(&*got.name, f.name(), "{}", at());
            assert_eq!(actual_ty(got.ty), expected_ty(&f.kind()), "{}: type", at());
            assert_eq!(actual_card(got.card), expected_card(&f), "{}: cardinality", at());
            assert_eq!(got.presence, f.supports_presence(), "{}: presence", at());
            let oneof = f
                .containing_oneof()
                .and_then(|o| desc.oneofs().position(|each| each.name() == o.name()))
                .map(|i| u32::try_from(i).expect("few oneofs"));
            assert_eq!(got.oneof, oneof, "{}: oneof", at());
            fields += 1;
        }
    }
    assert!(fields > 2_000, "the set's fields were all compared ({fields})");
    // Every enum a field has: its names as prost-reflect gives them.
    let mut checked = 0;
    for desc in pool.all_messages() {
        let shape = &shapes.messages[shapes.message(desc.full_name()).expect("above") as usize];
        for f in desc.fields() {
            let (Kind::Enum(e), Some(Ty::Enum(index))) = (f.kind(), shape.fields.by_number(f.number()).map(|g| g.ty))
            else {
                continue;
            };
            let names = &shapes.enums[index as usize].names;
            for v in e.values() {
                let name = e.get_value(v.number()).expect("its own number").name().to_string();
                assert_eq!(
                    names.get(&v.number()).map(ToString::to_string),
                    Some(name),
                    "{}",
                    e.full_name()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "enum fields compared ({checked})");
}
