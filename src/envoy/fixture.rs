//! A small Gateway IR touching every builder, for the unit tests of `check`, `bootstrap` and friends.
//! (The exhaustive, every-variant IRs validated by a real Envoy live in `tests/it/envoy_validate.rs`.)

use std::collections::BTreeMap;

use crate::ir::build::{route, to as forward};
use crate::ir::*;

fn dns() -> DnsSettings {
    crate::ir::build::dns(30_000, LookupFamily::V4Preferred)
}

pub const WEB: &str = "service/default/web/8080";
pub const API: &str = "xbackend/default/api/443";
pub const DYN: &str = "eg-backend/default/dyn/dynamic";
pub const CA: &str = "ca/configmap/default/ca";
pub const CLIENT_CERT: &str = "cert/default/client";
pub const GW_CERT: &str = "cert/default/gw";
pub const HTTP_ROUTES: &str = "default/gw/80";
pub const HTTPS_ROUTES: &str = "default/gw/443/https";

fn origin(kind: &'static str, name: &str, port: u16) -> Origin {
    Origin {
        kind,
        namespace: "default".into(),
        name: name.into(),
        port,
    }
}

pub fn gateway() -> GatewayIr {
    let clusters = [
        Cluster {
            name: WEB.into(),
            origin: origin("Service", "web", 8080),
            discovery: std::sync::Arc::new(Discovery::Eds {
                endpoints: vec![Endpoint {
                    address: EndpointAddress::Ip("10.0.0.1".parse().unwrap(), 8080),
                    priority: 0,
                    hostname: None,
                    zone: Some("a".into()),
                }],
            }),
            protocol: UpstreamProtocol::Http1,
            tls: None,
            circuit_breaker: None,
            outlier_detection: None,
            connect_timeout_ms: crate::options::Options::default().connect_timeout_ms,
        },
        Cluster {
            name: API.into(),
            origin: origin("XBackend", "api", 443),
            discovery: std::sync::Arc::new(Discovery::Dns {
                targets: vec![DnsTarget {
                    hostname: "api.example.com".into(),
                    port: 443,
                    priority: 0,
                }],
                dns: dns(),
            }),
            protocol: UpstreamProtocol::Auto,
            tls: Some(std::sync::Arc::new(UpstreamTls {
                sni: Some("api.example.com".into()),
                trust: Trust::Sds(CA.into()),
                subject_alt_names: vec![SanMatch::Dns("api.example.com".into())],
                client_certificate: Some(CLIENT_CERT.into()),
                min_version: None,
                max_version: None,
                ciphers: vec![],
                ecdh_curves: vec![],
                signature_algorithms: vec![],
                alpn: vec![],
                auto_host_sni: false,
                sni_from_host: false,
            })),
            circuit_breaker: None,
            outlier_detection: None,
            connect_timeout_ms: crate::options::Options::default().connect_timeout_ms,
        },
        Cluster {
            name: DYN.into(),
            origin: origin("Backend", "dyn", 0),
            discovery: std::sync::Arc::new(Discovery::DynamicForwardProxy {
                dns: dns(),
                deny_authorities: crate::gateway::policy::authority_deny_regexes(&Default::default()),
                allow_authorities: Some(vec![r"(?i)^api\.example\.com\.?(?::.*)?$".into()]),
            }),
            protocol: UpstreamProtocol::Http1,
            tls: None,
            circuit_breaker: None,
            outlier_detection: None,
            connect_timeout_ms: crate::options::Options::default().connect_timeout_ms,
        },
    ];
    let secrets = BTreeMap::from([
        (CA.to_string(), Secret::CaBundle { pem: "CA".into() }),
        (
            CLIENT_CERT.to_string(),
            Secret::TlsCertificate {
                chain: "CHAIN".into(),
                key: "KEY".into(),
            },
        ),
        (
            GW_CERT.to_string(),
            Secret::TlsCertificate {
                chain: "CHAIN".into(),
                key: "KEY".into(),
            },
        ),
    ]);
    let http = RouteConfig {
        name: HTTP_ROUTES.into(),
        virtual_hosts: vec![VirtualHost {
            name: "http/*".into(),
            domains: vec!["*".into()],
            routes: vec![
                route("r/api", PathMatch::Prefix("/api".into()), forward(&[(Some(API), 1)])),
                route(
                    "r/dyn",
                    PathMatch::Exact("/dyn".into()),
                    forward(&[(Some(DYN), 1), (None, 1)]),
                ),
                route("r/web", PathMatch::Prefix("/".into()), forward(&[(Some(WEB), 1)])),
            ],
        }],
    };
    let https = RouteConfig {
        name: HTTPS_ROUTES.into(),
        virtual_hosts: vec![VirtualHost {
            name: "https/example.com".into(),
            domains: vec!["example.com".into()],
            routes: vec![route(
                "r/web",
                PathMatch::Prefix("/".into()),
                forward(&[(Some(WEB), 1)]),
            )],
        }],
    };
    GatewayIr {
        namespace: "default".into(),
        name: "gw".into(),
        listeners: vec![
            Listener {
                name: "default/gw/80".into(),
                address: "0.0.0.0".into(),
                port: 80,
                kind: ListenerKind::Http { route_config: http },
            },
            Listener {
                name: "default/gw/443".into(),
                address: "0.0.0.0".into(),
                port: 443,
                kind: ListenerKind::Https {
                    chains: vec![TlsChain {
                        listener_name: "https".into(),
                        server_names: vec!["example.com".into()],
                        certificates: vec![GW_CERT.into()],
                        client_validation: None,
                        route_config: https,
                    }],
                },
            },
        ],
        clusters: clusters.into_iter().map(|c| (c.name.to_string(), c)).collect(),
        secrets,
    }
}
