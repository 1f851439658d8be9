//! A Gateway whose configuration would need a response larger than its proxies accept
//! (`--xds-max-response-bytes`) is refused at translation, never sent: a proxy that cannot take a
//! response drops the stream and reconnects into the same response, for good. Its proxies keep what
//! was last published; its status says which response, how large, and the largest resource in it;
//! once it fits again, it is published. The real `pier serve`, on loopback.

use crate::serve_inputs::{Serve, gateway};

/// `n` routes with long hostnames: a route configuration of tens of KiB.
fn many_routes(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r-{i}, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [h-{i}-{pad}.example.com]
  rules: [{{matches: [{{path: {{type: PathPrefix, value: /}}}}]}}]
",
                pad = "x".repeat(100)
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The Gateway's `Programmed` condition in `/debug/status`.
fn programmed(status: &serde_json::Value) -> serde_json::Value {
    status["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["kind"] == "Gateway" && s["metadata"]["name"] == "gw")
        .and_then(|s| {
            s["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Programmed")
                .cloned()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_gateway_over_the_response_limit_is_refused_with_a_status_and_keeps_its_last_config() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("gw.yaml"), gateway("before.example.com")).unwrap();
    let pier = Serve::start(&dir, work.path(), &["--xds-max-response-bytes", "8192"]).unwrap();
    let status = pier.status_until("the first publish", |s| s["generation"] == 1).await;
    assert_eq!(programmed(&status)["status"], "True", "{status}");

    std::fs::write(dir.join("many.yaml"), many_routes(60)).unwrap();
    let status = pier
        .status_until("the refusal", |s| programmed(s)["status"] == "False")
        .await;
    let condition = programmed(&status);
    assert_eq!(condition["reason"], "Invalid");
    let message = condition["message"].as_str().unwrap();
    for want in [
        "pier did not publish this Gateway's latest configuration, and its proxies keep the one last published",
        "its routes response would be ",
        "over the 8.0 KiB its proxies accept (--xds-max-response-bytes); the largest is \"default/gw/8080\"",
    ] {
        assert!(message.contains(want), "{want:?} in {message}");
    }
    assert!(
        status["check_errors"]["default/gw"][0]
            .as_str()
            .unwrap()
            .contains("routes response"),
        "{status}"
    );
    let dump = pier.get("/debug/config_dump").await.body;
    assert!(dump.contains("before.example.com"), "the last good configuration stays");
    assert!(!dump.contains("h-0-"), "the refused one is not served");
    let ready = pier.get("/readyz").await;
    assert_eq!(ready.status, 200);
    assert!(ready.body.contains("--xds-max-response-bytes"), "{}", ready.body);

    // Once it fits again, it is published and the condition clears.
    std::fs::write(dir.join("many.yaml"), many_routes(2)).unwrap();
    let status = pier
        .status_until("the recovery", |s| programmed(s)["status"] == "True")
        .await;
    assert!(
        status["check_errors"].as_object().is_none_or(|m| m.is_empty()),
        "{status}"
    );
    assert!(pier.get("/debug/config_dump").await.body.contains("h-1-"));
}

/// `n` GRPCRoutes with long hostnames: a proxyless gRPC client's listener per hostname, tens of KiB in
/// the gRPC half, while Envoy's half (one listener, one route configuration) stays small.
fn many_grpc_routes(n: usize) -> String {
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\n\
        spec: {ports: [{name: grpc, port: 80}]}\n";
    let routes = (0..n).map(|i| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {{name: g-{i}, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [g-{i}-{pad}.example.com]
  rules: [{{backendRefs: [{{name: a, port: 80}}]}}]
",
            pad = "x".repeat(100)
        )
    });
    std::iter::once(service.to_string())
        .chain(routes)
        .collect::<Vec<_>>()
        .join("---\n")
}

#[tokio::test]
async fn a_gateway_whose_grpc_half_is_over_the_grpc_limit_is_refused_and_names_that_limit() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("gw.yaml"), gateway("before.example.com")).unwrap();
    let pier = Serve::start(&dir, work.path(), &["--xds-max-grpc-response-bytes", "8192"]).unwrap();
    let status = pier.status_until("the first publish", |s| s["generation"] == 1).await;
    assert_eq!(programmed(&status)["status"], "True", "{status}");

    std::fs::write(dir.join("grpc.yaml"), many_grpc_routes(60)).unwrap();
    let status = pier
        .status_until("the refusal", |s| programmed(s)["status"] == "False")
        .await;
    let message = programmed(&status)["message"].as_str().unwrap().to_string();
    for want in [
        "its proxyless gRPC listeners response would be ",
        "over the 8.0 KiB its gRPC clients accept (--xds-max-grpc-response-bytes); the largest is \"g-",
    ] {
        assert!(message.contains(want), "{want:?} in {message}");
    }
    assert!(
        !message.contains("--xds-max-response-bytes"),
        "Envoy's half fits: {message}"
    );
    let dump = pier.get("/debug/config_dump").await.body;
    assert!(dump.contains("before.example.com"), "the last good configuration stays");
    assert!(!dump.contains("g-0-"), "neither half of the refused one is served");

    std::fs::write(dir.join("grpc.yaml"), many_grpc_routes(2)).unwrap();
    pier.status_until("the recovery", |s| programmed(s)["status"] == "True")
        .await;
}
