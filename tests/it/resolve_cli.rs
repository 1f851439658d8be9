//! `pier translate --resolve-hostnames pier` as a user runs it: one lookup of every hostname Backend
//! against a loopback DNS responder, the answers judged (a denied one dropped and named), the allowed
//! ones served as EDS; and the resolver bounds refused when they contradict each other.

use pier::testkit::dns::Dns;
use pier::testkit::lo;

use crate::cli::pier;

const MANIFEST: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec: {gatewayClassName: pier, listeners: [{name: http, protocol: HTTP, port: 8080}]}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: api, namespace: default}
spec: {type: ExternalHostname, externalHostname: {hostname: api.e2e.test}, port: {port: 443}}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: gone, namespace: default}
spec: {type: ExternalHostname, externalHostname: {hostname: gone.e2e.test}, port: {port: 443}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: egress, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: api, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /gone}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: gone, port: 443}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translate_resolves_once_and_drops_denied_answers() {
    let dns = Dns::start().await.expect("DNS responder");
    dns.set("api.e2e.test", &[lo(5), lo(6)]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.yaml");
    std::fs::write(&file, MANIFEST).unwrap();
    let resolver = dns.addr.to_string();
    let path = file.display().to_string();
    let args = [
        "translate",
        "--output",
        "json",
        "--resolve-hostnames",
        "pier",
        "--allow-loopback",
        "--deny-cidr",
        "127.0.0.6/32",
        "--dns-resolver",
        &resolver,
        &path,
    ];
    let out = tokio::task::block_in_place(|| pier(&args));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = doc.to_string();
    assert!(text.contains("\"type\":\"EDS\""), "{text}");
    assert!(!text.contains("envoy.clusters.dns"), "no STRICT_DNS cluster: {text}");
    assert!(text.contains("\"address\":\"127.0.0.5\""), "{text}");
    assert!(
        !text.contains("\"address\":\"127.0.0.6\""),
        "the denied answer is served: {text}"
    );
    for said in [
        "api.e2e.test resolved to 127.0.0.5, dropped 127.0.0.6 (rule denied-cidr)",
        "gone.e2e.test resolved to no address",
    ] {
        assert!(text.contains(said), "status does not say {said:?}: {text}");
    }
    assert!(dns.queries("api.e2e.test") > 0);
}

#[test]
fn contradictory_resolver_bounds_are_refused_by_name() {
    let out = pier(&["translate", "--dns-min-ttl", "10s", "--dns-max-ttl", "5s", "examples/"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dns-min-ttl") && err.contains("--dns-max-ttl"), "{err}");
    let out = pier(&["translate", "--dns-min-ttl", "5 seconds", "examples/"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dns-min-ttl"));
}
