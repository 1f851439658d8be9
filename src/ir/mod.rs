//! The intermediate representation between Gateway API and Envoy.
//!
//! `gateway/` builds it from the model (resolving references, applying guardrails, computing status);
//! `envoy/` turns it into protos. It knows neither Gateway API objects nor Envoy protos: every decision
//! about *what* to configure is already made here, so the Envoy builders only decide *how*. All
//! collections are ordered (`BTreeMap`, sorted `Vec`s) so the output is deterministic.

pub use crate::api::name::Name;
use std::collections::BTreeMap;
use std::net::IpAddr;

#[cfg(any(test, feature = "testkit"))]
pub mod build;
pub mod few;
mod filters;
pub mod names;
pub use filters::*;

/// Everything pier serves, per Gateway (`namespace/name`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ir {
    pub gateways: BTreeMap<String, GatewayIr>,
}

/// One Gateway's worth of configuration: the unit a proxy fleet receives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayIr {
    pub namespace: String,
    pub name: String,
    /// One Envoy listener per port, sorted by port.
    pub listeners: Vec<Listener>,
    /// Keyed by cluster name (minted in [`names`]).
    pub clusters: BTreeMap<String, Cluster>,
    /// Keyed by SDS secret name (minted in [`names`]).
    pub secrets: BTreeMap<String, Secret>,
}

/// A bound port. Several Gateway listeners that share a port become one Envoy listener.
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    pub name: String,
    pub address: String,
    pub port: u16,
    pub kind: ListenerKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ListenerKind {
    /// Plain HTTP: one route configuration whose virtual hosts give listener isolation by hostname.
    Http { route_config: RouteConfig },
    /// HTTPS termination: one filter chain per Gateway listener, selected by SNI.
    Https { chains: Vec<TlsChain> },
}

/// One HTTPS filter chain: the SNI names it answers for, its certificates, and its routes.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsChain {
    /// Gateway listener name this chain comes from.
    pub listener_name: String,
    /// SNI server names (`*.example.com` allowed); empty = any SNI (the default chain).
    pub server_names: Vec<String>,
    /// SDS names of the certificates (kubernetes.io/tls Secrets).
    pub certificates: Vec<String>,
    /// Client certificate validation (Gateway `spec.tls.frontend`), if the Gateway asks for it here.
    pub client_validation: Option<ClientValidation>,
    pub route_config: RouteConfig,
}

/// Client certificate validation on an HTTPS filter chain (Gateway `spec.tls.frontend`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientValidation {
    /// SDS name of the trusted CA bundle.
    pub ca: String,
    /// `AllowInsecureFallback`: clients without a certificate, or with one that fails verification, are
    /// let through (the backend decides); otherwise a verified certificate is required.
    pub allow_insecure_fallback: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RouteConfig {
    pub name: String,
    /// Sorted: Envoy picks the most specific domain itself, so order only matters for stable output.
    pub virtual_hosts: Vec<VirtualHost>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VirtualHost {
    pub name: String,
    /// Envoy domain patterns: exact names, `*.suffix` wildcards, or `*`.
    pub domains: Vec<String>,
    /// In precedence order (first match wins), as `gateway::order` sorted them.
    pub routes: Vec<Route>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Stable, unique within the virtual host; names the origin (`ns/route/rule/match`).
    pub name: String,
    pub path: PathMatch,
    /// Header conditions, ANDed with the path: names lowercased (HTTP header names are
    /// case-insensitive), at most one entry per name (the first one written).
    pub headers: Vec<HeaderMatch>,
    /// Query parameter conditions, ANDed; names exact, at most one entry per name (the first one).
    pub query_params: Vec<QueryMatch>,
    /// HTTP method (`GET`, `POST`, ...), if the match names one.
    pub method: Option<String>,
    pub action: RouteAction,
    /// A GRPCRoute entry: every failure Envoy answers itself (the share of an invalid backendRef, a rule
    /// without a valid backend) is HTTP 503, which Envoy's local reply to a gRPC request turns into
    /// `grpc-status: 14` (UNAVAILABLE) — the gRPC answer Gateway API asks for where HTTPRoute gets 500.
    pub grpc: bool,
    /// Filters, timeouts, retries and the rule name (HTTPRoute rule fields besides matches and backendRefs).
    pub filters: Filters,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathMatch {
    Exact(String),
    /// Element-wise prefix (`/abc` matches `/abc` and `/abc/x`, not `/abcd`).
    Prefix(String),
    /// RE2 regular expression that must match the whole path (without the query string).
    Regex(String),
}

/// How a header or query parameter value must match.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValueMatch {
    /// Case-sensitive, whole value.
    Exact(String),
    /// RE2 regular expression that must match the whole value.
    Regex(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderMatch {
    /// Lowercase.
    pub name: String,
    pub value: ValueMatch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryMatch {
    pub name: String,
    pub value: ValueMatch,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RouteAction {
    /// Weighted split over backends. An invalid backendRef keeps its weight with `cluster: None` and
    /// answers 500 for exactly that share.
    Forward(Vec<WeightedBackend>),
    /// Fixed answer, e.g. 500 when a rule has no valid backend at all.
    DirectResponse { status: u32 },
    /// Answer with a redirect instead of forwarding.
    Redirect(Redirect),
}

#[derive(Debug, Clone, PartialEq)]
pub struct WeightedBackend {
    /// `None`: the backendRef is invalid; Envoy answers 500 for this share.
    pub cluster: Option<Name>,
    pub weight: u32,
    /// Header changes for this backend's share only (`backendRefs[].filters`).
    pub filters: BackendFilters,
}

/// An upstream cluster: one per (backend kind, namespace, name, port), shared by every route using it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    pub name: Name,
    /// Human-readable origin, e.g. `XBackend default/openai port 443`, kept in cluster metadata.
    pub origin: Origin,
    /// Shared like `tls`: a Service's endpoints are as many as its Pods.
    pub discovery: std::sync::Arc<Discovery>,
    pub protocol: UpstreamProtocol,
    /// Shared with the Backend evaluation it came from, and between the routes that reach it: most
    /// clusters have none, and one is 200 bytes.
    pub tls: Option<std::sync::Arc<UpstreamTls>>,
    pub circuit_breaker: Option<CircuitBreaker>,
    pub outlier_detection: Option<OutlierDetection>,
    /// How long Envoy waits for a connection (`Options::connect_timeout_ms`, decided by the translator).
    pub connect_timeout_ms: u64,
}

/// Which object a cluster was built from (goes into Envoy metadata so operators can trace it back).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    pub kind: &'static str,
    pub namespace: Name,
    pub name: Name,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Discovery {
    /// Envoy resolves the hostnames itself (STRICT_DNS) with the DNS settings given. Usually one
    /// target; an Envoy Gateway Backend may list several FQDN endpoints (and fallback ones).
    Dns { targets: Vec<DnsTarget>, dns: DnsSettings },
    /// Endpoints delivered by EDS as a ClusterLoadAssignment named after the cluster.
    Eds { endpoints: Vec<Endpoint> },
    /// Envoy's dynamic forward proxy (Envoy Gateway `DynamicResolver`), only when the operator enabled it.
    /// It connects wherever the request's authority says, so the destination guardrails travel with it as
    /// RE2 regexes over the authority (`gateway::policy::authority_deny_regexes`), which Envoy enforces
    /// with 403 on every route forwarding here: an authority matching any of `deny_authorities`, or with
    /// an operator allow-list none of `allow_authorities`, is refused.
    DynamicForwardProxy {
        dns: DnsSettings,
        deny_authorities: Vec<String>,
        allow_authorities: Option<Vec<String>>,
    },
    /// Failover across other clusters, in order: traffic goes to the first while it has healthy
    /// hosts, then spills to the next (Envoy Gateway `fallback` Backends). Protocol and TLS come from
    /// the member clusters.
    Aggregate { clusters: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DnsTarget {
    pub hostname: String,
    pub port: u16,
    /// 0 = primary; 1 = Envoy Gateway `fallback`.
    pub priority: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsSettings {
    pub refresh_rate_ms: u64,
    pub respect_ttl: bool,
    pub lookup_family: LookupFamily,
    /// The DNS servers Envoy asks (operator option); empty: the host's (`/etc/resolv.conf`). Either
    /// way names are resolved as absolute, never completed by search domains.
    pub resolvers: Vec<std::net::SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum LookupFamily {
    Auto,
    V4Only,
    V6Only,
    V4Preferred,
    All,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub address: EndpointAddress,
    /// 0 = primary; 1 = Envoy Gateway `fallback`.
    pub priority: u32,
    /// Envoy `LbEndpoint.endpoint.hostname` (Envoy Gateway endpoint `hostname`, Service endpoint hostname).
    pub hostname: Option<String>,
    /// Locality zone, when known (EndpointSlice `zone`, Envoy Gateway endpoint `zone`).
    pub zone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum EndpointAddress {
    Ip(IpAddr, u16),
    Unix(String),
}

/// How Envoy talks HTTP to the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UpstreamProtocol {
    /// HTTP/1.1 only (HTTP11, and WebSocket which needs HTTP/1.1 upgrade).
    Http1,
    /// HTTP/2 negotiated by ALPN `h2` over TLS.
    Http2,
    /// HTTP/2 cleartext with prior knowledge.
    H2c,
    /// `HTTP`: over TLS, ALPN offers h2 and http/1.1; in cleartext, HTTP/1.1.
    Auto,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamTls {
    pub sni: Option<String>,
    pub trust: Trust,
    /// Matchers for the upstream certificate's SANs; empty means "any" (only with `Trust::InsecureSkipVerify`).
    pub subject_alt_names: Vec<SanMatch>,
    /// SDS name of the client certificate (mTLS), if any.
    pub client_certificate: Option<String>,
    pub min_version: Option<TlsVersion>,
    pub max_version: Option<TlsVersion>,
    pub ciphers: Vec<String>,
    pub ecdh_curves: Vec<String>,
    pub signature_algorithms: Vec<String>,
    /// ALPN offered to the upstream. Empty: derived from `protocol` by the Envoy builder.
    pub alpn: Vec<String>,
    /// SNI (and SAN check) from each endpoint's `hostname` (Envoy Gateway `autoSNIFromEndpointHostname`).
    pub auto_host_sni: bool,
    /// SNI (and SAN check) from the request's Host header: Envoy Gateway's behaviour for a TLS Backend
    /// without a fixed `sni`, and what a dynamic forward proxy always does.
    pub sni_from_host: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// SDS validation-context secret with the CA bundle (from ConfigMap/Secret `ca.crt`, or the system file).
    Sds(String),
    /// No verification of the upstream certificate (only where the shape has `insecureSkipVerify`).
    InsecureSkipVerify,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SanMatch {
    Dns(String),
    Uri(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Auto,
    V1_0,
    V1_1,
    V1_2,
    V1_3,
}

/// Circuit-breaker thresholds (the draft shape's `pier.dev/connection-pool` extension).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CircuitBreaker {
    pub max_connections: Option<u32>,
    pub max_pending_requests: Option<u32>,
    pub max_requests: Option<u32>,
    pub max_retries: Option<u32>,
}

/// Passive health checking (the draft shape's `pier.dev/outlier-detection` extension).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutlierDetection {
    pub consecutive_5xx: Option<u32>,
    pub interval_ms: Option<u64>,
    pub base_ejection_time_ms: Option<u64>,
    pub max_ejection_percent: Option<u32>,
}

/// An SDS secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// Trusted CA bundle, PEM.
    CaBundle { pem: String },
    /// Trusted CA bundle read by Envoy from a file (the system bundle).
    CaFile { path: String },
    /// Certificate chain + private key, PEM (Gateway listener certificates, upstream client certificates).
    TlsCertificate { chain: String, key: String },
}
