//! Scenario 22: a BackendTLSPolicy whose only trust source is GEP-5075's `validation.clusterTrustBundleRef`,
//! naming a `certificates.k8s.io/v1` ClusterTrustBundle that holds the one CA the upstream's certificate
//! chains to. Traffic flows over TLS with the policy's SNI.
//!
//! Replaced by another CA's bundle, the policy stays accepted (a valid bundle that does not vouch for the
//! upstream is not pier's to judge) and the running Envoy swaps its trust in place (SDS): sessions it
//! already holds may continue, as the GEP allows, but a new one — to a new endpoint of the Service,
//! certified by the old CA — is refused at the handshake: a 5xx from Envoy, no request reaches the
//! upstream, nothing in plaintext. Deleted, the reference is invalid (`ResolvedRefs=False/
//! InvalidCACertificateRef`, `Accepted=False/NoValidCACertificate`) and the route answers 500, keeping no
//! anchors from before. Restored, traffic flows again.

use pier::testkit::lo;
use pier::testkit::pki::Ca;
use pier::testkit::upstream::{ServerTls, Upstream};
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::scene::{CONVERGE, Scene};
use crate::harness::{Mode, eventually};

both_modes!(run);

const BUNDLE_FILE: &str = "20-bundle.yaml";
const SECRET: &str = "ca/clustertrustbundle/vault-roots";
const HOSTNAME: &str = "vault.e2e.test";
const TRUSTED: [&str; 2] = ["Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"];

async fn run(mode: Mode) {
    let mut scene = Scene::new("s22", mode).await;
    let ca = Ca::new("e2e bundle CA");
    let other = Ca::new("e2e other CA");
    let first = Upstream::https("vault-1", lo(2), ServerTls::new(&ca.server(&[HOSTNAME], &[]))).await;
    let second = Upstream::https("vault-2", lo(3), ServerTls::new(&ca.server(&[HOSTNAME], &[]))).await;
    scene.write("00-gateway.yaml", &[gateway_class(), gateway("gw", scene.port)]);
    scene.write(BUNDLE_FILE, &[trust_bundle(&ca.cert_pem())]);
    scene.write("10-backends.yaml", &backends(&first));
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;

    scene.wait_for_upstream("/vault", "vault-1").await;
    for s in first.requests() {
        assert!(s.tls, "the policy's Service was reached in plaintext: {s:?}");
        assert_eq!(s.sni.as_deref(), Some(HOSTNAME), "SNI from validation.hostname");
    }
    assert_eq!(policy_conditions(&scene).await, TRUSTED);

    scene.write(BUNDLE_FILE, &[trust_bundle(&other.cert_pem())]);
    envoy_trusts(&scene, &other, &ca).await;
    assert_eq!(policy_conditions(&scene).await, TRUSTED, "another valid bundle");
    scene.write("10-backends.yaml", &backends(&second));
    refused_at_the_handshake(&scene, &second).await;

    scene.config.remove(BUNDLE_FILE);
    let invalid = [
        "Accepted=False/NoValidCACertificate",
        "ResolvedRefs=False/InvalidCACertificateRef",
    ];
    eventually("the deleted bundle in the policy's status", CONVERGE, || async {
        let got = policy_conditions(&scene).await;
        if got == invalid {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
    scene.wait_for_status("/vault", 500).await;

    scene.write(BUNDLE_FILE, &[trust_bundle(&ca.cert_pem())]);
    scene.wait_for_upstream("/vault", "vault-2").await;
    assert!(
        second
            .requests()
            .iter()
            .all(|s| s.tls && s.sni.as_deref() == Some(HOSTNAME))
    );
    assert_eq!(policy_conditions(&scene).await, TRUSTED);
    for upstream in [&first, &second] {
        assert_eq!(upstream.plaintext_attempts(), 0, "plaintext reached {}", upstream.name);
    }
}

/// The Service `vault` with its one endpoint on `upstream`, the policy and the route.
fn backends(upstream: &Upstream) -> Vec<Value> {
    vec![
        service("vault", "https", 443),
        endpoint_slice("vault-1", "vault", "https", upstream.port(), &[(&upstream.ip(), true)]),
        policy(),
        http_route("vault", "gw", vec![rule("/vault", vec![service_ref("vault", 443)])]),
    ]
}

/// Waits until the running Envoy's trust for the policy holds `now` and not `before`.
async fn envoy_trusts(scene: &Scene, now: &Ca, before: &Ca) {
    // A line of each certificate's base64 body: the dump escapes the PEM's newlines.
    let body = |ca: &Ca| ca.cert_pem().lines().nth(1).expect("a PEM body").to_string();
    let (now, before) = (body(now), body(before));
    eventually("Envoy's trust swapped in place", CONVERGE, || async {
        let dump = scene
            .envoy()
            .config_dump("resource=dynamic_active_secrets")
            .await
            .to_string();
        if dump.contains(SECRET) && dump.contains(&now) && !dump.contains(&before) {
            Ok(())
        } else {
            Err(format!("active secrets: {dump}"))
        }
    })
    .await;
}

/// The harness's check that `upstream` is refused at the handshake, plus one more request answered
/// 5xx by Envoy itself.
async fn refused_at_the_handshake(scene: &Scene, upstream: &Upstream) {
    scene.refused_at_the_handshake("/vault", upstream, HOSTNAME).await;
    let r = scene.get("/vault").await.expect("Envoy answers");
    assert!(r.status >= 500 && r.upstream().is_none(), "{r:?}");
}

/// A `certificates.k8s.io/v1` ClusterTrustBundle `vault-roots` holding `pem`.
fn trust_bundle(pem: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle",
        "metadata": {"name": "vault-roots"},
        "spec": {"signerName": "e2e.test/vault", "trustBundle": pem}})
}

fn policy() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
        "metadata": {"name": "vault-tls", "namespace": NS, "generation": 1},
        "spec": {
            "targetRefs": [{"group": "", "kind": "Service", "name": "vault", "sectionName": "https"}],
            "validation": {"hostname": HOSTNAME, "clusterTrustBundleRef": {
                "group": "certificates.k8s.io", "kind": "ClusterTrustBundle", "name": "vault-roots"}}
        }
    })
}

/// The policy's conditions as `Type=Status/Reason`, from pier's `/debug/status`.
async fn policy_conditions(scene: &Scene) -> Vec<String> {
    let status = scene.pier().admin_json("/debug/status").await;
    let objects = status["objects"].as_array().expect("/debug/status objects");
    let Some(policy) = objects
        .iter()
        .find(|o| o["kind"] == "BackendTLSPolicy" && o["metadata"]["name"] == "vault-tls")
    else {
        return vec!["no status".into()];
    };
    let conditions = policy["status"]["ancestors"][0]["conditions"].as_array();
    let mut out: Vec<String> = conditions
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("?").to_string();
            format!("{}={}/{}", s("type"), s("status"), s("reason"))
        })
        .collect();
    out.sort();
    out
}
