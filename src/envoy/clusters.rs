//! CDS: one `Cluster` per `ir::Cluster`. Owns discovery (DNS, EDS, dynamic forward proxy), upstream HTTP
//! protocol, circuit breaking, outlier detection and the origin metadata; the TLS transport socket is
//! built in `tls`, endpoints of EDS clusters in `endpoints`.

use std::collections::HashMap;

use super::pb::{
    aggregate_cluster, cares, cluster, common_dns, core, dfp_cluster, dns_cluster, ext, protobuf, upstream_http,
};
use super::{ads, duration_ms, endpoints, tls, typed_extension, u32_value};
use crate::ir;

/// `Cluster.metadata.filter_metadata` key under which the cluster's origin is recorded.
pub const METADATA_NAMESPACE: &str = "pier.dev";

pub(super) fn build(name: &str, c: &ir::Cluster) -> cluster::Cluster {
    let dfp = matches!(*c.discovery, ir::Discovery::DynamicForwardProxy { .. });
    let mut out = cluster::Cluster {
        name: name.to_string(),
        connect_timeout: Some(duration_ms(c.connect_timeout_ms)),
        typed_extension_protocol_options: HashMap::from([(
            ext::HTTP_PROTOCOL_OPTIONS.to_string(),
            envoy_types::util::pack_any(protocol_options(c.protocol, c.tls.as_deref(), dfp)),
        )]),
        transport_socket: c.tls.as_ref().map(|t| tls::upstream(t, c.protocol)),
        circuit_breakers: c.circuit_breaker.as_ref().map(circuit_breakers),
        outlier_detection: c.outlier_detection.as_ref().map(outlier_detection),
        metadata: Some(origin_metadata(&c.origin)),
        ..Default::default()
    };
    match &*c.discovery {
        ir::Discovery::Dns { targets, dns } => {
            // The DNS cluster extension is STRICT_DNS without the deprecated top-level Cluster DNS
            // fields (`dns_refresh_rate`, `respect_dns_ttl`, `dns_lookup_family` are deprecated for DNS
            // clusters in favour of it). `all_addresses_in_single_endpoint: false` = strict semantics:
            // every resolved address is an endpoint.
            let config = dns_cluster::DnsCluster {
                dns_refresh_rate: Some(duration_ms(dns.refresh_rate_ms)),
                respect_dns_ttl: dns.respect_ttl,
                dns_lookup_family: dns_cluster_lookup_family(dns.lookup_family) as i32,
                all_addresses_in_single_endpoint: false,
                typed_dns_resolver_config: Some(dns_resolver(dns)),
                ..Default::default()
            };
            out.cluster_discovery_type = Some(cluster::cluster::ClusterDiscoveryType::ClusterType(custom(
                ext::DNS_CLUSTER,
                config,
            )));
            out.load_assignment = Some(endpoints::dns_load_assignment(name, targets));
        }
        ir::Discovery::Eds { .. } => {
            out.cluster_discovery_type = Some(cluster::cluster::ClusterDiscoveryType::Type(
                cluster::cluster::DiscoveryType::Eds as i32,
            ));
            out.eds_cluster_config = Some(cluster::cluster::EdsClusterConfig {
                eds_config: Some(ads()),
                // Explicit, so the ClusterLoadAssignment name is spelled in the cluster itself.
                service_name: name.to_string(),
            });
        }
        ir::Discovery::DynamicForwardProxy { dns, .. } => {
            let config = dfp_cluster::ClusterConfig {
                cluster_implementation_specifier: Some(
                    dfp_cluster::cluster_config::ClusterImplementationSpecifier::DnsCacheConfig(
                        super::features::dfp::dns_cache_config(dns),
                    ),
                ),
                ..Default::default()
            };
            out.cluster_discovery_type = Some(cluster::cluster::ClusterDiscoveryType::ClusterType(custom(
                ext::DFP_CLUSTER,
                config,
            )));
            // The DFP cluster brings its own load balancer (host picked from the DNS cache).
            out.lb_policy = cluster::cluster::LbPolicy::ClusterProvided as i32;
        }
        ir::Discovery::Aggregate { clusters } => {
            let config = aggregate_cluster::ClusterConfig {
                clusters: clusters.clone(),
            };
            out.cluster_discovery_type = Some(cluster::cluster::ClusterDiscoveryType::ClusterType(custom(
                ext::AGGREGATE_CLUSTER,
                config,
            )));
            // Envoy requires it: the aggregate picks a member cluster, whose own load balancer picks
            // the host. Connection settings live on the members.
            out.lb_policy = cluster::cluster::LbPolicy::ClusterProvided as i32;
            out.typed_extension_protocol_options.clear();
            out.transport_socket = None;
        }
    }
    out
}

/// The resolver of every name pier hands Envoy (DNS clusters, dynamic forward proxy caches): c-ares with
/// search domains off, so a name is resolved as written (absolute). A Pod's resolv.conf (`ndots:5`,
/// `NS.svc.cluster.local ...`) would otherwise complete `kubernetes.default`, a name the guardrails judged
/// external, into the API server's Service. Only the operator's servers when given (never the host's as
/// a fallback); the host's otherwise.
pub(super) fn dns_resolver(dns: &ir::DnsSettings) -> core::TypedExtensionConfig {
    let udp = |a: &std::net::SocketAddr| core::Address {
        address: Some(core::address::Address::SocketAddress(core::SocketAddress {
            protocol: core::socket_address::Protocol::Udp as i32,
            address: a.ip().to_string(),
            port_specifier: Some(core::socket_address::PortSpecifier::PortValue(u32::from(a.port()))),
            ..Default::default()
        })),
    };
    typed_extension(
        ext::CARES_DNS_RESOLVER,
        cares::CaresDnsResolverConfig {
            resolvers: dns.resolvers.iter().map(udp).collect(),
            use_resolvers_as_fallback: false,
            dns_resolver_options: Some(core::DnsResolverOptions {
                no_default_search_domain: true,
                ..Default::default()
            }),
            ..Default::default()
        },
    )
}

fn custom<M: prost::Message + prost::Name>(name: &str, config: M) -> cluster::cluster::CustomClusterType {
    let ext = typed_extension(name, config);
    cluster::cluster::CustomClusterType {
        name: ext.name,
        typed_config: ext.typed_config,
    }
}

/// Upstream HTTP settings. Always explicit (never Envoy's implicit default), so the rendered cluster says
/// which protocol is spoken.
/// SNI and the certificate check follow the request's Host for a dynamic forward proxy (Envoy requires
/// it, even in cleartext where it is inert) and for TLS clusters without a fixed SNI (`sni_from_host`).
fn protocol_options(
    protocol: ir::UpstreamProtocol,
    upstream_tls: Option<&ir::UpstreamTls>,
    dfp: bool,
) -> upstream_http::HttpProtocolOptions {
    let tls = upstream_tls.is_some();
    let from_host = dfp || upstream_tls.is_some_and(|t| t.sni_from_host);
    // Without a trust anchor there is nothing to check the SAN against.
    let verify = dfp || upstream_tls.is_some_and(|t| t.trust != ir::Trust::InsecureSkipVerify);
    use upstream_http::http_protocol_options::{
        AutoHttpConfig, ExplicitHttpConfig, UpstreamProtocolOptions, explicit_http_config::ProtocolConfig,
    };
    let explicit = |config| {
        UpstreamProtocolOptions::ExplicitHttpConfig(ExplicitHttpConfig {
            protocol_config: Some(config),
        })
    };
    let http1 = || {
        explicit(ProtocolConfig::HttpProtocolOptions(
            core::Http1ProtocolOptions::default(),
        ))
    };
    let http2 = || {
        explicit(ProtocolConfig::Http2ProtocolOptions(
            core::Http2ProtocolOptions::default(),
        ))
    };
    let options = match protocol {
        ir::UpstreamProtocol::Http1 => http1(),
        // h2c is HTTP/2 with prior knowledge; over TLS it is plain HTTP/2 (ALPN h2, see `tls`).
        ir::UpstreamProtocol::Http2 | ir::UpstreamProtocol::H2c => http2(),
        // ALPN picks h2 or http/1.1, which needs TLS; in cleartext "auto" means HTTP/1.1.
        ir::UpstreamProtocol::Auto if tls => UpstreamProtocolOptions::AutoConfig(AutoHttpConfig {
            http_protocol_options: Some(core::Http1ProtocolOptions::default()),
            http2_protocol_options: Some(core::Http2ProtocolOptions::default()),
            ..Default::default()
        }),
        ir::UpstreamProtocol::Auto => http1(),
    };
    upstream_http::HttpProtocolOptions {
        // A forward proxy reaches a different host per request: the SNI and the certificate check must
        // follow the request's host, not a fixed name. Envoy refuses a DFP cluster without both, even in
        // cleartext (where they are inert).
        upstream_http_protocol_options: from_host.then_some(core::UpstreamHttpProtocolOptions {
            auto_sni: true,
            auto_san_validation: verify,
            ..Default::default()
        }),
        upstream_protocol_options: Some(options),
        ..Default::default()
    }
}

fn circuit_breakers(cb: &ir::CircuitBreaker) -> cluster::CircuitBreakers {
    cluster::CircuitBreakers {
        thresholds: vec![cluster::circuit_breakers::Thresholds {
            priority: core::RoutingPriority::Default as i32,
            max_connections: cb.max_connections.map(u32_value),
            max_pending_requests: cb.max_pending_requests.map(u32_value),
            max_requests: cb.max_requests.map(u32_value),
            max_retries: cb.max_retries.map(u32_value),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn outlier_detection(od: &ir::OutlierDetection) -> cluster::OutlierDetection {
    cluster::OutlierDetection {
        consecutive_5xx: od.consecutive_5xx.map(u32_value),
        interval: od.interval_ms.map(duration_ms),
        base_ejection_time: od.base_ejection_time_ms.map(duration_ms),
        max_ejection_percent: od.max_ejection_percent.map(u32_value),
        ..Default::default()
    }
}

/// `{kind, namespace, name, port}` of the object the cluster came from, for operators reading
/// `/config_dump`.
fn origin_metadata(origin: &ir::Origin) -> core::Metadata {
    use protobuf::value::Kind;
    let string = |s: &str| protobuf::Value {
        kind: Some(Kind::StringValue(s.to_string())),
    };
    let fields = HashMap::from([
        ("kind".to_string(), string(origin.kind)),
        ("namespace".to_string(), string(&origin.namespace)),
        ("name".to_string(), string(&origin.name)),
        (
            "port".to_string(),
            protobuf::Value {
                kind: Some(Kind::NumberValue(f64::from(origin.port))),
            },
        ),
    ]);
    core::Metadata {
        filter_metadata: HashMap::from([(METADATA_NAMESPACE.to_string(), protobuf::Struct { fields })]),
        ..Default::default()
    }
}

fn dns_cluster_lookup_family(family: ir::LookupFamily) -> common_dns::DnsLookupFamily {
    use common_dns::DnsLookupFamily as F;
    match family {
        ir::LookupFamily::Auto => F::Auto,
        ir::LookupFamily::V4Only => F::V4Only,
        ir::LookupFamily::V6Only => F::V6Only,
        ir::LookupFamily::V4Preferred => F::V4Preferred,
        ir::LookupFamily::All => F::All,
    }
}
