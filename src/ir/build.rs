//! Terse builders for hand-written [`crate::ir`] values, shared by the library's unit tests and the
//! integration tests (one copy); compiled for tests only (`cfg(test)` or the `testkit` feature). Defaults are the common case (verified TLS with the SNI as DNS SAN,
//! priority-0 endpoints); tests override fields with struct update syntax.

use crate::ir::*;

pub fn dns(refresh_rate_ms: u64, lookup_family: LookupFamily) -> DnsSettings {
    DnsSettings {
        refresh_rate_ms,
        respect_ttl: true,
        lookup_family,
        resolvers: Vec::new(),
    }
}

pub fn cluster(name: &str, discovery: Discovery, protocol: UpstreamProtocol, tls: Option<UpstreamTls>) -> Cluster {
    Cluster {
        name: name.into(),
        origin: Origin {
            kind: "XBackend",
            namespace: "ns".into(),
            name: name.replace('/', "-").into(),
            port: 443,
        },
        discovery: std::sync::Arc::new(discovery),
        protocol,
        tls: tls.map(std::sync::Arc::new),
        circuit_breaker: None,
        outlier_detection: None,
        connect_timeout_ms: crate::options::Options::default().connect_timeout_ms,
    }
}

pub fn dns_target(hostname: &str, port: u16, priority: u32) -> DnsTarget {
    DnsTarget {
        hostname: hostname.into(),
        port,
        priority,
    }
}

pub fn one_host(hostname: &str) -> Discovery {
    Discovery::Dns {
        targets: vec![dns_target(hostname, 443, 0)],
        dns: dns(30_000, LookupFamily::V4Preferred),
    }
}

/// TLS verified against the CA bundle in SDS secret `ca`, expecting `sni` as DNS SAN.
pub fn verified_tls(ca: &str, sni: &str) -> UpstreamTls {
    UpstreamTls {
        sni: Some(sni.into()),
        trust: Trust::Sds(ca.into()),
        subject_alt_names: vec![SanMatch::Dns(sni.into())],
        client_certificate: None,
        min_version: None,
        max_version: None,
        ciphers: vec![],
        ecdh_curves: vec![],
        signature_algorithms: vec![],
        alpn: vec![],
        auto_host_sni: false,
        sni_from_host: false,
    }
}

pub fn insecure_tls() -> UpstreamTls {
    UpstreamTls {
        trust: Trust::InsecureSkipVerify,
        subject_alt_names: vec![],
        ..verified_tls("unused", "insecure.example")
    }
}

pub fn ep(address: EndpointAddress, priority: u32, zone: Option<&str>, hostname: Option<&str>) -> Endpoint {
    Endpoint {
        address,
        priority,
        zone: zone.map(str::to_string),
        hostname: hostname.map(str::to_string),
    }
}

pub fn ip(addr: &str, port: u16) -> EndpointAddress {
    EndpointAddress::Ip(addr.parse().unwrap(), port)
}

pub fn to(backends: &[(Option<&str>, u32)]) -> RouteAction {
    RouteAction::Forward(
        backends
            .iter()
            .map(|(c, w)| WeightedBackend {
                cluster: c.map(Name::new),
                weight: *w,
                filters: Default::default(),
            })
            .collect(),
    )
}

pub fn route(name: &str, path: PathMatch, action: RouteAction) -> Route {
    Route {
        name: name.into(),
        path,
        headers: vec![],
        query_params: vec![],
        method: None,
        action,
        grpc: false,
        filters: Default::default(),
    }
}

pub fn vhost(name: &str, domains: &[&str], routes: Vec<Route>) -> VirtualHost {
    VirtualHost {
        name: name.into(),
        domains: domains.iter().map(|d| d.to_string()).collect(),
        routes,
    }
}

pub fn prefix(p: &str) -> PathMatch {
    PathMatch::Prefix(p.into())
}

/// A dynamic forward proxy carrying the authority guard of `g`.
pub fn dfp(dns: DnsSettings, g: &crate::options::Guardrails) -> Discovery {
    Discovery::DynamicForwardProxy {
        dns,
        deny_authorities: crate::gateway::policy::authority_deny_regexes(g),
        allow_authorities: crate::gateway::policy::authority_allow_regexes(g),
    }
}

/// Guardrails with loopback allowed and a hostname allow-list.
pub fn allow_listed() -> crate::options::Guardrails {
    crate::options::Guardrails {
        allow_loopback: true,
        allowed_hostnames: Some(vec![
            "api.example.com".into(),
            "*.svc.example.org".into(),
            "localhost".into(),
        ]),
        ..Default::default()
    }
}
