//! `XBackend` (`gateway.networking.x-k8s.io/v1alpha1`) as the Gateway API v1.7 line ships it, still
//! reading what v1.6.0 wrote (`spec.port.port`), and the GEP-4488 `Backend`
//! (`gateway.networking.k8s.io/v1alpha1`) which is the same spec under the standard group.
//!
//! `endpointSelector.matchLabels` (v1.7) selects Pods in the Backend's namespace; their IPs feed the
//! cluster. pier's `endpointSelector.selectorRef` names a Service in the Backend's namespace instead;
//! its EndpointSlices feed the cluster.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::validation::BackendTlsValidation;
use super::{ParentReference, SecretObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};

/// The GEP-4488 Backend spec (also the spec of the standard-group `Backend` of that shape).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[kube(
    group = "gateway.networking.x-k8s.io",
    version = "v1alpha1",
    kind = "XBackend",
    plural = "xbackends",
    namespaced,
    status = "BackendStatus",
    derive = "PartialEq"
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct XBackendSpec {
    #[serde(rename = "type")]
    pub type_: BackendType,
    pub port: BackendPort,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_hostname: Option<ExternalHostname>,
    // Boxed, as `tls`: a Backend has one or the other, and both inline made every spec the model keeps
    // 400 bytes larger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_selector: Option<Box<EndpointSelector>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<BackendProtocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Box<BackendTls>>,
    /// Session persistence for routes to this Backend (type `EndpointSelector` only; v1.7, #5298).
    /// Where upstream finally puts it is not settled in the sources pier was built from: top level (as
    /// here) or under `endpointSelector`; both are read, and a rule's own setting wins.
    // Boxed: rarely set, and it would double the size of every spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<Box<super::session::SessionPersistence>>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum BackendType {
    ExternalHostname,
    EndpointSelector,
}

/// `spec.port` in either shape: `{number}` (the v1.7 line) or `{port, name}` (v1.6.0, deprecated). Both
/// are one struct so one schema admits both (a CRD version cannot change a field's shape without a
/// conversion webhook); which one was written is judged by the translator (`gateway::backends::gep`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackendPort {
    /// v1.7: the destination port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<i32>,
    /// v1.6.0: the destination port (deprecated; write `number`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// v1.6.0 only: a port name, unused by pier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExternalHostname {
    pub hostname: String,
}

/// `spec.endpointSelector`: the v1.7 inline `matchLabels` (selects Pods), pier's `selectorRef` (a
/// Service's EndpointSlices), or the GEP text's nested `selector` (read as `matchLabels`). Exactly one.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EndpointSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector_ref: Option<SelectorRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Session persistence nested here, as #5298 proposed (see `XBackendSpec::session_persistence`).
    // Boxed: rarely set, and it would double the size of every spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<Box<super::session::SessionPersistence>>,
}

/// Reference to the object whose endpoints back this Backend. Only core `Service` is supported.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SelectorRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The v1.7 line's enum (`GRPC` and `WSS` are new there; pier accepts them in either shape).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum BackendProtocol {
    #[serde(rename = "TCP")]
    Tcp,
    #[serde(rename = "HTTP")]
    Http,
    #[serde(rename = "HTTP2")]
    Http2,
    #[serde(rename = "HTTP11")]
    Http11,
    #[serde(rename = "H2C")]
    H2c,
    #[serde(rename = "MCP")]
    Mcp,
    #[serde(rename = "GRPC")]
    Grpc,
    /// WebSocket over TLS.
    #[serde(rename = "WSS")]
    Wss,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackendTls {
    pub mode: BackendTlsMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_ref: Option<SecretObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<BackendTlsValidation>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum BackendTlsMode {
    None,
    ServerOnly,
    ClientAndServer,
}

/// `status.ancestors` (v1.7; pier writes it). `parents`, the v1.6.0 JSON name of the same list, is still
/// read, so objects written by older controllers load.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackendStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ancestors: Vec<BackendStatusAncestor>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<BackendStatusParent>,
}

/// One Gateway's entry in `status.ancestors` (at most 32).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackendStatusAncestor {
    pub controller_name: String,
    pub ancestor_ref: ParentReference,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackendStatusParent {
    pub controller_name: String,
    pub parent_ref: ParentReference,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
