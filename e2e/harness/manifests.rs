//! Builders for the manifests the scenarios write into pier's config directory. They produce
//! `serde_json::Value`s rendered as YAML by serde-saphyr, so PEM blocks, ports and names are always escaped
//! and indented correctly — hand-templated YAML with embedded certificates is easy to get subtly wrong. The
//! shapes follow the bundled examples and `testdata/*/input.yaml`. Everything lives in namespace `default`.

use serde_json::{Value, json};

use pier::testkit::pki::Leaf;

pub const NS: &str = "default";
pub const XBACKEND_GROUP: &str = "gateway.networking.x-k8s.io";
pub const BACKEND_GROUP: &str = "gateway.networking.k8s.io";
pub const EG_GROUP: &str = "gateway.envoyproxy.io";

/// A multi-document YAML file.
pub fn yaml(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| pier::model::yaml::to_yaml(d).expect("YAML"))
        .collect::<Vec<_>>()
        .join("---\n")
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": NS, "generation": 1})
}

pub fn gateway_class() -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "pier"},
        "spec": {"controllerName": "pier.dev/gateway-controller"}})
}

/// A Gateway with one plain-HTTP listener on `port`.
pub fn gateway(name: &str, port: u16) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": meta(name),
        "spec": {"gatewayClassName": "pier", "listeners": [{"name": "http", "protocol": "HTTP", "port": port}]}})
}

/// [`gateway`] whose proxies present the client certificate in Secret `client_secret` to upstreams that
/// ask for one (`spec.tls.backend.clientCertificateRef`).
pub fn gateway_with_client_cert(name: &str, port: u16, client_secret: &str) -> Value {
    let mut gw = gateway(name, port);
    gw["spec"]["tls"] = json!({"backend": {"clientCertificateRef": {"name": client_secret}}});
    gw
}

/// An HTTPRoute attached to `gateway`.
pub fn http_route(name: &str, gateway: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": meta(name),
        "spec": {"parentRefs": [{"name": gateway}], "rules": rules}})
}

/// A GRPCRoute attached to `gateway`.
pub fn grpc_route(name: &str, gateway: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GRPCRoute", "metadata": meta(name),
        "spec": {"parentRefs": [{"name": gateway}], "rules": rules}})
}

/// Sets an object's `metadata.creationTimestamp` (RFC 3339), which route precedence breaks ties with.
pub fn created(mut object: Value, timestamp: &str) -> Value {
    object["metadata"]["creationTimestamp"] = json!(timestamp);
    object
}

/// A rule matching the path prefix `prefix`.
pub fn rule(prefix: &str, backend_refs: Vec<Value>) -> Value {
    json!({"matches": [{"path": {"type": "PathPrefix", "value": prefix}}], "backendRefs": backend_refs})
}

/// A backendRef of any group/kind (empty group: core).
pub fn backend_ref(group: &str, kind: &str, name: &str) -> Value {
    json!({"group": group, "kind": kind, "name": name})
}

pub fn xbackend_ref(name: &str) -> Value {
    backend_ref(XBACKEND_GROUP, "XBackend", name)
}

pub fn service_ref(name: &str, port: u16) -> Value {
    json!({"name": name, "port": port})
}

/// Sets a backendRef's weight.
pub fn weighted(mut backend_ref: Value, weight: u32) -> Value {
    backend_ref["weight"] = json!(weight);
    backend_ref
}

/// A ConfigMap holding a CA bundle under `ca.crt`.
pub fn ca_config_map(name: &str, pem: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
        "data": {"ca.crt": pem}})
}

/// A `kubernetes.io/tls` Secret holding `leaf`.
pub fn tls_secret(name: &str, leaf: &Leaf) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
        "type": "kubernetes.io/tls", "stringData": {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem}})
}

/// An ExternalHostname XBackend on `hostname:port`, with an optional `spec.tls` block.
pub fn xbackend_hostname(name: &str, hostname: &str, port: u16, tls: Option<Value>) -> Value {
    let mut spec = json!({"type": "ExternalHostname", "externalHostname": {"hostname": hostname},
        "port": {"port": port}});
    if let Some(tls) = tls {
        spec["tls"] = tls;
    }
    let api_version = format!("{XBACKEND_GROUP}/v1alpha1");
    json!({"apiVersion": api_version, "kind": "XBackend", "metadata": meta(name), "spec": spec})
}

/// An XBackend `tls` block: `mode`, SNI/identity `hostname`, trust from ConfigMap `ca_config_map`.
pub fn backend_tls(mode: &str, hostname: &str, ca_config_map: &str) -> Value {
    json!({"mode": mode, "validation": {"hostname": hostname,
        "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": ca_config_map}]}})
}

/// An EndpointSelector XBackend decorating Service `service` (its port `port`).
pub fn xbackend_selector(name: &str, service: &str, port: u16) -> Value {
    json!({"apiVersion": format!("{XBACKEND_GROUP}/v1alpha1"), "kind": "XBackend", "metadata": meta(name),
        "spec": {"type": "EndpointSelector", "endpointSelector": {"selectorRef": {"name": service}},
            "port": {"port": port}}})
}

/// A Service with one port `port` named `port_name`.
pub fn service(name: &str, port_name: &str, port: u16) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
        "spec": {"ports": [{"name": port_name, "port": port, "targetPort": port}]}})
}

/// Service `name` (port 80, named `http`, no `appProtocol`) and the EndpointSlice that puts its one ready
/// endpoint at `ip:port` — the usual way a scenario puts one upstream behind a Service.
pub fn service_at(name: &str, ip: &str, port: u16) -> [Value; 2] {
    [
        service(name, "http", 80),
        endpoint_slice(&format!("{name}-1"), name, "http", port, &[(ip, true)]),
    ]
}

/// An IPv4 EndpointSlice of Service `service` whose port `port_name` is `port`; `endpoints` are
/// `(address, ready)`.
pub fn endpoint_slice(name: &str, service: &str, port_name: &str, port: u16, endpoints: &[(&str, bool)]) -> Value {
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|(ip, ready)| json!({"addresses": [ip], "conditions": {"ready": ready}}))
        .collect();
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": NS, "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4", "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
        "endpoints": endpoints})
}

/// An Envoy Gateway Backend with one `ip` endpoint.
pub fn eg_backend_ip(name: &str, ip: &str, port: u16, app_protocols: &[&str]) -> Value {
    let mut spec = json!({"endpoints": [{"ip": {"address": ip, "port": port}}]});
    if !app_protocols.is_empty() {
        spec["appProtocols"] = json!(app_protocols);
    }
    json!({"apiVersion": format!("{EG_GROUP}/v1alpha1"), "kind": "Backend", "metadata": meta(name), "spec": spec})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_multi_document_yaml_with_block_safe_strings() {
        let text = yaml(&[
            gateway("gw", 18080),
            ca_config_map("ca", "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n"),
        ]);
        // Split the way pier does (a YAML stream), not on "---", which every PEM line also contains.
        let docs: Vec<Value> = pier::model::yaml::values("manifests", &text)
            .unwrap()
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["spec"]["listeners"][0]["port"], 18080);
        assert!(
            docs[1]["data"]["ca.crt"]
                .as_str()
                .unwrap()
                .ends_with("-----END CERTIFICATE-----\n")
        );
    }
}
