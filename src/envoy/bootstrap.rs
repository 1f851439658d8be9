//! A bootstrap that holds one Gateway's resources as *static* resources, so `envoy --mode validate`
//! checks every one of them: the proto constraints (PGV), the extension configs inside `Any`s, and the
//! cross-references Envoy resolves at load time. Built by editing the rendered JSON, so what is validated
//! is exactly what `render` prints and ADS serves, with three deliberate changes:
//!
//! - listeners get the referenced RouteConfiguration inline instead of RDS (`validate_clusters: false`,
//!   since weighted entries name the never-existing invalid-backend cluster on purpose);
//! - SDS references lose their `sds_config`, which makes Envoy resolve them against
//!   `static_resources.secrets`: a missing or wrong-kind secret fails validation instead of waiting on
//!   an SDS fetch that never comes;
//! - each ClusterLoadAssignment becomes the `load_assignment` of an extra STATIC cluster
//!   `__cla_check/<name>` (EDS content is otherwise never loaded statically);
//! - a proxyless cluster's `ca_certificate_provider_instance` (a CA file on a gRPC client's disk, which
//!   Envoy does not implement) becomes the SDS reference of the same name: pier names each instance
//!   after its CA's secret (`envoy::proxyless::tls`), so given the Gateway's secrets, validation also
//!   checks that the name is a CA pier serves.
//!
//! EDS clusters keep their ADS `eds_config`; `dynamic_resources.ads_config` (to a static `xds_cluster`)
//! makes those references valid. Their endpoints are then checked only through the `__cla_check` copy.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Resources;
use super::pb::ext;
use super::render::to_json;

/// The static cluster the validation bootstrap's ADS config points at.
pub const XDS_CLUSTER: &str = "xds_cluster";
/// Name prefix of the STATIC clusters that carry each ClusterLoadAssignment for validation.
pub const CLA_CHECK_PREFIX: &str = "__cla_check/";

pub fn validation_bootstrap(res: &Resources) -> Value {
    let routes: BTreeMap<&str, Value> = res
        .routes
        .iter()
        .map(|r| {
            let mut json = to_json(r);
            json["validate_clusters"] = json!(false);
            (r.name.as_str(), json)
        })
        .collect();

    let mut clusters = vec![xds_cluster()];
    clusters.extend(res.clusters.iter().map(to_json).map(|mut c| {
        ca_instance_as_sds(&mut c);
        c
    }));
    clusters.extend(res.endpoints.iter().map(|cla| {
        json!({
            "name": format!("{CLA_CHECK_PREFIX}{}", cla.cluster_name),
            "type": "STATIC",
            "connect_timeout": "1s",
            "load_assignment": to_json(cla),
        })
    }));

    let mut listeners: Vec<Value> = res.listeners.iter().map(to_json).collect();
    for l in &mut listeners {
        api_listener_as_chain(l);
        inline_routes(l, &routes);
    }

    let mut bootstrap = json!({
        "node": { "id": "pier-validate", "cluster": "pier-validate" },
        "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } } },
        "dynamic_resources": {
            "ads_config": {
                "api_type": "GRPC",
                "transport_api_version": "V3",
                "grpc_services": [ { "envoy_grpc": { "cluster_name": XDS_CLUSTER } } ],
            },
        },
        "static_resources": {
            "clusters": clusters,
            "listeners": listeners,
            "secrets": res.secrets.iter().map(to_json).collect::<Vec<_>>(),
        },
    });
    use_static_secrets(&mut bootstrap["static_resources"]);
    bootstrap
}

/// ADS over gRPC needs HTTP/2 to the management server.
fn xds_cluster() -> Value {
    json!({
        "name": XDS_CLUSTER,
        "type": "STATIC",
        "connect_timeout": "1s",
        "typed_extension_protocol_options": {
            (ext::HTTP_PROTOCOL_OPTIONS): {
                "@type": format!("type.googleapis.com/{}", ext::HTTP_PROTOCOL_OPTIONS),
                "explicit_http_config": { "http2_protocol_options": {} },
            },
        },
        "load_assignment": {
            "cluster_name": XDS_CLUSTER,
            "endpoints": [ { "lb_endpoints": [ { "endpoint": { "address": {
                "socket_address": { "address": "127.0.0.1", "port_value": 18000 },
            } } } ] } ],
        },
    })
}

/// A proxyless client's API listener (`envoy::proxyless`) as an ordinary listener on an ephemeral
/// loopback port with the same connection manager: Envoy takes one API listener, from its bootstrap
/// only, so this is how every one of them gets Envoy's validation of the connection manager and routes.
fn api_listener_as_chain(listener: &mut Value) {
    let Some(map) = listener.as_object_mut() else { return };
    let Some(api) = map.remove("api_listener") else { return };
    map.insert(
        "address".to_string(),
        json!({ "socket_address": { "address": "127.0.0.1", "port_value": 0 } }),
    );
    map.insert(
        "filter_chains".to_string(),
        json!([{ "filters": [{ "name": ext::HTTP_CONNECTION_MANAGER, "typed_config": api["api_listener"] }] }]),
    );
}

/// Replaces each HTTP connection manager's `rds` by the referenced route configuration. An unknown name
/// keeps its `rds` (valid with ADS configured); `check` reports it.
fn inline_routes(listener: &mut Value, routes: &BTreeMap<&str, Value>) {
    let Some(chains) = listener["filter_chains"].as_array_mut() else {
        return;
    };
    for filter in chains.iter_mut().filter_map(|c| c["filters"].as_array_mut()).flatten() {
        if filter["name"] != ext::HTTP_CONNECTION_MANAGER {
            continue;
        }
        let Some(hcm) = filter["typed_config"].as_object_mut() else {
            continue;
        };
        let name = hcm
            .get("rds")
            .and_then(|r| r["route_config_name"].as_str())
            .map(str::to_string);
        if let Some(route) = name.and_then(|n| routes.get(n.as_str())) {
            hcm.remove("rds");
            hcm.insert("route_config".to_string(), route.clone());
        }
    }
}

/// Rewrites a TLS cluster's `validation_context` naming a CA instance into the combined form whose SDS
/// secret is that name.
fn ca_instance_as_sds(cluster: &mut Value) {
    let common = cluster.pointer_mut("/transport_socket/typed_config/common_tls_context");
    let Some(map) = common.and_then(Value::as_object_mut) else {
        return;
    };
    let Some(mut validation) = map.remove("validation_context") else {
        return;
    };
    let instance = validation
        .as_object_mut()
        .and_then(|v| v.remove("ca_certificate_provider_instance"));
    match instance {
        Some(i) => {
            let name = i["instance_name"].clone();
            map.insert(
                "combined_validation_context".to_string(),
                json!({
                    "default_validation_context": validation,
                    "validation_context_sds_secret_config": { "name": name, "sds_config": { "ads": {} } },
                }),
            );
        }
        None => {
            map.insert("validation_context".to_string(), validation);
        }
    }
}

/// Drops `sds_config` from every SDS reference, so Envoy looks the name up in the static secrets.
fn use_static_secrets(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("tls_certificate_sds_secret_configs", Value::Array(refs)) => {
                        refs.iter_mut().filter_map(Value::as_object_mut).for_each(|r| {
                            r.remove("sds_config");
                        })
                    }
                    ("validation_context_sds_secret_config", Value::Object(r)) => {
                        r.remove("sds_config");
                    }
                    (_, value) => use_static_secrets(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(use_static_secrets),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::pb::bootstrap;
    use super::super::{build, fixture, render};
    use super::*;

    #[test]
    fn bootstrap_is_a_valid_bootstrap_message() {
        let res = build(&fixture::gateway());
        let boot = validation_bootstrap(&res);
        let parsed = render::from_json::<bootstrap::Bootstrap>(&boot).expect("parses as a Bootstrap");
        let statics = parsed.static_resources.expect("static resources");
        assert_eq!(statics.clusters.len(), 1 + res.clusters.len() + res.endpoints.len());
        assert_eq!(statics.listeners.len(), res.listeners.len());
        assert_eq!(statics.secrets.len(), res.secrets.len());
        let text = boot.to_string();
        assert!(!text.contains("\"rds\""), "every RDS reference is inlined");
        assert!(!text.contains("sds_config"), "every SDS reference is static");
        assert!(text.contains("eds_config"), "EDS clusters keep ADS");
    }
}
