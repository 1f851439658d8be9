//! Canonical proto3 JSON for Envoy messages, the shape Envoy's own `/config_dump` prints: proto field
//! names (`connect_timeout`), enums by name, `Any` inlined with `@type`, default values omitted. Goldens,
//! the admin config dump and the validation bootstrap all go through here.
//!
//! envoy-types has no serde support, so messages are re-read through prost-reflect with the descriptor
//! set `build.rs` compiles from envoy-types' own `.proto` files. Output is a `serde_json::Value`, whose
//! object keys are sorted: that also makes proto `map` fields (Rust `HashMap`s) deterministic.
//!
//! [`stream`] writes the same JSON straight into a serializer from the encoding, without a value (the
//! `pier translate` document), from the message table in `src/envoy/render/shape.rs`, which the
//! fingerprint walk also reads; the value here is its reference in tests.

use std::sync::OnceLock;

use envoy_types::pb::google::protobuf::Any;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};
use serde_json::Value;

use super::Resources;

mod descriptors;
pub(crate) mod shape;
pub mod stream;

static DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/envoy_descriptors.bin"));

/// Replaces private-key material in admin output.
pub const REDACTED: &str = "[redacted]";

/// The Envoy descriptor pool, decoded once, on first use: only what renders through prost-reflect
/// needs it (the message table does not: `src/envoy/render/descriptors/mod.rs`).
pub fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTORS).expect("build.rs wrote a valid descriptor set"))
}

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("message type {0} is not in the Envoy descriptor set (add its .proto to build.rs ROOTS)")]
    UnknownMessage(String),
    #[error("JSON does not match {message}: {source}")]
    Json { message: String, source: serde_json::Error },
    #[error("converting {message}: {source}")]
    Decode {
        message: String,
        source: prost::DecodeError,
    },
}

fn descriptor(full_name: &str) -> Result<MessageDescriptor, JsonError> {
    pool()
        .get_message_by_name(full_name)
        .ok_or_else(|| JsonError::UnknownMessage(full_name.to_string()))
}

/// Canonical proto3 JSON of `msg`.
///
/// # Panics
/// If `M` is missing from the descriptor set: a build mistake (`build.rs` ROOTS), not an input problem,
/// caught by any test that renders the type.
pub fn to_json<M: prost::Message + prost::Name>(msg: &M) -> Value {
    encoded_to_json(&M::full_name(), &msg.encode_to_vec())
}

/// Canonical proto3 JSON of a packed message, straight from its bytes (what the engine serves).
///
/// # Panics
/// As [`to_json`], for a type URL outside the descriptor set or bytes that are not its message: only
/// ever pier's own packing.
pub fn any_to_json(any: &Any) -> Value {
    encoded_to_json(any.type_url.rsplit('/').next().unwrap_or_default(), &any.value)
}

/// Canonical proto3 JSON of an encoded message of type `name` (a full name).
///
/// # Panics
/// As [`to_json`].
pub fn encoded_to_json(name: &str, bytes: &[u8]) -> Value {
    let desc = descriptor(name).unwrap_or_else(|e| panic!("{e}"));
    decoded_to_json(desc, bytes).unwrap_or_else(|e| panic!("{e}"))
}

/// [`encoded_to_json`] for a type already looked up, with its failures as errors: bytes that are not
/// a `desc`, or a value proto3 JSON cannot hold (an unresolvable `Any`, a duration out of range).
fn decoded_to_json(desc: MessageDescriptor, bytes: &[u8]) -> Result<Value, String> {
    let name = desc.full_name().to_string();
    let dynamic =
        DynamicMessage::decode(desc, bytes).map_err(|e| format!("{name} does not match its own descriptor: {e}"))?;
    let mut json = dynamic
        .serialize_with_options(
            serde_json::value::Serializer,
            &SerializeOptions::new().use_proto_field_name(true),
        )
        .map_err(|e| format!("{name} cannot be rendered as JSON: {e}"))?;
    integral_doubles_as_integers(&mut json);
    Ok(json)
}

/// `google.protobuf.Value` numbers are doubles, which serde_json prints as `8443.0`; Envoy (protobuf C++)
/// prints `8443`. Whole doubles that are exact as integers are printed the same way here.
fn integral_doubles_as_integers(v: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer up to here is exact in f64.
    match v {
        Value::Number(n) => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT)
            {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_doubles_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_doubles_as_integers),
        _ => {}
    }
}

/// The reverse of [`to_json`]: accepts proto3 JSON (proto or camelCase field names, `Any` with `@type`).
pub fn from_json<M: prost::Message + prost::Name + Default>(json: &Value) -> Result<M, JsonError> {
    let message = M::full_name();
    let dynamic = DynamicMessage::deserialize(descriptor(&message)?, json).map_err(|source| JsonError::Json {
        message: message.clone(),
        source,
    })?;
    dynamic
        .transcode_to::<M>()
        .map_err(|source| JsonError::Decode { message, source })
}

/// `{clusters, endpoints, listeners, routes, secrets}`, each an array in `Resources` order.
pub fn resources_to_json(res: &Resources) -> Value {
    fn all<M: prost::Message + prost::Name>(msgs: &[M]) -> Value {
        Value::Array(msgs.iter().map(to_json).collect())
    }
    serde_json::json!({
        "clusters": all(&res.clusters),
        "endpoints": all(&res.endpoints),
        "listeners": all(&res.listeners),
        "routes": all(&res.routes),
        "secrets": all(&res.secrets),
    })
}

/// Replaces the inline content of every `private_key` data source with [`REDACTED`], wherever it sits
/// (for `/debug/config_dump`; goldens keep the keys, which are test fixtures).
pub fn redact_private_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("private_key", Value::Object(source)) => {
                        for (kind, content) in source.iter_mut() {
                            if kind.starts_with("inline_") {
                                *content = Value::String(REDACTED.to_string());
                            }
                        }
                    }
                    (_, value) => redact_private_keys(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_private_keys),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::pb::{cluster, core, tls};
    use super::*;
    use serde_json::json;

    fn tls_cluster() -> cluster::Cluster {
        cluster::Cluster {
            name: "xbackend/default/api/443".into(),
            cluster_discovery_type: Some(cluster::cluster::ClusterDiscoveryType::Type(
                cluster::cluster::DiscoveryType::StrictDns as i32,
            )),
            connect_timeout: Some(super::super::duration_ms(1500)),
            transport_socket: Some(core::TransportSocket {
                name: "envoy.transport_sockets.tls".into(),
                config_type: Some(core::transport_socket::ConfigType::TypedConfig(
                    envoy_types::util::pack_any(tls::UpstreamTlsContext {
                        sni: "api.example.com".into(),
                        ..Default::default()
                    }),
                )),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn renders_canonical_proto3_json() {
        assert_eq!(
            to_json(&tls_cluster()),
            json!({
                "name": "xbackend/default/api/443",
                "type": "STRICT_DNS",
                "connect_timeout": "1.500s",
                "transport_socket": {
                    "name": "envoy.transport_sockets.tls",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                        "sni": "api.example.com",
                    },
                },
            })
        );
    }

    #[test]
    fn whole_doubles_print_as_integers() {
        use super::super::pb::protobuf;
        let number = |n: f64| protobuf::Value {
            kind: Some(protobuf::value::Kind::NumberValue(n)),
        };
        let list = protobuf::ListValue {
            values: vec![number(8443.0), number(0.5), number(-2.0)],
        };
        assert_eq!(to_json(&list).to_string(), "[8443,0.5,-2]");
    }

    #[test]
    fn json_round_trips() {
        let c = tls_cluster();
        assert_eq!(from_json::<cluster::Cluster>(&to_json(&c)).unwrap(), c);
        let err = from_json::<cluster::Cluster>(&json!({"no_such_field": 1})).unwrap_err();
        assert!(err.to_string().contains("envoy.config.cluster.v3.Cluster"), "{err}");
    }

    #[test]
    fn redacts_inline_private_keys_only() {
        let mut v = json!({"secrets": [{"tls_certificate": {
            "certificate_chain": {"inline_string": "CERT"},
            "private_key": {"inline_string": "KEY"},
        }}, {"tls_certificate": {"private_key": {"filename": "/k.pem"}}}]});
        redact_private_keys(&mut v);
        assert_eq!(
            v["secrets"][0]["tls_certificate"]["private_key"]["inline_string"],
            REDACTED
        );
        assert_eq!(
            v["secrets"][0]["tls_certificate"]["certificate_chain"]["inline_string"],
            "CERT"
        );
        assert_eq!(v["secrets"][1]["tls_certificate"]["private_key"]["filename"], "/k.pem");
    }
}
