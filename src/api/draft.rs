//! The earlier draft `Backend` shape ("Backend Resource for Egress and Service Decoration"): a
//! `spec.destination` of `type: FQDN | Service` with `ports`, `fqdn.{hostname,tls,protocol}`,
//! `kubernetesService`, and backend-level `extensions`. The translator normalises it into the same IR
//! as the GEP-4488 shape and marks the object deprecated.
//!
//! `extensions[].config` is free-form in the draft; pier parses the two extension types it implements
//! (`pier.dev/connection-pool`, `pier.dev/outlier-detection`) strictly at translation time, so a
//! mistake there becomes a status condition naming the field rather than a load error.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::SecretObjectReference;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DraftBackendSpec {
    pub destination: Destination,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<Extension>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Destination {
    #[serde(rename = "type")]
    pub type_: DestinationType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<DraftPort>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<Fqdn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_service: Option<ServiceBackend>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum DestinationType {
    #[serde(rename = "FQDN")]
    Fqdn,
    Service,
}

/// A destination port. `protocol` is the draft's per-port protocol (`HTTP`, `HTTPS`, `HTTP2`, `H2C`,
/// `TCP`, `MCP`); `HTTPS` means TLS to the upstream.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DraftPort {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub port: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Fqdn {
    pub hostname: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<DraftTls>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<DraftProtocol>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DraftTls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificates: Option<Vec<TlsCertificateRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<TlsCertificateRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsCertificateRef {
    pub secret_ref: SecretObjectReference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DraftProtocol {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<BTreeMap<String, String>>,
}

/// `kubernetesService`: a Service in the Backend's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServiceBackend {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Extension {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// `pier.dev/connection-pool`: Envoy circuit-breaker thresholds for the destination.
#[derive(Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConnectionPoolConfig {
    pub max_connections: Option<u32>,
    pub max_pending_requests: Option<u32>,
    pub max_requests: Option<u32>,
    pub max_retries: Option<u32>,
}

/// `pier.dev/outlier-detection`: Envoy passive health checking. Durations are Gateway API durations
/// (`10s`, `500ms`, `1m`).
#[derive(Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutlierDetectionConfig {
    #[serde(rename = "consecutive5xx")]
    pub consecutive_5xx: Option<u32>,
    pub interval: Option<String>,
    pub base_ejection_time: Option<String>,
    pub max_ejection_percent: Option<u32>,
}

pub const EXT_CONNECTION_POOL: &str = "pier.dev/connection-pool";
pub const EXT_OUTLIER_DETECTION: &str = "pier.dev/outlier-detection";
