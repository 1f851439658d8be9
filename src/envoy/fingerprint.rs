//! Content versions without rendering: a 64-bit hash (xxh3) of a deterministic walk of a message.
//!
//! Envoy resources carry `map` fields, which prost holds in `HashMap`s, so their encoding is not
//! deterministic and cannot be hashed as bytes. The walk visits fields in number order, lists in order
//! and map entries sorted by key, and looks inside every `Any` (whose payload is itself an encoding with
//! maps), using the descriptor pool of [`render`](super::render). Equal messages hash equal in every
//! process, so versions are the same across restarts and replicas; it costs a fraction of rendering
//! canonical JSON, and callers compute it only for resources that changed.

use prost_reflect::{DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value};
use xxhash_rust::xxh3::Xxh3;

use super::render::pool;

/// The fingerprint of `m`.
pub fn of<M: prost::Message + prost::Name>(m: &M) -> u64 {
    of_bytes::<M>(&m.encode_to_vec())
}

/// The fingerprint of a message of type `M` from its encoding (saves encoding it again when the caller
/// has the bytes anyway).
pub fn of_bytes<M: prost::Name>(bytes: &[u8]) -> u64 {
    let desc = pool()
        .get_message_by_name(&M::full_name())
        .unwrap_or_else(|| panic!("{} is in the descriptor pool", M::full_name()));
    of_encoded(&desc, bytes)
}

/// The fingerprint of an encoded message of type `desc`.
pub fn of_encoded(desc: &MessageDescriptor, bytes: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    match DynamicMessage::decode(desc.clone(), bytes) {
        Ok(m) => message(&m, &mut h),
        // Not decodable (never for what pier builds): the bytes are all there is.
        Err(_) => h.update(bytes),
    }
    h.digest()
}

/// A version string from fingerprints: 16 hex digits.
pub fn version(fingerprint: u64) -> String {
    format!("{fingerprint:016x}")
}

/// One fingerprint from several, in order.
pub fn combine(parts: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = Xxh3::new();
    for p in parts {
        h.update(&p.to_le_bytes());
    }
    h.digest()
}

fn message(m: &DynamicMessage, h: &mut Xxh3) {
    if m.descriptor().full_name() == "google.protobuf.Any" {
        return any(m, h);
    }
    for (field, value) in m.fields() {
        h.update(&field.number().to_le_bytes());
        self::value(value, h);
    }
    h.update(&[0xff]);
}

/// An `Any`: its type URL, then its payload decoded and walked like any message.
fn any(m: &DynamicMessage, h: &mut Xxh3) {
    let text = |name: &str| m.get_field_by_name(name).and_then(|v| v.as_str().map(str::to_string));
    let type_url = text("type_url").unwrap_or_default();
    let payload = m
        .get_field_by_name("value")
        .and_then(|v| v.as_bytes().cloned())
        .unwrap_or_default();
    bytes(type_url.as_bytes(), h);
    let name = type_url.rsplit('/').next().unwrap_or_default();
    match pool().get_message_by_name(name) {
        Some(desc) => h.update(&of_encoded(&desc, &payload).to_le_bytes()),
        None => bytes(&payload, h),
    }
}

fn bytes(b: &[u8], h: &mut Xxh3) {
    h.update(&(b.len() as u64).to_le_bytes());
    h.update(b);
}

fn value(v: &Value, h: &mut Xxh3) {
    match v {
        Value::Bool(b) => h.update(&[1, u8::from(*b)]),
        Value::I32(x) => h.update(&i64::from(*x).to_le_bytes()),
        Value::I64(x) => h.update(&x.to_le_bytes()),
        Value::U32(x) => h.update(&u64::from(*x).to_le_bytes()),
        Value::U64(x) => h.update(&x.to_le_bytes()),
        Value::F32(x) => h.update(&f64::from(*x).to_bits().to_le_bytes()),
        Value::F64(x) => h.update(&x.to_bits().to_le_bytes()),
        Value::String(s) => bytes(s.as_bytes(), h),
        Value::Bytes(b) => bytes(b, h),
        Value::EnumNumber(n) => h.update(&i64::from(*n).to_le_bytes()),
        Value::Message(m) => message(m, h),
        Value::List(items) => {
            h.update(&(items.len() as u64).to_le_bytes());
            for i in items {
                value(i, h);
            }
        }
        Value::Map(map) => {
            let mut entries: Vec<(&MapKey, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            h.update(&(entries.len() as u64).to_le_bytes());
            for (k, v) in entries {
                key(k, h);
                value(v, h);
            }
        }
    }
}

fn key(k: &MapKey, h: &mut Xxh3) {
    match k {
        MapKey::Bool(b) => h.update(&[u8::from(*b)]),
        MapKey::I32(x) => h.update(&i64::from(*x).to_le_bytes()),
        MapKey::I64(x) => h.update(&x.to_le_bytes()),
        MapKey::U32(x) => h.update(&u64::from(*x).to_le_bytes()),
        MapKey::U64(x) => h.update(&x.to_le_bytes()),
        MapKey::String(s) => bytes(s.as_bytes(), h),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::envoy::pb::{core, protobuf};

    fn metadata(fields: &[(&str, &str)]) -> core::Metadata {
        let fields: HashMap<String, protobuf::Value> = fields
            .iter()
            .map(|(k, v)| {
                let v = protobuf::Value {
                    kind: Some(protobuf::value::Kind::StringValue(v.to_string())),
                };
                (k.to_string(), v)
            })
            .collect();
        core::Metadata {
            filter_metadata: HashMap::from([("pier.dev".to_string(), protobuf::Struct { fields })]),
            ..Default::default()
        }
    }

    #[test]
    fn maps_hash_the_same_in_any_order_and_content_changes_show() {
        let many: Vec<(String, String)> = (0..50).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut reversed = refs.clone();
        reversed.reverse();
        // Two HashMaps built in different orders iterate differently; the fingerprint must not care.
        assert_eq!(of(&metadata(&refs)), of(&metadata(&reversed)));
        let mut changed = refs.clone();
        changed[7].1 = "other";
        assert_ne!(of(&metadata(&refs)), of(&metadata(&changed)));
        assert_eq!(version(of(&metadata(&refs))).len(), 16);
    }

    #[test]
    fn any_payloads_are_walked() {
        let pack = |m: &core::Metadata| protobuf::Any {
            type_url: "type.googleapis.com/envoy.config.core.v3.Metadata".into(),
            value: prost::Message::encode_to_vec(m),
        };
        let a = pack(&metadata(&[("a", "1"), ("b", "2"), ("c", "3")]));
        let b = pack(&metadata(&[("c", "3"), ("b", "2"), ("a", "1")]));
        assert_eq!(of(&a), of(&b));
        assert_ne!(of(&a), of(&pack(&metadata(&[("a", "1")]))));
    }
}
