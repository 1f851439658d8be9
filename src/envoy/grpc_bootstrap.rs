//! The bootstrap a proxyless gRPC client reads (`pier bootstrap --grpc`), beside Envoy's
//! (`ads_bootstrap`), from the same [`BootstrapSpec`], and the certificate providers it declares for
//! verifying TLS backends (`envoy::proxyless::tls`).

use serde_json::{Value, json};

use super::ads_bootstrap::BootstrapSpec;

/// The bootstrap a proxyless gRPC client reads (`GRPC_XDS_BOOTSTRAP`, gRFC A27): pier's addresses as
/// `xds_servers` (gRPC falls back along the list, gRFC A71), `server_features: ["xds_v3"]`, and the node
/// naming the Gateway as Envoy's does. Channel credentials are `insecure`, or with
/// [`XdsTls`](super::ads_bootstrap::XdsTls) gRPC's
/// `tls` credentials presenting the Gateway's client certificate (gRFC A65), which pier authorizes
/// exactly as it does an Envoy's. gRPC speaks state-of-the-world ADS only, so there is no delta
/// variant; it has no admin listener and no DNS resolver setting of its own.
///
/// `trust`: `(instance, CA file)` pairs (`cli::trust_instances` reads them from `--trust-dir`), each a
/// `file_watcher` certificate provider the client verifies TLS backends with (gRFC A29), and all of them
/// listed in the node's metadata, which is how pier knows what this client can verify
/// (`envoy::proxyless::tls`).
pub fn grpc_bootstrap(spec: &BootstrapSpec, trust: &[(String, String)]) -> Value {
    let creds = match &spec.tls {
        None => json!([{ "type": "insecure" }]),
        Some(tls) => json!([{ "type": "tls", "config": {
            "ca_certificate_file": tls.ca,
            "certificate_file": tls.cert,
            "private_key_file": tls.key,
        } }]),
    };
    let servers: Vec<Value> = spec
        .xds
        .iter()
        .map(|(host, port)| {
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host.clone()
            };
            json!({ "server_uri": format!("{host}:{port}"), "channel_creds": creds, "server_features": ["xds_v3"] })
        })
        .collect();
    let mut boot = json!({
        "xds_servers": servers,
        "node": {
            "id": spec.node_id.clone().unwrap_or_else(|| format!("grpc-{}", spec.gateway.replace('/', "-"))),
            "cluster": spec.gateway,
            "locality": {},
        },
    });
    if !trust.is_empty() {
        let providers: serde_json::Map<String, Value> = trust
            .iter()
            .map(|(instance, file)| {
                let config = json!({ "ca_certificate_file": file, "refresh_interval": TRUST_REFRESH });
                (
                    instance.clone(),
                    json!({ "plugin_name": "file_watcher", "config": config }),
                )
            })
            .collect();
        boot["certificate_providers"] = Value::Object(providers);
        let names: Vec<&str> = trust.iter().map(|(i, _)| i.as_str()).collect();
        let mut metadata = serde_json::Map::new();
        metadata.insert(crate::envoy::proxyless::tls::DECLARED.to_string(), json!(names));
        boot["node"]["metadata"] = Value::Object(metadata);
    }
    boot
}

/// How often a gRPC client re-reads its CA files: a rotated ConfigMap reaches it within a minute (gRPC's
/// default is ten).
const TRUST_REFRESH: &str = "60s";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::ads_bootstrap::XdsTls;

    #[test]
    fn a_trust_dir_declares_one_file_watcher_per_ca_file_and_lists_them_in_the_node() {
        let trust = vec![
            (
                "ca/configmap/app/backend-ca".to_string(),
                "/trust/ca/configmap/app/backend-ca.pem".to_string(),
            ),
            ("ca/system".to_string(), "/trust/ca/system.pem".to_string()),
        ];
        let spec = BootstrapSpec {
            gateway: "app/gw".into(),
            xds: vec![("127.0.0.1".into(), 18000)],
            delta: false,
            admin_port: 0,
            node_id: None,
            dns_resolver: None,
            tls: None,
        };
        let boot = grpc_bootstrap(&spec, &trust);
        let provider = &boot["certificate_providers"]["ca/configmap/app/backend-ca"];
        assert_eq!(provider["plugin_name"], "file_watcher");
        assert_eq!(provider["config"]["ca_certificate_file"], trust[0].1.as_str());
        assert_eq!(
            boot["node"]["metadata"][crate::envoy::proxyless::tls::DECLARED],
            json!(["ca/configmap/app/backend-ca", "ca/system"])
        );
    }

    #[test]
    fn a_grpc_bootstrap_names_the_gateway_every_server_and_its_credentials() {
        let mut spec = BootstrapSpec {
            gateway: "demo/edge".into(),
            xds: vec![("10.0.0.1".into(), 18000), ("fd00::1".into(), 18000)],
            delta: false,
            admin_port: 0,
            node_id: None,
            dns_resolver: None,
            tls: None,
        };
        let boot = grpc_bootstrap(&spec, &[]);
        assert_eq!(boot["node"]["cluster"], "demo/edge");
        assert_eq!(boot["node"]["id"], "grpc-demo-edge");
        let servers = boot["xds_servers"].as_array().unwrap();
        assert_eq!(servers[0]["server_uri"], "10.0.0.1:18000");
        assert_eq!(servers[1]["server_uri"], "[fd00::1]:18000");
        assert_eq!(servers[0]["server_features"][0], "xds_v3");
        assert_eq!(servers[0]["channel_creds"][0]["type"], "insecure");
        spec.tls = Some(XdsTls {
            cert: "c.crt".into(),
            key: "c.key".into(),
            ca: "ca.crt".into(),
            server_name: None,
        });
        let creds = &grpc_bootstrap(&spec, &[])["xds_servers"][0]["channel_creds"][0];
        assert!(grpc_bootstrap(&spec, &[])["certificate_providers"].is_null());
        assert_eq!(creds["type"], "tls");
        assert_eq!(creds["config"]["certificate_file"], "c.crt");
        assert_eq!(creds["config"]["ca_certificate_file"], "ca.crt");
    }
}
