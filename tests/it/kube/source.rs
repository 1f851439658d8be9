//! The Kubernetes source end to end: pier's runtime in Kubernetes mode against the in-process fake API
//! server (`tests/it/fake_apiserver/`, because no API server binary can be installed here), observed
//! through the admin API's `/debug/config_dump`.

use std::time::Duration;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{GW_GROUP, Pier, base_model, service, settings};

const QUIET: Duration = Duration::from_millis(30);

/// Create, update and delete of every kind the model holds reach xDS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_of_each_kind_reach_xds() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    // An unreferenced Secret: kept without its data until the HTTPS listener below names it.
    let gateway_example =
        std::fs::read_to_string(format!("{}/examples/00-gateway.yaml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let cert = gateway_example
        .split("\n---\n")
        .find(|d| d.contains("kind: Secret") && d.contains("name: edge-cert"))
        .unwrap()
        .replace("namespace: demo", "namespace: default");
    api.apply_yaml(&cert);
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("base model", |d| d.contains("service/default/a/80"))
        .await;

    // EndpointSlice update.
    api.apply_yaml(&service("a", "10.0.0.9"));
    pier.wait_dump("EndpointSlice update", |d| {
        d.contains("10.0.0.9") && !d.contains("10.0.0.1\"")
    })
    .await;
    // HTTPRoute update.
    let route_b = base_model().replace(
        "    backendRefs: [{name: a, port: 80}]\n",
        "    backendRefs: [{name: a, port: 80}]\n  - matches: [{path: {type: PathPrefix, value: /b}}]\n    backendRefs: [{name: b, port: 80}]\n",
    );
    api.apply_yaml(&route_b);
    pier.wait_dump("HTTPRoute update", |d| d.contains("service/default/b/80"))
        .await;
    // Service delete: its backend is gone.
    api.delete("", "services", "default", "b");
    pier.wait_dump("Service delete", |d| !d.contains("service/default/b/80"))
        .await;
    api.apply_yaml(&service("b", "10.0.0.2"));
    pier.wait_dump("Service create", |d| d.contains("service/default/b/80"))
        .await;
    // Gateway update.
    api.apply_yaml(&base_model().replace("port: 8080", "port: 8081"));
    pier.wait_dump("Gateway update", |d| d.contains("8081")).await;
    // GatewayClass delete and create.
    api.delete(GW_GROUP, "gatewayclasses", "", "pier");
    pier.wait_dump("GatewayClass delete", |d| d == "{}").await;
    api.apply_yaml(&base_model());
    pier.wait_dump("GatewayClass create", |d| d.contains("default/gw"))
        .await;

    // Secret: an HTTPS listener starts referencing the trimmed Secret; pier fetches its data.
    let gets_before = api.count("GET", "/secrets/edge-cert");
    api.apply_yaml(&base_model().replace(
        "allowedRoutes: {namespaces: {from: All}}}\n",
        "allowedRoutes: {namespaces: {from: All}}}\n  - {name: https, protocol: HTTPS, port: 8443, hostname: '*.demo.test', tls: {certificateRefs: [{name: edge-cert}]}}\n",
    ));
    pier.wait_dump("HTTPS listener with the Secret's certificate", |d| {
        d.contains("8443") && d.contains("BEGIN CERTIFICATE")
    })
    .await;
    assert!(
        api.count("GET", "/secrets/edge-cert") > gets_before,
        "the trimmed Secret was fetched again"
    );

    // XBackend, GEP-4488 Backend, Envoy Gateway Backend: create, then delete.
    let backends = [
        (
            "gateway.networking.x-k8s.io",
            "xbackends",
            "XBackend",
            "x.example.com",
            "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: ext, namespace: default}\nspec: {type: ExternalHostname, externalHostname: {hostname: x.example.com}, port: {port: 443}}\n",
        ),
        (
            "gateway.networking.k8s.io",
            "backends",
            "Backend",
            "gep.example.com",
            "apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: Backend\nmetadata: {name: ext, namespace: default}\nspec: {type: ExternalHostname, externalHostname: {hostname: gep.example.com}, port: {port: 443}}\n",
        ),
        (
            "gateway.envoyproxy.io",
            "backends",
            "Backend",
            "eg.example.com",
            "apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: Backend\nmetadata: {name: ext, namespace: default}\nspec: {endpoints: [{fqdn: {hostname: eg.example.com, port: 443}}]}\n",
        ),
    ];
    for (group, plural, kind, host, yaml) in backends {
        api.apply_yaml(yaml);
        let route = format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: ext, namespace: default}}\n\
             spec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /ext}}}}]\n    backendRefs: [{{group: {group}, kind: {kind}, name: ext}}]\n"
        );
        api.apply_yaml(&route);
        pier.wait_dump(&format!("{kind} ({group}) create"), |d| d.contains(host))
            .await;
        api.delete(group, plural, "default", "ext");
        pier.wait_dump(&format!("{kind} ({group}) delete"), |d| !d.contains(host))
            .await;
    }
    api.delete(GW_GROUP, "httproutes", "default", "ext");

    // ReferenceGrant: a route in namespace `other` reaches Service default/c only once granted.
    let cross = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: cross, namespace: other}\n\
                 spec:\n  parentRefs: [{name: gw, namespace: default}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /c}}]\n    backendRefs: [{name: c, namespace: default, port: 80}]\n";
    api.apply_yaml(cross);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !pier.dump().await.contains("service/default/c/80"),
        "no grant, no cluster"
    );
    api.apply_yaml(
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: grant, namespace: default}\n\
         spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: other}], to: [{group: '', kind: Service}]}\n",
    );
    pier.wait_dump("ReferenceGrant create", |d| d.contains("service/default/c/80"))
        .await;
    api.delete(GW_GROUP, "referencegrants", "default", "grant");
    pier.wait_dump("ReferenceGrant delete", |d| !d.contains("service/default/c/80"))
        .await;

    // BackendTLSPolicy (with a CA ConfigMap that is trimmed until referenced).
    let ca = gateway_example
        .split("\n---\n")
        .find(|d| d.contains("kind: ConfigMap"))
        .map(str::to_string);
    let ca = ca.unwrap_or_else(|| {
        let backends =
            std::fs::read_to_string(format!("{}/examples/20-services.yaml", env!("CARGO_MANIFEST_DIR"))).unwrap();
        backends
            .split("\n---\n")
            .find(|d| d.contains("kind: ConfigMap"))
            .expect("a CA ConfigMap in the examples")
            .to_string()
    });
    let ca_name = ca
        .lines()
        .find_map(|l| l.trim().strip_prefix("name: "))
        .unwrap()
        .to_string();
    api.apply_yaml(&ca.replace("namespace: demo", "namespace: default"));
    api.apply_yaml(&format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {{name: tls-a, namespace: default}}\n\
         spec: {{targetRefs: [{{group: '', kind: Service, name: a}}], validation: {{hostname: a-tls.demo.test, caCertificateRefs: [{{group: '', kind: ConfigMap, name: {ca_name}}}]}}}}\n"
    ));
    pier.wait_dump("BackendTLSPolicy create", |d| d.contains("a-tls.demo.test"))
        .await;
    api.delete(GW_GROUP, "backendtlspolicies", "default", "tls-a");
    pier.wait_dump("BackendTLSPolicy delete", |d| !d.contains("a-tls.demo.test"))
        .await;

    // GRPCRoute.
    api.apply_yaml(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: g, namespace: default}\n\
         spec:\n  parentRefs: [{name: gw}]\n  hostnames: [grpc.demo.test]\n  rules:\n  - backendRefs: [{name: c, port: 80}]\n",
    );
    pier.wait_dump("GRPCRoute create", |d| d.contains("grpc.demo.test"))
        .await;
    api.delete(GW_GROUP, "grpcroutes", "default", "g");
    pier.wait_dump("GRPCRoute delete", |d| !d.contains("grpc.demo.test"))
        .await;

    // Namespace: a listener that admits routes from labelled namespaces only.
    api.apply_yaml(&base_model().replace(
        "allowedRoutes: {namespaces: {from: All}}",
        "allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {team: x}}}}",
    ));
    api.apply_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n");
    api.apply_yaml(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: ReferenceGrant\nmetadata: {name: grant, namespace: default}\n\
         spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: other}], to: [{group: '', kind: Service}]}\n",
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !pier.dump().await.contains("service/default/c/80"),
        "namespace not selected yet"
    );
    api.apply_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: other, labels: {team: x}}\n");
    pier.wait_dump("Namespace label update", |d| d.contains("service/default/c/80"))
        .await;

    pier.stop().await;
    api.shutdown().await;
}

/// A dropped watch resumes from its resourceVersion without a re-list; an expired one (410 Gone)
/// re-lists; the last good configuration is served throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_drop_resumes_and_410_relists_keeping_the_last_good_model() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("base model", |d| d.contains("10.0.0.1")).await;
    let lists = || api.requests().iter().filter(|r| r.is_list_of("endpointslices")).count();
    let listed = lists();

    api.drop_watches();
    assert!(
        pier.dump().await.contains("10.0.0.1"),
        "still served while watches reconnect"
    );
    api.apply_yaml(&service("a", "10.0.0.7"));
    pier.wait_dump("change after a dropped watch", |d| d.contains("10.0.0.7"))
        .await;
    assert_eq!(lists(), listed, "a dropped watch resumes without listing again");

    api.expire_watches();
    assert!(pier.dump().await.contains("10.0.0.7") && pier.ready().await);
    api.apply_yaml(&service("a", "10.0.0.8"));
    pier.wait_dump("change after 410 Gone", |d| d.contains("10.0.0.8"))
        .await;
    assert!(lists() > listed, "410 Gone makes the watch list again");
    pier.stop().await;
    api.shutdown().await;
}

/// A kind whose CRD is not installed does not hold up the rest, is reported, and is picked up once its
/// CRD appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_crd_is_reported_and_watched_for() {
    let api = FakeApiServer::start(&["xbackends.gateway.networking.x-k8s.io"]).await;
    api.apply_yaml(&base_model());
    let pier = Pier::start(settings(&api, "a", &["default"]), QUIET).await;
    pier.wait_dump("served without the XBackend CRD", |d| {
        d.contains("service/default/a/80")
    })
    .await;
    let status = pier.get("/debug/status").await.1;
    let warnings = status["source_warnings"].to_string();
    assert!(warnings.contains("XBackend") && warnings.contains("CRD"), "{warnings}");
    let (code, ready) = pier.get("/readyz").await;
    let kinds = ready["unavailable_kinds"].to_string();
    assert!(
        code == 200 && kinds.contains("XBackend") && kinds.contains("not served"),
        "/readyz names the kind not served: {ready}"
    );

    api.install("xbackends.gateway.networking.x-k8s.io");
    api.apply_yaml(
        "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: ext, namespace: default}\n\
         spec: {type: ExternalHostname, externalHostname: {hostname: late.example.com}, port: {port: 443}}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: ext, namespace: default}\n\
         spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: ext}]\n",
    );
    pier.wait_dump("XBackend after its CRD is installed", |d| {
        d.contains("late.example.com")
    })
    .await;
    // Only namespace `default` is watched for namespaced kinds.
    assert!(
        api.requests()
            .iter()
            .all(|r| !r.path.ends_with("/httproutes") || r.path.contains("/namespaces/default/"))
    );
    pier.stop().await;
    api.shutdown().await;
}

/// The source on its own (no runtime): GRPCRoute create, update and delete reach the published model
/// (its effect on xDS is checked in `changes_of_each_kind_reach_xds`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcroute_changes_reach_the_model() {
    use pier::model::ObjectKey;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let client = kube::Client::try_from(api.kube_config("source")).unwrap();
    let (tx, mut rx) = tokio::sync::watch::channel(pier::source::SourceState::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let cfg = pier::source::kube::SourceConfig {
        namespaces: vec![],
        debounce: pier::source::Debounce {
            quiet: QUIET,
            max_delay: Duration::from_secs(1),
        },
        retry_max: Duration::from_millis(300),
    };
    let task = tokio::spawn(pier::source::kube::run(client, cfg, tx, stop_rx));
    let mut wait_model = async |what: &str, pred: &dyn Fn(&pier::model::Model) -> bool| {
        tokio::time::timeout(crate::kube_support::WAIT, async {
            loop {
                if let Some(m) = rx.borrow_and_update().model.clone()
                    && pred(&m)
                {
                    return;
                }
                rx.changed().await.unwrap();
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what}: not within the bound"));
    };
    let key = ObjectKey::new("default", "g");
    let grpc = |host: &str| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {{name: g, namespace: default}}\n\
             spec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - backendRefs: [{{name: c, port: 80}}]\n"
        )
    };
    wait_model("first model", &|m| m.services.len() == 3).await;
    api.apply_yaml(&grpc("one.demo.test"));
    wait_model("GRPCRoute create", &|m| m.grpc_routes.contains_key(&key)).await;
    api.apply_yaml(&grpc("two.demo.test"));
    wait_model("GRPCRoute update", &|m| {
        m.grpc_routes
            .get(&key)
            .is_some_and(|r| r.spec.hostnames.as_deref() == Some(&["two.demo.test".to_string()][..]))
    })
    .await;
    api.delete(GW_GROUP, "grpcroutes", "default", "g");
    wait_model("GRPCRoute delete", &|m| !m.grpc_routes.contains_key(&key)).await;
    stop_tx.send(true).unwrap();
    tokio::time::timeout(crate::kube_support::WAIT, task)
        .await
        .unwrap()
        .unwrap();
    api.shutdown().await;
}

/// The API server going away: the last good configuration stays served and ready, and the failing
/// watches are reported in `/debug/status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_outage_keeps_serving_and_is_reported() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    let before = pier
        .wait_dump("base model", |d| d.contains("service/default/a/80"))
        .await;
    api.shutdown().await;
    let deadline = tokio::time::Instant::now() + crate::kube_support::WAIT;
    loop {
        let status = pier.get("/debug/status").await.1;
        if status["source_error"].as_str().is_some_and(|e| e.contains("watch of")) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "watch errors not reported: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pier.dump().await, before, "the last good configuration stays served");
    assert!(pier.ready().await);
    pier.stop().await;
}

/// An XBackend selecting Pods (v1.7 `endpointSelector.matchLabels`): Pods created, made ready, made
/// unready and deleted in the API server move its endpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_events_move_an_endpoint_selector_backend() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    api.apply_yaml(
        "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: pods, namespace: default}\n\
         spec: {type: EndpointSelector, endpointSelector: {matchLabels: {app: web}}, port: {number: 8080}}\n",
    );
    api.apply_yaml(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: pods, namespace: default}\n\
         spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /pods}}]\n    \
         backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: pods}]\n",
    );
    let pod = |name: &str, ip: &str, ready: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {{app: web}}}}\n\
             spec: {{containers: [{{name: app, image: example.test/app:1}}]}}\n\
             status: {{podIP: {ip}, podIPs: [{{ip: {ip}}}], conditions: [{{type: Ready, status: \"{ready}\"}}]}}\n"
        )
    };
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("the XBackend's cluster", |d| d.contains("xbackend/default/pods/8080"))
        .await;
    api.apply_yaml(&pod("p1", "10.1.0.1", "False"));
    api.apply_yaml(&pod("p2", "10.1.0.2", "True"));
    pier.wait_dump("the ready Pod only", |d| {
        d.contains("10.1.0.2") && !d.contains("10.1.0.1")
    })
    .await;
    api.apply_yaml(&pod("p1", "10.1.0.1", "True"));
    api.apply_yaml(&pod("p2", "10.1.0.2", "False"));
    pier.wait_dump("readiness flipped", |d| {
        d.contains("10.1.0.1") && !d.contains("10.1.0.2")
    })
    .await;
    api.delete("", "pods", "default", "p1");
    pier.wait_dump("the Pod deleted", |d| !d.contains("10.1.0.1")).await;
}
