//! A kind the API server refuses (403, as a ClusterRole without it would) costs only what needs it: pier
//! publishes everything else, says in the status of each object that needs the kind which kind and why,
//! names it in `/readyz` and `pier_source_kind_available`, fails closed where the kind could turn TLS off
//! or widen access, and picks the kind up without a restart once it is granted.

use std::time::Duration;

use serde_json::Value;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{Pier, base_model, settings};

const QUIET: Duration = Duration::from_millis(30);

/// An XBackend of type EndpointSelector over the Pods labelled `app: web`, one such Pod, and a rule
/// `/pods` of a second route to it.
fn pods_world() -> String {
    "---\napiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: web, namespace: default}\n\
     spec: {type: EndpointSelector, endpointSelector: {matchLabels: {app: web}}, port: {number: 8080}}\n---\n\
     apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: default, labels: {app: web}}\n\
     spec: {containers: [{name: app, image: example.com/app:1}]}\n\
     status: {phase: Running, podIP: 10.9.0.1, podIPs: [{ip: 10.9.0.1}], conditions: [{type: Ready, status: 'True'}]}\n---\n\
     apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: pods, namespace: default}\n\
     spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /pods}}]\n    \
     backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: web}]\n"
        .to_string()
}

/// The status pier computed for `kind` `ns/name` (`/debug/status` `objects`), as text.
async fn status_of(pier: &Pier, kind: &str, name: &str) -> String {
    let (_, status) = pier.get("/debug/status").await;
    status["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .map(Value::to_string)
        .unwrap_or_default()
}

async fn wait_status(pier: &Pier, kind: &str, name: &str, want: &str) -> String {
    let deadline = tokio::time::Instant::now() + crate::kube_support::WAIT;
    loop {
        let s = status_of(pier, kind, name).await;
        if s.contains(want) {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{kind} {name}: no {want:?} in its status: {s}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `pier_source_kind_available{kind="KIND"}`.
async fn available(pier: &Pier, kind: &str) -> Option<u64> {
    let r = pier::testkit::http::get(pier.admin, &pier.admin.to_string(), "/metrics")
        .await
        .expect("metrics");
    let prefix = format!("pier_source_kind_available{{kind=\"{kind}\"}} ");
    r.body
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_pods_cost_only_the_backends_that_select_pods() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&(base_model() + &pods_world()));
    api.forbid("pods");
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    // Everything else is published: the route to Service a.
    pier.wait_dump("the model without Pods", |d| d.contains("service/default/a/80"))
        .await;
    let (code, ready) = pier.get("/readyz").await;
    assert_eq!(code, 200, "{ready}");
    let kinds = ready["unavailable_kinds"].to_string();
    assert!(
        kinds.contains("\"kind\":\"Pod\"") && kinds.contains("forbidden"),
        "{ready}"
    );
    assert_eq!(available(&pier, "Pod").await, Some(0));
    assert_eq!(available(&pier, "Service").await, Some(1));
    // The XBackend that selects Pods says why it has no endpoints, and its share of /pods answers 500.
    let xb = wait_status(&pier, "XBackend", "web", "Pods cannot be read (forbidden").await;
    assert!(xb.contains("\"status\":\"False\""), "{xb}");
    let route = wait_status(&pier, "HTTPRoute", "pods", "Pods cannot be read").await;
    assert!(route.contains("ResolvedRefs"), "{route}");
    assert!(!pier.dump().await.contains("10.9.0.1"), "no endpoint was guessed");

    // Granted: picked up without a restart.
    api.permit("pods");
    pier.wait_dump("the Pod's endpoint", |d| d.contains("10.9.0.1")).await;
    assert!(
        pier.get("/readyz").await.1["unavailable_kinds"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
    assert_eq!(available(&pier, "Pod").await, Some(1));
    pier.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_policies_refuse_service_backends_rather_than_risk_plaintext() {
    let api = FakeApiServer::start(&[]).await;
    // An XBackend with TLS of its own is unaffected: no policy can target it.
    let xb = "---\napiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: ext, namespace: default}\n\
              spec: {type: ExternalHostname, externalHostname: {hostname: api.example.com}, port: {number: 443}, \
              tls: {mode: ServerOnly, validation: {hostname: api.example.com, wellKnownCACertificates: System}}}\n---\n\
              apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: ext, namespace: default}\n\
              spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /ext}}]\n    \
              backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: ext}]\n";
    api.apply_yaml(&(base_model() + xb));
    api.forbid("backendtlspolicies");
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("the XBackend's cluster", |d| d.contains("xbackend/default/ext/443"))
        .await;
    let route = wait_status(&pier, "HTTPRoute", "route", "BackendTLSPolicies cannot be read").await;
    assert!(route.contains("rather than risk plaintext"), "{route}");
    assert!(
        !pier.dump().await.contains("service/default/a/80"),
        "a Service a policy may ask TLS for is not served in plaintext"
    );
    api.permit("backendtlspolicies");
    pier.wait_dump("Service a once policies can be read", |d| {
        d.contains("service/default/a/80")
    })
    .await;
    pier.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_grants_never_widen_access() {
    let api = FakeApiServer::start(&[]).await;
    // A route in namespace team to Service a in default, which a ReferenceGrant allows.
    let cross = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: cross, namespace: team}\n\
                 spec:\n  parentRefs: [{name: gw, namespace: default}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /x}}]\n    \
                 backendRefs: [{name: b, namespace: default, port: 80}]\n---\n\
                 apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: team, namespace: default}\n\
                 spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: team}], to: [{group: '', kind: Service}]}\n";
    api.apply_yaml(&(base_model() + cross));
    api.forbid("referencegrants");
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("the model", |d| d.contains("service/default/a/80"))
        .await;
    let route = wait_status(&pier, "HTTPRoute", "cross", "ReferenceGrants cannot be read").await;
    assert!(route.contains("RefNotPermitted"), "{route}");
    assert!(!pier.dump().await.contains("service/default/b/80"));
    api.permit("referencegrants");
    pier.wait_dump("the granted reference", |d| d.contains("service/default/b/80"))
        .await;
    pier.stop().await;
}
