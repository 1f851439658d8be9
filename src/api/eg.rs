//! Envoy Gateway's `Backend` (`gateway.envoyproxy.io/v1alpha1`) as Envoy Gateway v1.9 defines it:
//! `Endpoints` (fqdn / ip / unix endpoints, optional `fallback`) or `DynamicResolver`, `appProtocols`,
//! and a `tls` block. Manifests written for Envoy Gateway load unchanged. Fields pier parses but does
//! not act on (`ecdhCurves`, `signatureAlgorithms`, `fingerprints`) are applied where Envoy has an
//! equivalent and otherwise reported in the Backend's status message, never silently dropped.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{LocalObjectReference, SecretObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[kube(
    group = "gateway.envoyproxy.io",
    version = "v1alpha1",
    kind = "Backend",
    root = "EgBackend",
    plural = "backends",
    namespaced,
    status = "EgBackendStatus",
    derive = "PartialEq"
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EgBackendSpec {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<EgBackendType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<EgEndpoint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocols: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<EgBackendTls>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum EgBackendType {
    Endpoints,
    DynamicResolver,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct EgEndpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<EgFqdnEndpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<EgIpEndpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix: Option<EgUnixEndpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EgFqdnEndpoint {
    pub hostname: String,
    pub port: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EgIpEndpoint {
    pub address: String,
    pub port: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EgUnixEndpoint {
    pub path: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EgBackendTls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate_refs: Option<Vec<LocalObjectReference>>,
    #[serde(default, rename = "wellKnownCACertificates", skip_serializing_if = "Option::is_none")]
    pub well_known_ca_certificates: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    #[serde(
        default,
        rename = "autoSNIFromEndpointHostname",
        skip_serializing_if = "Option::is_none"
    )]
    pub auto_sni_from_endpoint_hostname: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_ref: Option<SecretObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ciphers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecdh_curves: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_algorithms: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn_protocols: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprints: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
pub struct EgBackendStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

pub const APP_PROTOCOL_H2C: &str = "gateway.envoyproxy.io/h2c";
pub const APP_PROTOCOL_WS: &str = "gateway.envoyproxy.io/ws";
pub const APP_PROTOCOL_WSS: &str = "gateway.envoyproxy.io/wss";
