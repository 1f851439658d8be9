//! The writer against prost-reflect's value, on random messages of every Envoy type in the descriptor
//! set: every field kind, lists, maps, oneofs, nested `Any`s, unknown enum numbers, odd floats and
//! strings, and encodings prost never writes (two encodings of one type concatenated: singular fields
//! repeated, lists and maps merged).

use prost::Message as _;
use prost_reflect::{DynamicMessage, Kind, MapKey, MessageDescriptor, Value};

use super::super::pool;
use super::Encoded;

/// splitmix64: a seeded, reproducible stream without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
}

const STRINGS: &[&str] = &[
    "",
    "a",
    "with space",
    "ünï",
    "quote\"d",
    "line\nbreak",
    "123",
    "1.5",
    "true",
    "null",
    "- x",
    "k: v",
    "#c",
];

fn value(kind: &Kind, rng: &mut Rng, depth: usize) -> Value {
    match kind {
        Kind::Double => Value::F64(rng.pick(&[0.0, -0.0, 1.0, 0.5, -2.0, 8443.0, 0.1, 1e300, f64::NAN, f64::INFINITY])),
        Kind::Float => Value::F32(rng.pick(&[0.0, 1.0, 0.1, -3.0, 1e30, f32::NEG_INFINITY])),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(rng.pick(&[0, -1, 1, 42, i32::MIN, i32::MAX])),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(rng.pick(&[0, -1, 7, i64::MIN, i64::MAX, 1 << 53])),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(rng.pick(&[0, 1, 80, u32::MAX])),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(rng.pick(&[0, 1, u64::MAX])),
        Kind::Bool => Value::Bool(rng.below(2) == 0),
        Kind::String => Value::String(rng.pick(STRINGS).to_string()),
        Kind::Bytes => Value::Bytes(rng.pick(STRINGS).as_bytes().to_vec().into()),
        Kind::Enum(e) => {
            let numbers: Vec<i32> = e.values().map(|v| v.number()).collect();
            Value::EnumNumber(if rng.below(8) == 0 { 999 } else { rng.pick(&numbers) })
        }
        Kind::Message(m) => Value::Message(message(m, rng, depth.saturating_sub(1))),
    }
}

fn message(desc: &MessageDescriptor, rng: &mut Rng, depth: usize) -> DynamicMessage {
    let mut m = DynamicMessage::new(desc.clone());
    if desc.full_name() == "google.protobuf.Any" {
        return any(desc, rng, depth);
    }
    if let Some(m) = well_known(desc, rng) {
        return m;
    }
    if depth == 0 {
        return m;
    }
    for f in desc.fields() {
        if rng.below(3) == 0 {
            continue;
        }
        let kind = f.kind();
        let v = if f.is_map() {
            let Kind::Message(entry) = &kind else {
                unreachable!("a map is a message")
            };
            let (k, v) = (entry.map_entry_key_field().kind(), entry.map_entry_value_field().kind());
            let entries = (0..rng.below(4))
                .filter_map(|_| Some((map_key(value(&k, rng, depth))?, value(&v, rng, depth))))
                .collect();
            Value::Map(entries)
        } else if f.is_list() {
            Value::List((0..rng.below(4)).map(|_| value(&kind, rng, depth)).collect())
        } else {
            value(&kind, rng, depth)
        };
        m.set_field(&f, v);
    }
    m
}

/// A valid instance of a well-known type whose JSON form has rules (a random one would mostly be
/// refused by both writers, and compare nothing).
fn well_known(desc: &MessageDescriptor, rng: &mut Rng) -> Option<DynamicMessage> {
    let mut m = DynamicMessage::new(desc.clone());
    let string = |rng: &mut Rng| Value::String(rng.pick(STRINGS).to_string());
    match desc.full_name() {
        "google.protobuf.Duration" | "google.protobuf.Timestamp" => {
            // Now and then out of range, which both writers refuse.
            let seconds = if rng.below(20) == 0 {
                400_000_000_000
            } else {
                rng.pick(&[0, 1, -5, 3600, 1_700_000_000])
            };
            m.set_field_by_name("seconds", Value::I64(seconds));
            m.set_field_by_name("nanos", Value::I32(rng.pick(&[0, 500_000_000, 1_000, 7, -20])));
        }
        "google.protobuf.Value" => match rng.below(5) {
            0 => m.set_field_by_name("null_value", Value::EnumNumber(0)),
            1 => m.set_field_by_name("number_value", Value::F64(rng.pick(&[0.0, 8443.0, 0.25, -1.0]))),
            2 => m.set_field_by_name("string_value", string(rng)),
            3 => m.set_field_by_name("bool_value", Value::Bool(true)),
            _ => m.set_field_by_name("list_value", Value::Message(well_known(&list_value(), rng)?)),
        },
        "google.protobuf.Struct" => {
            let field = desc.get_field_by_name("fields")?;
            let Kind::Message(entry) = field.kind() else {
                return None;
            };
            let Kind::Message(value) = entry.map_entry_value_field().kind() else {
                return None;
            };
            let entries = (0..rng.below(3))
                .filter_map(|_| {
                    Some((
                        MapKey::String(rng.pick(STRINGS).into()),
                        Value::Message(well_known(&value, rng)?),
                    ))
                })
                .collect();
            m.set_field(&field, Value::Map(entries));
        }
        "google.protobuf.ListValue" => {
            let numbers = (0..rng.below(3)).map(|i| {
                let mut v = DynamicMessage::new(desc.parent_pool().get_message_by_name("google.protobuf.Value")?);
                v.set_field_by_name("number_value", Value::F64(f64::from(i as u8)));
                Some(Value::Message(v))
            });
            m.set_field_by_name("values", Value::List(numbers.collect::<Option<_>>()?));
        }
        "google.protobuf.FieldMask" => m.set_field_by_name("paths", Value::List(vec![Value::String("a_b.c".into())])),
        _ => return None,
    }
    Some(m)
}

fn list_value() -> MessageDescriptor {
    pool().get_message_by_name("google.protobuf.ListValue").expect("known")
}

fn map_key(v: Value) -> Option<MapKey> {
    Some(match v {
        Value::Bool(b) => MapKey::Bool(b),
        Value::I32(n) => MapKey::I32(n),
        Value::I64(n) => MapKey::I64(n),
        Value::U32(n) => MapKey::U32(n),
        Value::U64(n) => MapKey::U64(n),
        Value::String(s) => MapKey::String(s),
        _ => return None,
    })
}

/// An `Any` of a random Envoy type, or now and then one no reader can resolve.
fn any(desc: &MessageDescriptor, rng: &mut Rng, depth: usize) -> DynamicMessage {
    let types = envoy_types();
    let inner = &types[rng.below(types.len())];
    let (url, payload) = match rng.below(30) {
        0 => ("no-slash".to_string(), Vec::new()),
        1 => ("type.googleapis.com/no.such.Type".to_string(), Vec::new()),
        2 => ("type.googleapis.com/google.protobuf.Duration".to_string(), vec![8, 5]),
        _ => (
            format!("type.googleapis.com/{}", inner.full_name()),
            message(inner, rng, depth.saturating_sub(1)).encode_to_vec(),
        ),
    };
    let mut m = DynamicMessage::new(desc.clone());
    m.set_field_by_number(1, Value::String(url));
    m.set_field_by_number(2, Value::Bytes(payload.into()));
    m
}

fn envoy_types() -> Vec<MessageDescriptor> {
    pool()
        .all_messages()
        .filter(|m| m.full_name().starts_with("envoy.") && !m.is_map_entry())
        .collect()
}

/// The reference: the message decoded by prost-reflect and written through its value.
fn reference(name: &str, bytes: &[u8]) -> Option<serde_json::Value> {
    super::super::decoded_to_json(pool().get_message_by_name(name)?, bytes).ok()
}

/// `bytes` of type `name` written by [`Encoded`] equal the reference in JSON and YAML, or both fail;
/// true if they compared output.
fn check(name: &str, bytes: &[u8]) -> bool {
    let encoded = Encoded { name, bytes };
    let json = serde_json::to_string_pretty(&encoded).ok();
    let mut yaml = Vec::new();
    let yaml = crate::model::yaml::to_yaml_writer(&mut yaml, &encoded)
        .ok()
        .map(|()| yaml);
    let Some(value) = reference(name, bytes) else {
        assert!(json.is_none(), "{name}: the reference fails, the writer gave {json:?}");
        return false;
    };
    assert_eq!(
        json.as_deref(),
        Some(serde_json::to_string_pretty(&value).expect("json").as_str()),
        "{name}"
    );
    let expected = crate::model::yaml::to_yaml(&value).expect("yaml");
    assert_eq!(
        yaml.map(|y| String::from_utf8(y).expect("utf-8")).as_deref(),
        Some(expected.as_str()),
        "{name}"
    );
    true
}

/// Most cases must compare output, not both fail: else the test would assert little.
fn mostly_compared(results: &[bool]) {
    let compared = results.iter().filter(|c| **c).count();
    assert!(
        compared * 10 >= results.len() * 9,
        "{compared} of {} compared output",
        results.len()
    );
}

#[test]
fn random_messages_of_every_envoy_type_equal_the_value() {
    let mut rng = Rng(0x5EED);
    let mut results = Vec::new();
    for desc in envoy_types() {
        for _ in 0..4 {
            let bytes = message(&desc, &mut rng, 4).encode_to_vec();
            results.push(check(desc.full_name(), &bytes));
        }
    }
    mostly_compared(&results);
}

#[test]
fn encodings_prost_never_writes_equal_the_value() {
    let mut rng = Rng(0xC0FFEE);
    let mut results = Vec::new();
    for desc in envoy_types() {
        let mut bytes = message(&desc, &mut rng, 3).encode_to_vec();
        bytes.extend(message(&desc, &mut rng, 3).encode_to_vec());
        results.push(check(desc.full_name(), &bytes));
    }
    mostly_compared(&results);
}

#[test]
fn malformed_bytes_fail_as_the_value_does() {
    const CLUSTER: &str = "envoy.config.cluster.v3.Cluster";
    // A name five bytes long with one byte there; a group; a key with no value.
    for bytes in [&[0x0a, 0x05, b'a'][..], &[0x0b, 0x0c], &[0x08]] {
        assert!(reference(CLUSTER, bytes).is_none());
        assert!(!check(CLUSTER, bytes));
    }
}

#[test]
fn json_in_protobuf_equals_the_value() {
    use prost_types::value::Kind as K;
    let value = |kind| prost_types::Value { kind: Some(kind) };
    let nested = prost_types::Struct {
        fields: [
            ("z".to_string(), value(K::NumberValue(8443.0))),
            ("a".to_string(), value(K::NullValue(0))),
            ("m".to_string(), prost_types::Value { kind: None }),
        ]
        .into(),
    };
    let object = prost_types::Struct {
        fields: [
            ("b".to_string(), value(K::StructValue(nested))),
            ("a".to_string(), value(K::StringValue("x: y".into()))),
            (
                "c".to_string(),
                value(K::ListValue(prost_types::ListValue {
                    values: vec![value(K::BoolValue(true)), value(K::NumberValue(0.25))],
                })),
            ),
        ]
        .into(),
    };
    assert!(check("google.protobuf.Struct", &object.encode_to_vec()));
    let infinite = value(K::NumberValue(f64::INFINITY));
    assert!(
        !check("google.protobuf.Value", &infinite.encode_to_vec()),
        "refused by both"
    );
    let list = prost_types::ListValue { values: vec![infinite] };
    assert!(
        !check("google.protobuf.ListValue", &list.encode_to_vec()),
        "refused by both"
    );
}
