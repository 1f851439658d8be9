//! The Kubernetes source gives exactly what the directory source gives: the bundled example and a set
//! of golden cases, applied through the in-process fake API server (`tests/it/fake_apiserver/`), must
//! publish the same Envoy resources (and statuses) as the same files read directly.

use std::time::Duration;

use serde_json::Value;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{Pier, settings};

const QUIET: Duration = Duration::from_millis(30);

/// The bundled example, applied through the API server, is served exactly as the directory source
/// serves it from the files; and nothing is served before every watch has listed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn examples_match_the_directory_source_and_wait_for_every_watch() {
    let api = FakeApiServer::start(&[]).await;
    let mut texts = Vec::new();
    for f in [
        "00-gateway.yaml",
        "10-backends.yaml",
        "20-services.yaml",
        "30-routes.yaml",
    ] {
        let path = format!("{}/examples/{f}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let (accepted, refused) = api.apply_accepted(&text);
        only_draft_backends_refused(&refused);
        texts.push((path, accepted));
    }
    api.hold_lists("endpointslices");
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !pier.ready().await,
        "not ready while the EndpointSlice watch has not listed"
    );
    assert_eq!(
        pier.get("/debug/config_dump").await.1,
        serde_json::json!({}),
        "nothing published before sync"
    );
    api.release_lists("endpointslices");
    pier.wait_dump("the example's Gateway", |d| d.contains("demo/edge"))
        .await;

    let (expected, _) = expected(&texts);
    assert!(expected.as_object().is_some_and(|m| !m.is_empty()));
    let got = pier.get("/debug/config_dump").await.1;
    assert_eq!(got, expected, "Kubernetes source and files give the same resources");
    assert!(pier.ready().await);
    pier.stop().await;
    api.shutdown().await;
}

/// The draft Backend shape (`spec.destination`) is read from files only: pier's Backend CRD is the
/// GEP-4488 shape, and an API server refuses the draft one (`src/crds.rs`). Anything else refused is a
/// bug in the example or the CRDs.
fn only_draft_backends_refused(refused: &[String]) {
    for r in refused {
        assert!(
            r.starts_with("Backend ") && r.contains("spec.port: Required value"),
            "refused by the API server: {r}"
        );
    }
}

/// What the directory source would publish from these texts: the config dump (each Gateway's
/// resources, its proxyless half under `proxyless`) and the statuses.
fn expected(texts: &[(String, String)]) -> (Value, Value) {
    let loaded = pier::model::load::parse_texts(texts).unwrap();
    let mut opts = pier::Options::default();
    opts.guardrails.allow_loopback = true;
    let t = pier::translate(&loaded.model, &opts);
    let dump: serde_json::Map<String, Value> = t
        .gateways
        .iter()
        .map(|(g, res)| {
            let mut j = pier::envoy::render::resources_to_json(res);
            if let Some(p) = t.proxyless.get(g) {
                j["proxyless"] = pier::envoy::render::resources_to_json(p);
            }
            pier::envoy::render::redact_private_keys(&mut j);
            (g.clone(), j)
        })
        .collect();
    (Value::Object(dump), serde_json::to_value(&t.statuses).unwrap())
}

/// The texts as the API server stores them: every object has a `metadata.generation` (1 when created
/// without one), which statuses report as `observedGeneration`.
fn with_generations(text: &str) -> String {
    let mut out = String::new();
    for v in pier::model::yaml::values("with_generations", text).unwrap() {
        let Some(mut v) = v else { continue };
        if v["metadata"].get("generation").is_none() {
            v["metadata"]["generation"] = serde_json::json!(1);
        }
        out += "---\n";
        out += &pier::model::yaml::to_yaml(&v).unwrap();
    }
    out
}

/// Golden cases with the kinds and fields most likely to get lost on the way (HTTPRoute retries the
/// standard type cannot hold, GRPCRoute, BackendTLSPolicy, cluster-scoped ClusterTrustBundles, v1alpha1
/// included; the draft Backend is files-only), applied through the API server: the same resources and
/// statuses as from the files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_cases_through_the_api_server_match_the_files() {
    for case in [
        "httproute-timeouts-retries",
        "grpcroute-features",
        // Not session-persistence-route: through an API server a route's sessionPersistence is what
        // the installed CRD keeps (docs/conformance.md), and the experimental CRD of the gateway-api
        // crate is the v1.0-v1.6 shape, which prunes the current shape's cookie and header.
        "session-persistence-backend",
        "backendtlspolicy-targets-backend",
        "conformance-backendtlspolicy-grpcroute",
        "backendtlspolicy-cluster-trust-bundle",
    ] {
        let path = format!("{}/testdata/{case}/input.yaml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let api = FakeApiServer::start(&[]).await;
        let (text, refused) = api.apply_accepted(&text);
        only_draft_backends_refused(&refused);
        let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
        let (dump, statuses) = expected(&[(path, with_generations(&text))]);
        let deadline = tokio::time::Instant::now() + crate::kube_support::WAIT;
        loop {
            let got = pier.get("/debug/config_dump").await.1;
            let got_statuses = pier.get("/debug/status").await.1["objects"].clone();
            if got == dump && got_statuses == statuses {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                assert_eq!(got, dump, "{case}: resources");
                assert_eq!(got_statuses, statuses, "{case}: statuses");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        pier.stop().await;
        api.shutdown().await;
    }
}
