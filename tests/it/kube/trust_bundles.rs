//! A BackendTLSPolicy whose CA is a ClusterTrustBundle (`certificates.k8s.io/v1beta1`, cluster-scoped):
//! events on the bundle move the CA pier serves, and a bundle that goes bad or away fails the policy's
//! target closed (no cluster: its share answers 500) with `InvalidCACertificateRef` in the policy's
//! status, until the bundle is good again.

use std::time::Duration;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{GW_GROUP, Pier, base_model, settings, wait_for};

const QUIET: Duration = Duration::from_millis(30);
const CERTS: &str = "certificates.k8s.io";
const CLUSTER: &str = "service/default/a/80";
const SECRET: &str = "ca/clustertrustbundle/roots";

/// A ClusterTrustBundle `roots` with one PEM block of `body` (base64; only its framing is checked).
fn bundle(body: &str) -> String {
    format!(
        "apiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {{name: roots}}\n\
         spec: {{trustBundle: \"-----BEGIN CERTIFICATE-----\\n{body}\\n-----END CERTIFICATE-----\\n\"}}\n"
    )
}

const POLICY: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: tls-a, namespace: default}\n\
    spec:\n  targetRefs: [{group: '', kind: Service, name: a}]\n  validation:\n    hostname: a-tls.demo.test\n    \
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: roots}]\n";

/// The policy's ResolvedRefs condition as pier last wrote it: (status, reason, message).
fn resolved_refs(api: &FakeApiServer) -> Option<(String, String, String)> {
    let policy = api.get(GW_GROUP, "backendtlspolicies", "default", "tls-a")?;
    let conditions = policy["status"]["ancestors"][0]["conditions"].as_array()?.clone();
    let c = conditions.iter().find(|c| c["type"] == "ResolvedRefs")?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((s("status"), s("reason"), s("message")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_trust_bundle_events_move_the_served_ca_and_a_bad_bundle_fails_closed() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    api.apply_yaml(&bundle("QUFBQQ=="));
    api.apply_yaml(POLICY);
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("the bundle as the policy's CA", |d| {
        d.contains(CLUSTER) && d.contains(SECRET) && d.contains("QUFBQQ==")
    })
    .await;
    wait_for("ResolvedRefs=True", || {
        resolved_refs(&api).filter(|(status, _, _)| status == "True")
    })
    .await;

    api.apply_yaml(&bundle("QkJCQg=="));
    pier.wait_dump("the updated bundle", |d| {
        d.contains("QkJCQg==") && !d.contains("QUFBQQ==")
    })
    .await;

    // Emptied: the Service port's traffic fails closed rather than go out unverified or in plaintext.
    api.apply_yaml(
        "apiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {name: roots}\nspec: {trustBundle: ''}\n",
    );
    pier.wait_dump("an empty bundle fails closed", |d| {
        !d.contains(CLUSTER) && !d.contains(SECRET)
    })
    .await;
    let (_, reason, message) = wait_for("ResolvedRefs=False", || {
        resolved_refs(&api).filter(|(status, _, _)| status == "False")
    })
    .await;
    assert_eq!(reason, "InvalidCACertificateRef");
    assert!(
        message.contains("ClusterTrustBundle roots spec.trustBundle"),
        "{message}"
    );

    api.apply_yaml(&bundle("Q0NDQw=="));
    pier.wait_dump("a good bundle again", |d| d.contains(CLUSTER) && d.contains("Q0NDQw=="))
        .await;
    api.delete(CERTS, "clustertrustbundles", "", "roots");
    pier.wait_dump("a deleted bundle fails closed", |d| {
        !d.contains(CLUSTER) && !d.contains(SECRET)
    })
    .await;
    wait_for("ResolvedRefs names the missing bundle", || {
        resolved_refs(&api).filter(|(_, _, m)| m.contains("ClusterTrustBundle roots not found"))
    })
    .await;
    pier.stop().await;
    api.shutdown().await;
}

/// GEP-5075's own field: `validation.clusterTrustBundleRef` (group and kind defaulted), read from the
/// watched policy as from a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_trust_bundle_ref_is_read_from_the_api_server_and_fails_closed_without_its_bundle() {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    api.apply_yaml(&bundle("QUFBQQ=="));
    api.apply_yaml(&POLICY.replace(
        "caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: roots}]",
        "clusterTrustBundleRef: {name: roots}",
    ));
    let pier = Pier::start(settings(&api, "a", &[]), QUIET).await;
    pier.wait_dump("the bundle as the policy's CA", |d| {
        d.contains(CLUSTER) && d.contains(SECRET) && d.contains("QUFBQQ==")
    })
    .await;
    api.delete(CERTS, "clustertrustbundles", "", "roots");
    pier.wait_dump("a deleted bundle fails closed", |d| {
        !d.contains(CLUSTER) && !d.contains(SECRET)
    })
    .await;
    let (_, reason, message) = wait_for("ResolvedRefs=False", || {
        resolved_refs(&api).filter(|(status, _, _)| status == "False")
    })
    .await;
    assert_eq!(reason, "InvalidCACertificateRef");
    assert_eq!(message, "ClusterTrustBundle roots not found");
    pier.stop().await;
    api.shutdown().await;
}
