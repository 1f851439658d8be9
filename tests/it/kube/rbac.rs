//! RBAC as a cluster enforces it: the fake API server grants pier exactly what `deploy/10-rbac.yaml`
//! grants (and fails any test in which pier calls something else), and each grant revoked alone costs
//! only what needs it.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::api::{Api, DeleteParams};

use crate::fake_apiserver::{FakeApiServer, kind_of};
use crate::kube_support::{GW_GROUP, Pier, base_model, settings, wait_for};

const QUIET: Duration = Duration::from_millis(30);

fn code(r: Result<impl Sized, kube::Error>) -> Option<u16> {
    match r {
        Err(kube::Error::Api(s)) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn the_fake_refuses_what_the_manifests_do_not_grant() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let client = kube::Client::try_from(api.kube_config("pier")).unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    assert_eq!(code(services.delete("a", &DeleteParams::default()).await), Some(403));
    assert_eq!(
        code(services.get("a").await),
        Some(403),
        "Services are list and watch only"
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    assert_eq!(code(secrets.get("none").await), Some(404), "get on Secrets is granted");
    // The Role grants Leases in pier's namespace only.
    let here: Api<Lease> = Api::namespaced(client.clone(), "pier-system");
    assert_eq!(code(here.get("x").await), Some(404));
    let elsewhere: Api<Lease> = Api::namespaced(client, "default");
    assert_eq!(code(elsewhere.get("x").await), Some(403));
    assert_eq!(api.take_unexpected().len(), 3, "each refusal is recorded against pier");
    api.shutdown().await;
}

/// For each kind pier reads, its grants revoked alone: pier still becomes ready, names the kind as
/// forbidden in `/readyz`, and publishes the route of the base model unless that route needs the kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_read_grant_revoked_alone_costs_only_what_needs_it() {
    let api = FakeApiServer::start(&[]).await;
    let mut read: Vec<(String, String)> = api
        .grants()
        .into_iter()
        .filter(|(_, res, verb)| verb == "list" && !res.contains('/'))
        .map(|(g, res, _)| (g, res))
        .collect();
    read.dedup();
    api.shutdown().await;
    // What the base model's one route needs (a Service with no BackendTLSPolicy is refused rather than
    // risk plaintext when policies cannot be read).
    let needed = [
        "gatewayclasses",
        "gateways",
        "httproutes",
        "services",
        "endpointslices",
        "backendtlspolicies",
    ];
    assert!(read.len() >= 14, "{read:?}");
    for (group, plural) in read {
        let api = FakeApiServer::start(&[]).await;
        api.apply_yaml(&base_model());
        for verb in ["get", "list", "watch"] {
            api.revoke(&group, &plural, verb);
        }
        let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
        let kind = kind_of(&group, &plural);
        let ready = forbidden_and_ready(&pier, kind, &group).await;
        if !needed.contains(&plural.as_str()) {
            pier.wait_dump(&format!("the route without {plural}.{group}: {ready}"), |d| {
                d.contains("service/default/a/80")
            })
            .await;
        }
        pier.stop().await;
        assert!(api.take_unexpected().is_empty());
    }
}

/// Waits until `/readyz` is 200 and names `kind` as forbidden; returns its body.
async fn forbidden_and_ready(pier: &Pier, kind: &str, group: &str) -> serde_json::Value {
    // A kind whose name another group shares is qualified by its group.
    let qualified = format!("{kind}.{group}");
    let deadline = tokio::time::Instant::now() + crate::kube_support::WAIT;
    loop {
        let (code, body) = pier.get("/readyz").await;
        let named = body["unavailable_kinds"].as_array().into_iter().flatten().any(|k| {
            (k["kind"] == kind || k["kind"] == *qualified)
                && k["reason"].as_str().is_some_and(|r| r.contains("forbidden"))
        });
        if code == 200 && named {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "/readyz does not name {kind} as forbidden: {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Without the grant to write one kind's status, the others are still written; without the Lease,
/// nothing is written and everything is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_write_grant_costs_only_its_writes() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    api.revoke(GW_GROUP, "httproutes/status", "update");
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    wait_for("the Gateway's status", || {
        api.get(GW_GROUP, "gateways", "default", "gw")
            .filter(|g| g["status"]["conditions"].is_array())
    })
    .await;
    let route = api.get(GW_GROUP, "httproutes", "default", "route").unwrap();
    assert!(route["status"]["parents"].is_null(), "{route}");
    pier.stop().await;

    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    for verb in ["get", "create", "patch"] {
        api.revoke("coordination.k8s.io", "leases", verb);
    }
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("served without the Lease", |d| d.contains("service/default/a/80"))
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(api.count("PUT", "/status"), 0, "no replica leads, so none writes");
    pier.stop().await;
    assert!(api.take_unexpected().is_empty());
}
