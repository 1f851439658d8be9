//! HTTPRoute rule features, live: manifests translated by pier and answered by a real Envoy, for what
//! Envoy decides on its own (no upstream needed): redirect `Location` ports (Gateway API's port rules
//! against Envoy's `port_redirect` and the connection manager's port stripping), the CORS filter's
//! answer to preflights (wildcard origins, `*` methods with credentials), and the 500 of a rule whose
//! ExtensionRef cannot be resolved. Mirrors, timeouts and retries need upstreams: the e2e suite's job.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use pier::envoy::bootstrap::validation_bootstrap;

fn manifest(port: u16) -> String {
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: pier}}
spec: {{controllerName: pier.dev/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: default}}
spec:
  gatewayClassName: pier
  listeners: [{{name: http, protocol: HTTP, port: {port}}}]
---
apiVersion: v1
kind: Service
metadata: {{name: echo, namespace: default}}
spec:
  ports: [{{name: http, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: live, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /to-https}}}}]
    filters: [{{type: RequestRedirect, requestRedirect: {{scheme: https}}}}]
  - matches: [{{path: {{type: PathPrefix, value: /other-host}}}}]
    filters: [{{type: RequestRedirect, requestRedirect: {{hostname: other.test}}}}]
  - matches: [{{path: {{type: PathPrefix, value: /explicit}}}}]
    filters: [{{type: RequestRedirect, requestRedirect: {{port: 8443}}}}]
  - matches: [{{path: {{type: PathPrefix, value: /http-80}}}}]
    filters: [{{type: RequestRedirect, requestRedirect: {{scheme: http, port: 80}}}}]
  - matches: [{{path: {{type: PathPrefix, value: /cors}}}}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["https://*.bar.com"]
        allowMethods: ["*"]
        allowHeaders: ["*"]
        allowCredentials: true
        maxAge: 60
    backendRefs: [{{name: echo, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /extension}}}}]
    filters: [{{type: ExtensionRef, extensionRef: {{group: x.example, kind: Filter, name: f}}}}]
    backendRefs: [{{name: echo, port: 80}}]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envoy_answers_redirects_cors_and_extension_refs_as_gateway_api_says() {
    let Some(bin) = support::envoy::require_envoy() else {
        return;
    };
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let loaded = pier::source::files::parse_texts(&[("live.yaml".to_string(), manifest(port))]).unwrap();
    let opts = pier::Options {
        listener_address: "127.0.0.1".into(),
        ..Default::default()
    };
    let t = pier::translate(&loaded.model, &opts);
    let res = t.resources(Some("default/gw")).expect("gateway resources");
    assert_eq!(pier::envoy::check(&res), Ok(()));
    let mut boot = validation_bootstrap(&res);
    boot.as_object_mut().unwrap().remove("dynamic_resources");
    // Without ADS, EDS clusters would never warm: make them static (the Service has no endpoints anyway;
    // nothing here reaches an upstream).
    for c in boot["static_resources"]["clusters"].as_array_mut().unwrap() {
        if c.as_object_mut().unwrap().remove("eds_cluster_config").is_some() {
            let name = c["name"].clone();
            c["type"] = serde_json::json!("STATIC");
            c["load_assignment"] = serde_json::json!({ "cluster_name": name });
        }
    }
    let work = tempfile::tempdir().unwrap();
    let envoy = pier::testkit::envoy::Envoy::start(&bin, &boot, work.path(), "route-features")
        .await
        .unwrap();
    envoy.wait_live(Duration::from_secs(30)).await.unwrap();

    let get = |path: &str, extra: &[(&str, &str)], method: &str| request(port, method, path, extra);
    let location = |path: &str| header(&get(path, &[], "GET"), "location");
    // Scheme without port: the scheme's well-known port, left out.
    assert_eq!(
        location("/to-https/a").as_deref(),
        Some("https://example.test/to-https/a")
    );
    // Neither: the listener's port (not 80, so written).
    assert_eq!(
        location("/other-host/a").as_deref(),
        Some(format!("http://other.test:{port}/other-host/a").as_str())
    );
    assert_eq!(
        location("/explicit").as_deref(),
        Some("http://example.test:8443/explicit")
    );
    assert_eq!(location("/http-80").as_deref(), Some("http://example.test/http-80"));

    let preflight = |origin: &str| {
        get(
            "/cors",
            &[
                ("origin", origin),
                ("access-control-request-method", "PUT"),
                ("access-control-request-headers", "x-a, x-b"),
            ],
            "OPTIONS",
        )
    };
    let ok = preflight("https://a.b.bar.com");
    assert_eq!(status(&ok), 200, "{ok}");
    assert_eq!(
        header(&ok, "access-control-allow-origin").as_deref(),
        Some("https://a.b.bar.com")
    );
    assert_eq!(
        header(&ok, "access-control-allow-methods").as_deref(),
        Some("PUT"),
        "echoed, not *"
    );
    assert_eq!(header(&ok, "access-control-allow-headers").as_deref(), Some("x-a, x-b"));
    assert_eq!(header(&ok, "access-control-allow-credentials").as_deref(), Some("true"));
    assert_eq!(header(&ok, "access-control-max-age").as_deref(), Some("60"));
    let refused = preflight("https://bar.com.evil.test");
    assert_eq!(header(&refused, "access-control-allow-origin"), None, "{refused}");

    assert_eq!(status(&get("/extension", &[], "GET")), 500);
}

/// The response head Envoy answers (status line and headers), Host `example.test`.
fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> String {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: example.test:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    conn.write_all(req.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0; 1024];
    // The head only: after answering, Envoy waits for the client to close first.
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(n) if n > 0 => answer.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

fn status(head: &str) -> u16 {
    head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}
