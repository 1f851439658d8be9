//! A cluster as people need to see it: where it came from (its `pier.dev` metadata), how Envoy finds
//! the upstream (DNS names, or the endpoints pier sends), how it speaks HTTP, its limits, and the TLS it
//! asks for. Secrets are described by what they hold (how many certificates, which file), never shown.

use serde_json::Value;

use super::envoy::{GatewayIndex, strings};
use super::model::{ClusterView, Discovery, Origin, TlsView};

const HTTP_OPTIONS: &str = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";

pub fn view(index: &GatewayIndex<'_>, name: &str) -> ClusterView {
    let Some(c) = index.clusters.get(name).copied() else {
        return ClusterView {
            name: name.to_string(),
            origin: None,
            discovery: Discovery::Missing,
            protocol: None,
            connect_timeout: None,
            circuit_breakers: Vec::new(),
            outlier_detection: None,
            tls: None,
        };
    };
    let http = &c["typed_extension_protocol_options"][HTTP_OPTIONS];
    let tls = &c["transport_socket"]["typed_config"];
    ClusterView {
        name: name.to_string(),
        origin: origin(c),
        discovery: discovery(index, c),
        protocol: protocol(http, tls.is_object()),
        connect_timeout: c["connect_timeout"].as_str().map(str::to_string),
        circuit_breakers: c["circuit_breakers"]["thresholds"]
            .as_array()
            .into_iter()
            .flatten()
            .map(fields)
            .collect(),
        outlier_detection: c.get("outlier_detection").map(fields),
        tls: tls.is_object().then(|| tls_view(index, tls, http)),
    }
}

/// The `pier.dev` metadata pier records on every cluster.
pub fn origin(cluster: &Value) -> Option<Origin> {
    let m = &cluster["metadata"]["filter_metadata"]["pier.dev"];
    Some(Origin {
        kind: m["kind"].as_str()?.to_string(),
        namespace: m["namespace"].as_str()?.to_string(),
        name: m["name"].as_str()?.to_string(),
        port: m["port"].as_f64().unwrap_or_default() as u64,
    })
}

/// Member clusters of an aggregate (failover) cluster.
pub fn members(cluster: &Value) -> Vec<String> {
    match cluster["cluster_type"]["name"].as_str() {
        Some("envoy.clusters.aggregate") => strings(&cluster["cluster_type"]["typed_config"]["clusters"]),
        _ => Vec::new(),
    }
}

fn discovery(index: &GatewayIndex<'_>, c: &Value) -> Discovery {
    let typed = &c["cluster_type"]["typed_config"];
    match (c["cluster_type"]["name"].as_str(), c["type"].as_str()) {
        (Some("envoy.clusters.dns"), _) => Discovery::StrictDns {
            targets: lb_endpoints(&c["load_assignment"]),
            settings: dns_settings(typed),
        },
        (Some("envoy.clusters.aggregate"), _) => Discovery::Aggregate { clusters: members(c) },
        (Some("envoy.clusters.dynamic_forward_proxy"), _) => Discovery::DynamicForwardProxy {
            dns_cache: typed["dns_cache_config"]["name"].as_str().map(str::to_string),
        },
        (_, Some("EDS")) => {
            let service_name = c["eds_cluster_config"]["service_name"]
                .as_str()
                .or(c["name"].as_str())
                .unwrap_or_default()
                .to_string();
            let endpoints = index.endpoints.get(service_name.as_str()).map(|e| lb_endpoints(e));
            Discovery::Eds {
                service_name,
                endpoints,
            }
        }
        (name, kind) => Discovery::Other {
            description: name.or(kind).unwrap_or("STATIC").to_string(),
        },
    }
}

fn dns_settings(dns: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(f) = dns["dns_lookup_family"].as_str() {
        out.push(f.to_string());
    }
    if let Some(r) = dns["dns_refresh_rate"].as_str() {
        out.push(format!("refresh {r}"));
    }
    if dns["respect_dns_ttl"].as_bool() == Some(true) {
        out.push("DNS TTL respected".to_string());
    }
    let resolvers = dns["typed_dns_resolver_config"]["typed_config"]["resolvers"].as_array();
    for r in resolvers.into_iter().flatten() {
        out.push(format!("resolver {}", socket_address(&r["socket_address"])));
    }
    out
}

/// Every endpoint of a ClusterLoadAssignment (or a cluster's `load_assignment`), for people.
fn lb_endpoints(cla: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for group in cla["endpoints"].as_array().into_iter().flatten() {
        let mut tags = Vec::new();
        if let Some(p) = group["priority"].as_u64().filter(|p| *p > 0) {
            tags.push(format!("priority {p}"));
        }
        if let Some(z) = group["locality"]["zone"].as_str() {
            tags.push(format!("zone {z}"));
        }
        for e in group["lb_endpoints"].as_array().into_iter().flatten() {
            let mut tags = tags.clone();
            if let Some(h) = e["endpoint"]["hostname"].as_str() {
                tags.push(format!("hostname {h}"));
            }
            if let Some(h) = e["health_status"].as_str() {
                tags.push(h.to_string());
            }
            let address = &e["endpoint"]["address"];
            let at = match address["pipe"]["path"].as_str() {
                Some(path) => format!("unix:{path}"),
                None => socket_address(&address["socket_address"]),
            };
            out.push(if tags.is_empty() {
                at
            } else {
                format!("{at} ({})", tags.join(", "))
            });
        }
    }
    out
}

fn socket_address(sa: &Value) -> String {
    format!(
        "{}:{}",
        sa["address"].as_str().unwrap_or_default(),
        sa["port_value"].as_u64().unwrap_or_default()
    )
}

/// How the cluster speaks HTTP (`HttpProtocolOptions`).
fn protocol(http: &Value, tls: bool) -> Option<String> {
    let explicit = &http["explicit_http_config"];
    Some(if explicit.get("http2_protocol_options").is_some() {
        if tls { "HTTP/2" } else { "HTTP/2 (h2c, cleartext)" }.to_string()
    } else if explicit.get("http_protocol_options").is_some() {
        "HTTP/1.1".to_string()
    } else if http.get("auto_config").is_some() {
        "HTTP/1.1 or HTTP/2, chosen by ALPN".to_string()
    } else {
        return None;
    })
}

/// An object's fields as `key value, ...` (circuit-breaker thresholds, outlier detection).
fn fields(v: &Value) -> String {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k} {s}"),
            other => format!("{k} {other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn tls_view(index: &GatewayIndex<'_>, ctx: &Value, http: &Value) -> TlsView {
    let common = &ctx["common_tls_context"];
    let upstream_http = &http["upstream_http_protocol_options"];
    let sni = match ctx["sni"].as_str() {
        _ if ctx["auto_host_sni"].as_bool() == Some(true) => "from each endpoint's hostname".to_string(),
        _ if upstream_http["auto_sni"].as_bool() == Some(true) => "from the request's Host header".to_string(),
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "none".to_string(),
    };
    let combined = &common["combined_validation_context"];
    let ca = combined["validation_context_sds_secret_config"]["name"]
        .as_str()
        .or(common["validation_context_sds_secret_config"]["name"].as_str());
    let trust = match ca {
        Some(name) => format!("CA bundle in SDS secret {name} ({})", describe_ca(index, name)),
        None => "none: the upstream certificate is not verified".to_string(),
    };
    let mut san_checks: Vec<String> = combined["default_validation_context"]["match_typed_subject_alt_names"]
        .as_array()
        .into_iter()
        .flatten()
        .map(san_check)
        .collect();
    if ctx["auto_sni_san_validation"].as_bool() == Some(true) {
        san_checks.push("the SNI sent (each endpoint's hostname)".to_string());
    }
    if upstream_http["auto_san_validation"].as_bool() == Some(true) {
        san_checks.push("the SNI sent (the request's Host)".to_string());
    }
    let client_certificate = common["tls_certificate_sds_secret_configs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .map(|n| format!("SDS secret {n} ({})", describe_cert(index, n)))
        .next();
    let params = &common["tls_params"];
    TlsView {
        sni,
        trust,
        san_checks,
        client_certificate,
        versions: versions(params),
        alpn: strings(&common["alpn_protocols"]),
        parameters: ["cipher_suites", "ecdh_curves", "signature_algorithms"]
            .into_iter()
            .filter_map(|k| {
                let v = strings(&params[k]);
                (!v.is_empty()).then(|| format!("{k}: {}", v.join(", ")))
            })
            .collect(),
    }
}

fn versions(params: &Value) -> Option<String> {
    let min = params["tls_minimum_protocol_version"].as_str();
    let max = params["tls_maximum_protocol_version"].as_str();
    match (min, max) {
        (None, None) => None,
        (min, max) => Some(format!(
            "{}..{}",
            min.unwrap_or("Envoy's minimum"),
            max.unwrap_or("Envoy's maximum")
        )),
    }
}

/// `DNS exact api.example.com`.
fn san_check(m: &Value) -> String {
    let kind = m["san_type"].as_str().unwrap_or("SAN");
    let matcher = m["matcher"].as_object();
    let how = matcher
        .into_iter()
        .flatten()
        .find(|(k, _)| *k != "ignore_case")
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k} {s}"),
            other => format!("{k} {other}"),
        })
        .unwrap_or_default();
    format!("{kind} {how}")
}

fn describe_ca(index: &GatewayIndex<'_>, name: &str) -> String {
    let Some(s) = index.secrets.get(name) else {
        return "not served".to_string();
    };
    let ca = &s["validation_context"]["trusted_ca"];
    match (ca["filename"].as_str(), ca["inline_string"].as_str()) {
        (Some(file), _) => format!("the file {file}"),
        (_, Some(pem)) => certificates(pem),
        _ => "no CA".to_string(),
    }
}

fn describe_cert(index: &GatewayIndex<'_>, name: &str) -> String {
    let Some(s) = index.secrets.get(name) else {
        return "not served".to_string();
    };
    match s["tls_certificate"]["certificate_chain"]["inline_string"].as_str() {
        Some(pem) => format!("chain of {}", certificates(pem)),
        None => "no certificate".to_string(),
    }
}

fn certificates(pem: &str) -> String {
    match pem.matches("-----BEGIN CERTIFICATE-----").count() {
        1 => "1 certificate".to_string(),
        n => format!("{n} certificates"),
    }
}
