//! Content versions without rendering: a 64-bit hash (xxh3) of a deterministic walk of a message.
//!
//! Envoy resources carry `map` fields, which prost holds in `HashMap`s, so their encoding is not
//! deterministic and cannot be hashed as bytes alone. The walk reads the encoding with the message
//! table of [`render`](super::render) (`src/envoy/render/shape.rs`: plain data, where prost-reflect's
//! descriptors clone a pool handle at every step): fields as prost wrote them (in a fixed order), map entries hashed
//! one by one and then in sorted order, and every `Any` payload (itself an encoding with maps) walked
//! as its own type. Equal messages hash equal in every process, so versions are the same across
//! restarts and replicas of one pier version; it costs a fraction of rendering canonical JSON, and
//! callers compute it only for resources that changed.

use xxhash_rust::xxh3::Xxh3;

use super::render::shape::{Card, Layout, Shapes, Ty};

/// The fingerprint of `m`.
pub fn of<M: prost::Message + prost::Name>(m: &M) -> u64 {
    of_bytes::<M>(&m.encode_to_vec())
}

/// The fingerprint of a message of type `M` from its encoding (saves encoding it again when the caller
/// has the bytes anyway).
pub fn of_bytes<M: prost::Name>(bytes: &[u8]) -> u64 {
    let index = Shapes::get()
        .message(&M::full_name())
        .unwrap_or_else(|| panic!("{} is in the Envoy descriptor set", M::full_name()));
    of_encoded(index, bytes)
}

/// The fingerprint of an encoded message of the type at `index` in the shapes table.
fn of_encoded(index: u32, bytes: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    if message(index, bytes, &mut h).is_none() {
        // Not a well-formed encoding (never for what pier builds): the bytes are all there is.
        h = Xxh3::new();
        h.update(bytes);
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

/// Walks the encoding itself, not a decoded copy: prost writes every field in a fixed order, so the
/// bytes are canonical except for map entries (hashed one by one, then in sorted order) and `Any`
/// payloads (walked as their own type). Decoding into a `DynamicMessage` first cost a quarter of
/// the engine's first build at 10,000 routes.
fn message(index: u32, mut bytes: &[u8], h: &mut Xxh3) -> Option<()> {
    let shape = &Shapes::get().messages[index as usize];
    if matches!(shape.layout, Layout::Any) {
        return any(bytes, h);
    }
    // Map fields' entry fingerprints, by field number, hashed after the other fields.
    let mut maps: Vec<(u32, u64)> = Vec::new();
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let (number, wire) = (u32::try_from(key >> 3).ok()?, key & 7);
        let raw = field_bytes(&mut bytes, wire)?;
        match (shape.fields.by_number(number), wire) {
            (Some(f), 2) if matches!(f.card, Card::Map { .. }) => {
                let Ty::Message(entry) = f.ty else { return None };
                let mut eh = Xxh3::new();
                message(entry, raw, &mut eh)?;
                maps.push((number, eh.digest()));
                continue;
            }
            (Some(f), 2) => {
                if let Ty::Message(sub) = f.ty {
                    h.update(&key.to_le_bytes());
                    message(sub, raw, h)?;
                    continue;
                }
            }
            _ => {}
        }
        h.update(&key.to_le_bytes());
        bytes_of(raw, h);
    }
    maps.sort_unstable();
    for (number, entry) in maps {
        h.update(&number.to_le_bytes());
        h.update(&entry.to_le_bytes());
    }
    h.update(&[0xff]);
    Some(())
}

/// An `Any`: its type URL, then its payload walked as its own type when pier knows it.
fn any(mut bytes: &[u8], h: &mut Xxh3) -> Option<()> {
    let (mut type_url, mut payload): (&[u8], &[u8]) = (&[], &[]);
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let raw = field_bytes(&mut bytes, key & 7)?;
        match key {
            0x0a => type_url = raw,
            0x12 => payload = raw,
            _ => {}
        }
    }
    bytes_of(type_url, h);
    let name = std::str::from_utf8(type_url)
        .ok()?
        .rsplit('/')
        .next()
        .unwrap_or_default();
    match Shapes::get().message(name) {
        Some(index) => h.update(&of_encoded(index, payload).to_le_bytes()),
        None => bytes_of(payload, h),
    }
    Some(())
}

/// One field's value as it is on the wire: a varint's bytes, a fixed width, or a length-delimited
/// body. Groups (wire types 3 and 4) are not in any message pier builds.
fn field_bytes<'a>(bytes: &mut &'a [u8], wire: u64) -> Option<&'a [u8]> {
    let len = match wire {
        0 => bytes.iter().position(|b| b & 0x80 == 0)? + 1,
        1 => 8,
        2 => usize::try_from(varint(bytes)?).ok()?,
        5 => 4,
        _ => return None,
    };
    let (value, rest) = (bytes.get(..len)?, bytes.get(len..)?);
    *bytes = rest;
    Some(value)
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    prost::encoding::decode_varint(bytes).ok()
}

fn bytes_of(b: &[u8], h: &mut Xxh3) {
    h.update(&(b.len() as u64).to_le_bytes());
    h.update(b);
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
    fn maps_inside_any_inside_maps_hash_the_same_in_any_order() {
        use crate::envoy::pb::cluster;
        let many: Vec<(String, String)> = (0..20).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let pack = |m: &core::Metadata| protobuf::Any {
            type_url: "type.googleapis.com/envoy.config.core.v3.Metadata".into(),
            value: prost::Message::encode_to_vec(m),
        };
        let cluster = |refs: &[(&str, &str)]| cluster::Cluster {
            name: "c".into(),
            metadata: Some(metadata(refs)),
            typed_extension_protocol_options: (0..8).map(|i| (format!("x{i}"), pack(&metadata(refs)))).collect(),
            ..Default::default()
        };
        let a = cluster(&refs);
        // Decoded and encoded again, every map is a new HashMap with its own order.
        let again: cluster::Cluster = prost::Message::decode(prost::Message::encode_to_vec(&a).as_slice()).unwrap();
        assert_eq!(of(&a), of(&again));
        let mut changed = refs.clone();
        changed[3].1 = "other";
        assert_ne!(of(&a), of(&cluster(&changed)));
    }

    #[test]
    fn list_order_and_field_identity_show() {
        let route = |names: &[&str]| crate::envoy::pb::route::RouteConfiguration {
            name: "r".into(),
            virtual_hosts: names
                .iter()
                .map(|n| crate::envoy::pb::route::VirtualHost {
                    name: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        assert_ne!(of(&route(&["a", "b"])), of(&route(&["b", "a"])));
        assert_ne!(of(&route(&["ab"])), of(&route(&["a", "b"])));
        assert_eq!(of(&route(&["a", "b"])), of(&route(&["a", "b"])));
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
