//! HTTPRoute rule features, live: manifests translated by pier and answered by a real Envoy, for what
//! Envoy decides on its own (no upstream needed): redirect `Location` ports (Gateway API's port rules
//! against Envoy's `port_redirect` and the connection manager's port stripping), the CORS filter's
//! answer to preflights (wildcard origins, `*` methods with credentials), and the 500 of a rule whose
//! ExtensionRef cannot be resolved; and, against tiny loopback upstreams written here (one request per
//! connection; `/hang` never answers, `/reset-once/<key>` closes the first connection for `<key>`
//! without answering, `/503-once/<key>` answers it 503): mirrors, request and per-try timeouts, retries
//! on resets and on listed status codes, and a backendRef's own header changes next to the rule's.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    let Some(bin) = pier::testkit::envoy::require() else {
        return;
    };
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let loaded = pier::model::load::parse_texts(&[("live.yaml".to_string(), manifest(port))]).unwrap();
    let opts = pier::Options {
        listener_address: "127.0.0.1".into(),
        ..Default::default()
    };
    let t = pier::translate(&loaded.model, &opts);
    let res = t.resources(Some("default/gw")).expect("gateway resources");
    assert_eq!(pier::envoy::check(&res), Ok(()));
    let boot = static_bootstrap(&res);
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

/// The validation bootstrap without ADS: each EDS cluster becomes STATIC with its ClusterLoadAssignment.
fn static_bootstrap(res: &pier::envoy::Resources) -> serde_json::Value {
    let mut boot = validation_bootstrap(res);
    boot.as_object_mut().unwrap().remove("dynamic_resources");
    for c in boot["static_resources"]["clusters"].as_array_mut().unwrap() {
        if c.as_object_mut().unwrap().remove("eds_cluster_config").is_some() {
            let name = c["name"].as_str().unwrap().to_string();
            let cla = res.endpoints.iter().find(|e| e.cluster_name == name);
            c["type"] = serde_json::json!("STATIC");
            c["load_assignment"] = match cla {
                Some(cla) => pier::envoy::render::to_json(cla),
                None => serde_json::json!({ "cluster_name": name }),
            };
        }
    }
    boot
}

/// A loopback upstream that records the head (request line and headers) of every request it reads.
struct Upstream {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (seen, reset) = (heads.clone(), Arc::new(Mutex::new(BTreeSet::new())));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (seen, reset) = (seen.clone(), reset.clone());
                std::thread::spawn(move || serve(conn, &seen, &reset));
            }
        });
        Upstream { port, heads }
    }

    fn paths(&self) -> Vec<String> {
        let heads = self.heads.lock().unwrap();
        heads
            .iter()
            .map(|h| h.split(' ').nth(1).unwrap_or_default().to_string())
            .collect()
    }

    /// The head of the first request to `path`.
    fn head(&self, path: &str) -> Option<String> {
        let heads = self.heads.lock().unwrap();
        heads.iter().find(|h| h.split(' ').nth(1) == Some(path)).cloned()
    }
}

fn serve(mut conn: TcpStream, seen: &Mutex<Vec<String>>, reset: &Mutex<BTreeSet<String>>) {
    let mut head = Vec::new();
    let mut buf = [0; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or_default().to_string();
    seen.lock().unwrap().push(head);
    if path.contains("/hang") {
        std::thread::sleep(Duration::from_secs(5));
        return;
    }
    if let Some(key) = path.split("/reset-once/").nth(1)
        && reset.lock().unwrap().insert(key.to_string())
    {
        return; // dropped: the connection closes with no response
    }
    if let Some(key) = path.split("/503-once/").nth(1)
        && reset.lock().unwrap().insert(key.to_string())
    {
        let _ = conn.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    }
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
}

fn backend_manifest(port: u16, primary: u16, shadow: u16) -> String {
    let service = |name: &str, target: u16| {
        format!(
            r#"
---
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec:
  ports: [{{name: http, port: 80}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: {name}-1, namespace: default, labels: {{kubernetes.io/service-name: {name}}}}}
addressType: IPv4
ports: [{{name: http, port: {target}}}]
endpoints: [{{addresses: ["127.0.0.1"]}}]
"#
        )
    };
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
{primary_svc}{shadow_svc}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: live, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /mirror}}}}]
    filters: [{{type: RequestMirror, requestMirror: {{backendRef: {{name: shadow, port: 80}}}}}}]
    backendRefs: [{{name: primary, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /timeout}}}}]
    timeouts: {{request: 300ms}}
    backendRefs: [{{name: primary, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /per-try}}}}]
    timeouts: {{backendRequest: 200ms}}
    retry: {{attempts: 1}}
    backendRefs: [{{name: primary, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /retry}}}}]
    retry: {{attempts: 2}}
    backendRefs: [{{name: primary, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /codes}}}}]
    retry: {{attempts: 1, codes: [503]}}
    backendRefs: [{{name: primary, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /no-retry}}}}]
    backendRefs: [{{name: primary, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /headers}}}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {{set: [{{name: x-who, value: rule}}]}}
    backendRefs:
    - name: primary
      port: 80
      filters:
      - type: RequestHeaderModifier
        requestHeaderModifier: {{set: [{{name: x-who, value: backend}}, {{name: x-backend, value: primary}}]}}
"#,
        primary_svc = service("primary", primary),
        shadow_svc = service("shadow", shadow),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envoy_mirrors_times_out_and_retries_as_configured() {
    let Some(bin) = pier::testkit::envoy::require() else {
        return;
    };
    let (primary, shadow) = (Upstream::start(), Upstream::start());
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let text = backend_manifest(port, primary.port, shadow.port);
    let loaded = pier::model::load::parse_texts(&[("live.yaml".to_string(), text)]).unwrap();
    let mut opts = pier::Options {
        listener_address: "127.0.0.1".into(),
        ..Default::default()
    };
    opts.guardrails.allow_loopback = true;
    let res = pier::translate(&loaded.model, &opts)
        .resources(Some("default/gw"))
        .expect("gateway resources");
    assert_eq!(pier::envoy::check(&res), Ok(()));
    let work = tempfile::tempdir().unwrap();
    let envoy = pier::testkit::envoy::Envoy::start(&bin, &static_bootstrap(&res), work.path(), "route-backends")
        .await
        .unwrap();
    envoy.wait_live(Duration::from_secs(30)).await.unwrap();
    let get = |path: &str| status(&request(port, "GET", path, &[]));

    assert_eq!(get("/mirror/a"), 200);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !shadow.paths().contains(&"/mirror/a".to_string()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(shadow.paths(), vec!["/mirror/a".to_string()], "the mirror got a copy");

    let started = Instant::now();
    assert_eq!(get("/timeout/hang"), 504);
    assert!(started.elapsed() < Duration::from_secs(3), "request timeout 300ms");

    assert_eq!(get("/per-try/hang"), 504);
    let tries = primary.paths().iter().filter(|p| *p == "/per-try/hang").count();
    assert_eq!(tries, 2, "a per-try timeout is retried (1 retry)");

    assert_eq!(get("/retry/reset-once/a"), 200, "a reset connection is retried");
    assert_eq!(
        get("/no-retry/reset-once/b"),
        503,
        "no retry policy: the reset is the answer"
    );

    assert_eq!(get("/codes/503-once/c"), 200, "a listed status code is retried");
    assert_eq!(get("/retry/503-once/d"), 503, "an unlisted one is not");

    assert_eq!(get("/headers"), 200);
    let head = primary.head("/headers").expect("request seen").to_ascii_lowercase();
    assert!(
        head.contains("x-backend: primary"),
        "the backendRef's own header: {head}"
    );
    assert!(
        head.contains("x-who: rule") && !head.contains("x-who: backend"),
        "the rule's value wins over the backend's: {head}"
    );
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
