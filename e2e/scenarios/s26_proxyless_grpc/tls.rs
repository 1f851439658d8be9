//! Upstream TLS for proxyless gRPC clients (gRFC A29), with each real client: a Service verified by a
//! BackendTLSPolicy (CA from a ConfigMap, the policy's hostname as the certificate name) is served to a
//! client only if its bootstrap declares the CA's certificate provider instance
//! (`pier bootstrap --grpc --trust-dir`, a directory holding `ca/configmap/default/backend-ca.pem`). A TLS
//! gRPC server on loopback presents a certificate for `secure.e2e.test` signed by that CA.
//!
//! - A client declaring the CA reaches the server over TLS; a plaintext Service on the same target still
//!   answers (gRPC's xDS credentials fall back to plaintext where no TLS is asked).
//! - The same client's calls through a policy naming another host (`impostor.e2e.test`, same server)
//!   fail: the SAN check is sent and enforced.
//! - A client whose file holds another CA under the same instance name fails its calls: the CA that
//!   verifies is the file's.
//! - A client declaring nothing is given the cluster without endpoints: its calls fail and the server
//!   takes none of them.
//!
//! The server counts calls it answers; a failed handshake is never one.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::procs::{Outcome, Servers};
use super::{HOSTNAME, Proxyless, grpc_service, method};
use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::pier::PierOptions;
use crate::harness::scene::Scene;
use pier::testkit::pki::Ca;

const SERVER_NAME: &str = "secure.e2e.test";
const INSTANCE: &str = "ca/configmap/default/backend-ca";

pub async fn run<C: Proxyless>(name: &str) {
    let mut scene = Scene::new(name, Mode::Sotw).await;
    let ca = Ca::new("e2e backend CA");
    let leaf = ca.server(&[SERVER_NAME], &[]);
    let (cert, key) = (scene.work_dir().join("secure.crt"), scene.work_dir().join("secure.key"));
    std::fs::write(&cert, &leaf.cert_pem).expect("server certificate");
    std::fs::write(&key, &leaf.key_pem).expect("server key");
    let tls_servers = Servers::start_tls(&["secure+tls"], (&cert, &key), scene.work_dir());
    let plain = Servers::start(&["plain"], scene.work_dir());
    scene.write("00-gateways.yaml", &[gateway_class(), gateway("gw", scene.port)]);
    scene.write(
        "10-backends.yaml",
        &backends(tls_servers.ports["secure"], plain.ports["plain"], &ca.cert_pem()),
    );
    scene.write("20-routes.yaml", &[route()]);
    let options = PierOptions {
        allow_loopback: true,
        ..PierOptions::default()
    };
    scene.start_pier(options).await;
    let target = format!("xds:///{HOSTNAME}:{}", scene.port);

    let trusting = trust_dir(scene.work_dir(), "trust", &ca.cert_pem());
    let boot = scene
        .pier()
        .grpc_bootstrap_trusting("default/gw", "grpc-tls", &trusting);
    assert_eq!(
        boot["node"]["metadata"]["pier.dev/certificate-providers"],
        json!([INSTANCE])
    );
    let mut client = C::start("grpc-tls", &boot, scene.work_dir()).await;
    let o = client.calls(&target, "/echo.Echo/Secure", 10, false).await;
    assert_eq!(
        (o.count("secure"), o.errors.len()),
        (10, 0),
        "verified TLS calls: {o:?}"
    );
    let o = client.calls(&target, "/echo.Echo/Say", 5, false).await;
    assert_eq!(o.count("plain"), 5, "a plaintext backend on the same target: {o:?}");
    fails_unanswered::<C>(
        &mut client,
        &target,
        "/echo.Echo/Impostor",
        &tls_servers,
        "a certificate without the policy's name",
    )
    .await;

    let wrong = trust_dir(scene.work_dir(), "wrong-trust", &Ca::new("another CA").cert_pem());
    let boot = scene
        .pier()
        .grpc_bootstrap_trusting("default/gw", "grpc-wrong-ca", &wrong);
    let mut wrong_ca = C::start("grpc-wrong-ca", &boot, scene.work_dir()).await;
    fails_unanswered::<C>(
        &mut wrong_ca,
        &target,
        "/echo.Echo/Secure",
        &tls_servers,
        "a CA file of another CA",
    )
    .await;

    let boot = scene.pier().grpc_bootstrap("default/gw", "grpc-no-trust");
    let mut none = C::start("grpc-no-trust", &boot, scene.work_dir()).await;
    let o = fails_unanswered::<C>(&mut none, &target, "/echo.Echo/Secure", &tls_servers, "no CA declared").await;
    if C::FAILS_FAST {
        assert_eq!(o.failed("UNAVAILABLE"), 5, "no endpoint, so at once: {o:?}");
    }
    let status = scene.pier().admin_json("/debug/status").await.to_string();
    assert!(
        status.contains(&format!("certificate provider \\\"{INSTANCE}\\\"")),
        "the GRPCRoute's status names the instance a client must declare: {status}"
    );
}

/// Five calls of `method`, each failing, none answered by the TLS server.
async fn fails_unanswered<C: Proxyless>(
    client: &mut C,
    target: &str,
    method: &str,
    servers: &Servers,
    why: &str,
) -> Outcome {
    let before = servers.calls("secure");
    let o = client.calls(target, method, 5, false).await;
    assert!(o.servers.is_empty(), "{why}: no call is answered: {o:?}");
    assert_eq!(o.errors.values().sum::<u64>(), 5, "{why}: every call fails: {o:?}");
    // A call the server answered would be counted as soon as it was taken; the failures are already in.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(servers.calls("secure"), before, "{why}: the server took no call");
    o
}

/// A `--trust-dir` holding `pem` as the CA file of [`INSTANCE`].
fn trust_dir(work: &Path, name: &str, pem: &str) -> std::path::PathBuf {
    let dir = work.join(name);
    let file = dir.join(format!("{INSTANCE}.pem"));
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("trust dir");
    std::fs::write(&file, pem).expect("CA file");
    dir
}

/// Services `secure` and `impostor` (both the TLS server, each verified by its own BackendTLSPolicy:
/// `secure.e2e.test`, `impostor.e2e.test`), `plain` (plaintext), and the CA ConfigMap.
fn backends(secure: u16, plain: u16, ca_pem: &str) -> Vec<Value> {
    let mut out = grpc_service("secure", &[("secure-1", secure, "127.0.0.1")]);
    out.extend(grpc_service("impostor", &[("impostor-1", secure, "127.0.0.1")]));
    out.extend(grpc_service("plain", &[("plain-1", plain, "127.0.0.1")]));
    out.push(ca_config_map("backend-ca", ca_pem));
    for (service, host) in [("secure", SERVER_NAME), ("impostor", "impostor.e2e.test")] {
        out.push(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
            "metadata": {"name": format!("{service}-tls"), "namespace": "default"},
            "spec": {
                "targetRefs": [{"group": "", "kind": "Service", "name": service}],
                "validation": {"hostname": host,
                    "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "backend-ca"}]}
            }
        }));
    }
    out
}

fn route() -> Value {
    let rule = |m: &str, service: &str| json!({ "matches": method(m), "backendRefs": [service_ref(service, 80)] });
    let mut r = grpc_route(
        "echo",
        "gw",
        vec![
            rule("Secure", "secure"),
            rule("Impostor", "impostor"),
            rule("Say", "plain"),
        ],
    );
    r["spec"]["hostnames"] = json!([HOSTNAME]);
    r
}
