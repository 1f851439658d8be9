//! One alias per Envoy proto package, defined once here so every builder spells a type the same way
//! (`cluster::Cluster`, `core::Address`), and a reader can map a Rust path back to the proto package at a
//! glance. Never rename a single type on import: add the package alias here instead.

pub use envoy_types::pb::envoy::config::bootstrap::v3 as bootstrap;
pub use envoy_types::pb::envoy::config::cluster::v3 as cluster;
pub use envoy_types::pb::envoy::config::core::v3 as core;
pub use envoy_types::pb::envoy::config::endpoint::v3 as endpoint;
pub use envoy_types::pb::envoy::config::listener::v3 as listener;
pub use envoy_types::pb::envoy::config::rbac::v3 as rbac;
pub use envoy_types::pb::envoy::config::route::v3 as route;
pub use envoy_types::pb::envoy::extensions::clusters::aggregate::v3 as aggregate_cluster;
pub use envoy_types::pb::envoy::extensions::clusters::common::dns::v3 as common_dns;
pub use envoy_types::pb::envoy::extensions::clusters::dns::v3 as dns_cluster;
pub use envoy_types::pb::envoy::extensions::clusters::dynamic_forward_proxy::v3 as dfp_cluster;
pub use envoy_types::pb::envoy::extensions::common::dynamic_forward_proxy::v3 as dfp_common;
pub use envoy_types::pb::envoy::extensions::filters::http::cors::v3 as cors_filter;
pub use envoy_types::pb::envoy::extensions::filters::http::dynamic_forward_proxy::v3 as dfp_filter;
pub use envoy_types::pb::envoy::extensions::filters::http::rbac::v3 as rbac_filter;
pub use envoy_types::pb::envoy::extensions::filters::http::router::v3 as router;
pub use envoy_types::pb::envoy::extensions::filters::http::stateful_session::v3 as stateful_session;
pub use envoy_types::pb::envoy::extensions::filters::listener::tls_inspector::v3 as tls_inspector;
pub use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3 as hcm;
pub use envoy_types::pb::envoy::extensions::http::stateful_session::cookie::v3 as session_cookie;
pub use envoy_types::pb::envoy::extensions::http::stateful_session::header::v3 as session_header;
pub use envoy_types::pb::envoy::extensions::network::dns_resolver::cares::v3 as cares;
pub use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3 as tls;
pub use envoy_types::pb::envoy::extensions::upstreams::http::v3 as upstream_http;
pub use envoy_types::pb::envoy::r#type::http::v3 as http_types;
pub use envoy_types::pb::envoy::r#type::matcher::v3 as matcher;
pub use envoy_types::pb::envoy::r#type::v3 as types;
pub use envoy_types::pb::google::protobuf;

/// Envoy extension names: fixed by Envoy (not minted by pier), so they live beside the type aliases
/// rather than in `names`. `check` and `bootstrap` recognise configuration by these.
pub mod ext {
    pub const TLS_TRANSPORT_SOCKET: &str = "envoy.transport_sockets.tls";
    pub const HTTP_CONNECTION_MANAGER: &str = "envoy.filters.network.http_connection_manager";
    pub const ROUTER: &str = "envoy.filters.http.router";
    pub const DFP_FILTER: &str = "envoy.filters.http.dynamic_forward_proxy";
    /// Also the key of the per-route CORS policy (`Route.typed_per_filter_config`).
    pub const CORS_FILTER: &str = "envoy.filters.http.cors";
    /// Also the key of the per-route RBAC config (`Route.typed_per_filter_config`).
    pub const RBAC_FILTER: &str = "envoy.filters.http.rbac";
    /// Also the key of the per-route session config (`Route.typed_per_filter_config`).
    pub const STATEFUL_SESSION_FILTER: &str = "envoy.filters.http.stateful_session";
    pub const SESSION_COOKIE: &str = "envoy.http.stateful_session.cookie";
    pub const SESSION_HEADER: &str = "envoy.http.stateful_session.header";
    pub const DFP_CLUSTER: &str = "envoy.clusters.dynamic_forward_proxy";
    pub const DNS_CLUSTER: &str = "envoy.clusters.dns";
    pub const AGGREGATE_CLUSTER: &str = "envoy.clusters.aggregate";
    pub const TLS_INSPECTOR: &str = "envoy.filters.listener.tls_inspector";
    pub const CARES_DNS_RESOLVER: &str = "envoy.network.dns_resolver.cares";
    /// Key of `Cluster.typed_extension_protocol_options` for upstream HTTP settings.
    pub const HTTP_PROTOCOL_OPTIONS: &str = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
}
