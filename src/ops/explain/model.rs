//! The explanation `pier explain` prints: a tree from a Gateway's listeners through route entries and
//! backendRefs to clusters and their upstream TLS, plus every status condition met on the way. It is
//! what `-o json` prints as is, and what the text renderer walks; nothing in it is computed at render
//! time, so the two outputs cannot disagree.
//!
//! Secrets appear by SDS name and a short description (how many certificates), never by content.

use serde::Serialize;

/// The whole answer for one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub subject: SubjectView,
    /// Conditions on the way that say something is wrong.
    pub problems: usize,
    /// Conditions that say something works but should change (a deprecated shape, a stale DNS answer).
    pub warnings: usize,
    /// One entry per Gateway the object is involved with, by name.
    pub gateways: Vec<GatewayPath>,
    /// Every object's conditions on the way, sorted by kind, namespace, name.
    pub conditions: Vec<ObjectConditions>,
    /// What else the operator should know (pier's own errors, limits of what could be told).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The object explained, as pier's status names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubjectView {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub namespace: String,
    pub name: String,
}

/// What one Gateway's proxies do for the object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayPath {
    /// `namespace/name`.
    pub gateway: String,
    pub listeners: Vec<ListenerPath>,
    /// Every cluster the entries above reach (aggregate members included), by name.
    pub clusters: Vec<ClusterView>,
    /// What proxyless gRPC clients of the Gateway are served of the object (`docs/proxyless-grpc.md`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proxyless: Vec<ProxylessTarget>,
}

/// One `xds:///HOST:PORT` target: its listener (and route configuration) name, and the entries that
/// concern the object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProxylessTarget {
    pub target: String,
    pub listener: String,
    pub entries: Vec<ProxylessEntry>,
}

/// One route entry as a gRPC client runs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProxylessEntry {
    pub name: String,
    pub matches: String,
    pub action: String,
}

/// One Gateway listener (a `sectionName`) and the route entries it serves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListenerPath {
    pub name: String,
    /// `HTTP` or `HTTPS`; absent when no Envoy listener carries it (the listener is not programmed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envoy_listener: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_config: Option<String>,
    /// Hostnames the listener answers for (its virtual hosts' domains; `*` for any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// HTTPS: the SDS names of the certificates the filter chain presents.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<String>,
    /// HTTPS: how client certificates are checked, if they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_validation: Option<String>,
    /// From the Gateway's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attached_routes: Option<i64>,
    /// Its `Programmed` condition, from the Gateway's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub programmed: Option<bool>,
    pub routes: Vec<RoutePath>,
}

/// One route's entries on one listener.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutePath {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub rules: Vec<RulePath>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RulePath {
    /// The rule's index in the route's `spec.rules`.
    pub index: usize,
    pub entries: Vec<Entry>,
}

/// One Envoy route entry (a rule's match on one virtual host).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub name: String,
    pub virtual_host: String,
    /// 1-based position in the virtual host: Envoy takes the first entry that matches.
    pub position: usize,
    pub of: usize,
    /// Each part of the match, for people (`path prefix /api`, `header x-tenant = a`).
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    pub action: Action,
    /// Other per-entry behaviour (header changes, CORS, ...), by Envoy field name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Forwarded to clusters.
    Forward {
        backends: Vec<BackendRef>,
        /// Route timeout, retries, rewrites, mirrors, for people.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        details: Vec<String>,
    },
    Redirect {
        details: Vec<String>,
    },
    /// Answered by the proxy itself; for a rule whose backendRefs are all invalid, a 500.
    DirectResponse {
        status: u64,
    },
    /// An action this explainer does not know (shown as Envoy's JSON).
    Other {
        json: String,
    },
}

/// A weighted share of an entry's traffic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendRef {
    pub cluster: String,
    /// Absent when the entry sends everything to one cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
    /// The object the cluster was built from; absent for an invalid backendRef.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<Origin>,
    /// The share answers 500: its backendRef did not resolve (the route's ResolvedRefs says why).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub invalid: bool,
}

/// The object (and port) a cluster was built from: its `pier.dev` metadata.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Origin {
    /// `Service`, `XBackend`, `Backend` (gateway.networking.k8s.io) or `Backend.gateway.envoyproxy.io`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub port: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterView {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    pub discovery: Discovery,
    /// How Envoy speaks HTTP to the upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub circuit_breakers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outlier_detection: Option<String>,
    /// Absent: plaintext.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsView>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum Discovery {
    /// Envoy resolves the names itself.
    #[serde(rename = "STRICT_DNS")]
    StrictDns {
        targets: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        settings: Vec<String>,
    },
    /// pier sends the endpoints (a ClusterLoadAssignment named `service_name`).
    #[serde(rename = "EDS")]
    Eds {
        service_name: String,
        /// Absent when no ClusterLoadAssignment of that name is served.
        #[serde(skip_serializing_if = "Option::is_none")]
        endpoints: Option<Vec<String>>,
    },
    /// Fails over across member clusters, in order.
    #[serde(rename = "AGGREGATE")]
    Aggregate { clusters: Vec<String> },
    /// Connects wherever the request's authority says.
    #[serde(rename = "DYNAMIC_FORWARD_PROXY")]
    DynamicForwardProxy {
        #[serde(skip_serializing_if = "Option::is_none")]
        dns_cache: Option<String>,
    },
    /// Named by the route but not among the Gateway's clusters.
    #[serde(rename = "MISSING")]
    Missing,
    #[serde(rename = "OTHER")]
    Other { description: String },
}

/// The upstream TLS a cluster's transport socket asks for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsView {
    /// The SNI sent, or where it comes from.
    pub sni: String,
    /// How the upstream certificate is verified: a CA bundle (SDS name and what it holds), or not at all.
    pub trust: String,
    /// What the certificate's SANs must match; empty with no verification.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub san_checks: Vec<String>,
    /// SDS name (and what it holds) of the client certificate presented, for mutual TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    /// e.g. `TLSv1_2..TLSv1_3`; absent: Envoy's defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alpn: Vec<String>,
    /// Cipher suites, curves, signature algorithms when set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<String>,
}

/// The conditions of one object, or of one of its parents (a Gateway) or listeners.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectConditions {
    pub kind: String,
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    /// Whose view the conditions are (`Gateway default/gw`, `listener https`); absent for the object's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub conditions: Vec<ConditionView>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionView {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub state: State,
    /// What to change, when it is a problem or a warning and pier knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// What a condition says about its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Ok,
    /// It works, but should change.
    Warning,
    /// Something is wrong: False for Accepted, ResolvedRefs, Programmed; True for Conflicted,
    /// PartiallyInvalid.
    Problem,
}
