//! The bootstrap an operator starts an Envoy with so it serves one Gateway from pier: ADS over gRPC to
//! pier (state-of-the-world or delta), `node.cluster = "<namespace>/<name>"` naming the Gateway, an
//! admin listener on loopback, and optionally a DNS resolver for STRICT_DNS clusters. With [`XdsTls`]
//! Envoy presents its Gateway's client certificate to pier and verifies pier's certificate against a CA
//! and a SAN; the files are watched, so rotated certificates are picked up without a restart. Built as
//! JSON (Envoy's own bootstrap spelling) rather than protos: it is printed, never served.
//!
//! **Replicas and hung peers.** The xDS cluster lists every pier address given (the replicas, or a
//! headless Service's name, which resolves to all of them), and its HTTP/2 keepalive pings every
//! [`KEEPALIVE_INTERVAL`] with a [`KEEPALIVE_TIMEOUT`]: a replica that hangs with the connection open
//! (a paused process, a partition that drops packets) is left within 5 s, and the ADS stream starts
//! again on the next address (round robin). At 10,000 proxies that is 3,300 HTTP/2 PINGs a second
//! across the replicas: a read and a write each, a few percent of one core.

use std::net::IpAddr;

use serde_json::{Value, json};

pub use super::grpc_bootstrap::grpc_bootstrap;

/// Name of the static cluster that reaches pier's xDS port.
pub const XDS_CLUSTER: &str = "pier_xds";
/// How often the proxy pings pier on an idle xDS connection, and how long it waits for the answer.
pub const KEEPALIVE_INTERVAL: &str = "3s";
pub const KEEPALIVE_TIMEOUT: &str = "2s";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapSpec {
    /// `namespace/name` of the Gateway this proxy serves.
    pub gateway: String,
    /// pier's xDS addresses: each an IP or a DNS name (a replica, the pier Service, a headless Service
    /// that resolves to every replica), and a port. At least one.
    pub xds: Vec<(String, u16)>,
    pub delta: bool,
    pub admin_port: u16,
    /// `node.id`; defaults to the Gateway name with `/` replaced.
    pub node_id: Option<String>,
    /// A UDP DNS resolver for Envoy's own name resolution (STRICT_DNS clusters), as `ip:port`.
    pub dns_resolver: Option<(IpAddr, u16)>,
    /// mTLS to pier.
    pub tls: Option<XdsTls>,
}

/// Files of the proxy's side of mTLS to pier (the layout `pier certs` writes for a Gateway).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdsTls {
    /// The Gateway's client certificate (PEM) and key.
    pub cert: String,
    pub key: String,
    /// The CA bundle pier's server certificate must chain to.
    pub ca: String,
    /// The name pier's certificate must carry (DNS SAN, also sent as SNI); `None`: the xDS host, as a
    /// DNS name or an IP address SAN.
    pub server_name: Option<String>,
}

/// The TLS transport socket of the xDS cluster: pier's certificate must carry `server_name`, or else
/// one of the addresses (as an IP or DNS SAN); SNI is `server_name` or the first DNS name.
fn xds_transport_socket(tls: &XdsTls, xds: &[(String, u16)]) -> Value {
    let dir = |file: &str| {
        std::path::Path::new(file)
            .parent()
            .map_or_else(|| ".".to_string(), |p| p.display().to_string())
    };
    let names: Vec<&str> = match &tls.server_name {
        Some(n) => vec![n.as_str()],
        None => xds.iter().map(|(h, _)| h.as_str()).collect(),
    };
    let san = |name: &str| {
        let kind = if tls.server_name.is_none() && name.parse::<IpAddr>().is_ok() {
            "IP_ADDRESS"
        } else {
            "DNS"
        };
        json!({ "san_type": kind, "matcher": { "exact": name } })
    };
    let mut sans: Vec<Value> = names.iter().map(|n| san(n)).collect();
    sans.dedup();
    let sni = names
        .iter()
        .find(|n| tls.server_name.is_some() || n.parse::<IpAddr>().is_err());
    let mut context = json!({
        "common_tls_context": {
            "alpn_protocols": ["h2"],
            "tls_certificates": [ {
                "certificate_chain": { "filename": tls.cert },
                "private_key": { "filename": tls.key },
                "watched_directory": { "path": dir(&tls.cert) },
            } ],
            "validation_context": {
                "trusted_ca": { "filename": tls.ca },
                "watched_directory": { "path": dir(&tls.ca) },
                "match_typed_subject_alt_names": sans,
            },
        },
    });
    if let Some(sni) = sni {
        context["sni"] = json!(sni);
    }
    context["@type"] = json!("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext");
    json!({ "name": "envoy.transport_sockets.tls", "typed_config": context })
}

pub fn bootstrap(spec: &BootstrapSpec) -> Value {
    let ads = json!({ "ads": {}, "resource_api_version": "V3", "initial_fetch_timeout": "0s" });
    // A DNS name (the pier Service in a cluster) is re-resolved; an IP needs no resolution.
    let xds_type = if spec.xds.iter().all(|(h, _)| h.parse::<IpAddr>().is_ok()) {
        "STATIC"
    } else {
        "STRICT_DNS"
    };
    let endpoints: Vec<Value> = spec
        .xds
        .iter()
        .map(|(host, port)| json!({ "endpoint": { "address": { "socket_address": { "address": host, "port_value": port } } } }))
        .collect();
    let mut boot = json!({
        "node": {
            "id": spec.node_id.clone().unwrap_or_else(|| format!("envoy-{}", spec.gateway.replace('/', "-"))),
            "cluster": spec.gateway,
        },
        "admin": {
            "address": { "socket_address": { "address": "127.0.0.1", "port_value": spec.admin_port } }
        },
        "dynamic_resources": {
            "ads_config": {
                "api_type": if spec.delta { "DELTA_GRPC" } else { "GRPC" },
                "transport_api_version": "V3",
                "set_node_on_first_message_only": true,
                "grpc_services": [ { "envoy_grpc": { "cluster_name": XDS_CLUSTER } } ],
            },
            // Wait for pier rather than start serving an empty configuration after 15 s.
            "cds_config": ads.clone(),
            "lds_config": ads,
        },
        "static_resources": {
            "clusters": [ {
                "name": XDS_CLUSTER,
                "type": xds_type,
                "connect_timeout": "1s",
                "typed_extension_protocol_options": {
                    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                        // gRPC needs HTTP/2; keepalives notice a hung or vanished pier (see the module doc).
                        "explicit_http_config": { "http2_protocol_options": {
                            "connection_keepalive": { "interval": KEEPALIVE_INTERVAL, "timeout": KEEPALIVE_TIMEOUT }
                        } }
                    }
                },
                "load_assignment": {
                    "cluster_name": XDS_CLUSTER,
                    "endpoints": [ { "lb_endpoints": endpoints } ]
                }
            } ]
        },
    });
    // Every name Envoy resolves is absolute: a Pod's search domains must never complete one into a
    // cluster-internal name (pier's clusters say so too; this covers pier's own xDS address and any
    // cluster an operator adds). With a resolver given, only that one: names never leak to the host's.
    let resolvers: Vec<Value> = spec
        .dns_resolver
        .iter()
        .map(|(ip, port)| json!({ "socket_address": { "address": ip.to_string(), "port_value": port, "protocol": "UDP" } }))
        .collect();
    boot["typed_dns_resolver_config"] = json!({
        "name": "envoy.network.dns_resolver.cares",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
            "use_resolvers_as_fallback": false,
            "dns_resolver_options": { "no_default_search_domain": true },
        }
    });
    if let Some(tls) = &spec.tls {
        boot["static_resources"]["clusters"][0]["transport_socket"] = xds_transport_socket(tls, &spec.xds);
    }
    if !resolvers.is_empty() {
        boot["typed_dns_resolver_config"]["typed_config"]["resolvers"] = Value::Array(resolvers);
    }
    boot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_gateway_and_picks_the_api_type() {
        let spec = BootstrapSpec {
            gateway: "demo/edge".into(),
            xds: vec![("127.0.0.1".into(), 18000)],
            delta: true,
            admin_port: 0,
            node_id: None,
            dns_resolver: None,
            tls: None,
        };
        let b = bootstrap(&spec);
        assert_eq!(b["node"]["cluster"], "demo/edge");
        assert_eq!(b["node"]["id"], "envoy-demo-edge");
        assert_eq!(b["dynamic_resources"]["ads_config"]["api_type"], "DELTA_GRPC");
        assert_eq!(b["static_resources"]["clusters"][0]["type"], "STATIC");
        let by_name = bootstrap(&BootstrapSpec {
            xds: vec![("pier.pier-system.svc".into(), 18000)],
            delta: false,
            ..spec.clone()
        });
        assert_eq!(by_name["static_resources"]["clusters"][0]["type"], "STRICT_DNS");
        assert_eq!(by_name["dynamic_resources"]["ads_config"]["api_type"], "GRPC");
        // Replicas: every address an endpoint, the keepalive that leaves a hung one within 5 s.
        let replicas = bootstrap(&BootstrapSpec {
            xds: vec![
                ("10.0.0.1".into(), 18000),
                ("10.0.0.2".into(), 18000),
                ("10.0.0.3".into(), 18001),
            ],
            tls: Some(XdsTls {
                cert: "/pki/tls.crt".into(),
                key: "/pki/tls.key".into(),
                ca: "/pki/ca.crt".into(),
                server_name: None,
            }),
            ..spec
        });
        let cluster = &replicas["static_resources"]["clusters"][0];
        let lb = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]
            .as_array()
            .unwrap();
        assert_eq!(lb.len(), 3);
        assert_eq!(lb[2]["endpoint"]["address"]["socket_address"]["port_value"], 18001);
        let keepalive = &cluster["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
            ["explicit_http_config"]["http2_protocol_options"]["connection_keepalive"];
        assert_eq!(
            (keepalive["interval"].as_str(), keepalive["timeout"].as_str()),
            (Some("3s"), Some("2s"))
        );
        let tls = &cluster["transport_socket"]["typed_config"];
        let sans = tls["common_tls_context"]["validation_context"]["match_typed_subject_alt_names"]
            .as_array()
            .unwrap();
        assert_eq!(sans.len(), 3, "any replica's IP SAN is accepted");
        assert!(tls.get("sni").is_none(), "no SNI for IP addresses");
    }
}
