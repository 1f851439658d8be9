//! The operator's side of authenticated xDS, through the binary: `pier certs` (layout, key permissions,
//! the CA reused, the Gateway's SPIFFE ID), `pier bootstrap` with mTLS options (accepted by Envoy), and
//! `pier serve` refusing plaintext xDS beyond loopback unless told otherwise.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::pier;

fn uri_sans(pem_path: &std::path::Path) -> Vec<String> {
    let pem = std::fs::read(pem_path).unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let cert = pem.parse_x509().unwrap();
    let san = cert.subject_alternative_name().unwrap().expect("a SAN extension");
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            x509_parser::extensions::GeneralName::URI(u) => Some(u.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn certs_then_a_bootstrap_envoy_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let first = pier(&[
        "certs",
        "--out",
        &out,
        "--server-name",
        "pier-xds.pier-system.svc.cluster.local",
        "--gateway",
        "demo/edge",
    ]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(String::from_utf8_lossy(&first.stdout).contains("CA created"));
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    for d in ["server", "gateways/demo.edge"] {
        for f in ["tls.crt", "tls.key", "ca.crt"] {
            assert!(dir.path().join(d).join(f).is_file(), "{d}/{f}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(d).join("tls.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{d}/tls.key is readable by others: {mode:o}");
        }
    }
    assert_eq!(
        uri_sans(&dir.path().join("gateways/demo.edge/tls.crt")),
        ["spiffe://pier.local/ns/demo/gateway/edge"]
    );
    // A later run adds a Gateway from the same CA.
    let second = pier(&["certs", "--out", &out, "--gateway", "team/api"]);
    assert!(String::from_utf8_lossy(&second.stdout).contains("CA reused"));
    assert_eq!(std::fs::read(dir.path().join("ca.crt")).unwrap(), ca);
    assert_eq!(std::fs::read(dir.path().join("gateways/team.api/ca.crt")).unwrap(), ca);
    let bad = pier(&["certs", "--out", &out, "--gateway", "no-namespace"]);
    assert!(!bad.status.success());

    let client = |f: &str| dir.path().join("gateways/demo.edge").join(f).display().to_string();
    let (cert, key, ca) = (client("tls.crt"), client("tls.key"), client("ca.crt"));
    let boot = pier(&[
        "bootstrap",
        "--gateway",
        "demo/edge",
        "--xds-address",
        "pier-xds.pier-system.svc.cluster.local:18000",
        "--admin-port",
        "0",
        "-o",
        "json",
        "--xds-tls-cert",
        &cert,
        "--xds-tls-key",
        &key,
        "--xds-ca",
        &ca,
    ]);
    assert!(boot.status.success(), "{}", String::from_utf8_lossy(&boot.stderr));
    let boot: serde_json::Value = serde_json::from_slice(&boot.stdout).unwrap();
    let tls = &boot["static_resources"]["clusters"][0]["transport_socket"]["typed_config"];
    assert_eq!(tls["sni"], "pier-xds.pier-system.svc.cluster.local");
    assert_eq!(
        tls["common_tls_context"]["validation_context"]["match_typed_subject_alt_names"][0]["matcher"]["exact"],
        "pier-xds.pier-system.svc.cluster.local"
    );
    pier::testkit::envoy::validate(&boot).unwrap_or_else(|e| panic!("Envoy rejected the mTLS bootstrap: {e}"));
    let partial = pier(&[
        "bootstrap",
        "--gateway",
        "demo/edge",
        "--xds-address",
        "127.0.0.1:1",
        "--xds-tls-cert",
        &cert,
    ]);
    assert!(
        !partial.status.success(),
        "a certificate without its key and CA is refused"
    );
}

/// Runs `pier serve` with `args` until it exits (bounded); its exit success and stderr.
fn serve_exit(args: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pier"))
        .args(["serve", "--config-dir"])
        .arg(dir.path())
        .args(["--admin-address", "127.0.0.1:0"])
        .args(args)
        .env("PIER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pier serve {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn plaintext_xds_beyond_loopback_needs_the_insecure_flag() {
    let (ok, stderr) = serve_exit(&["--xds-address", "0.0.0.0:0"]);
    assert!(!ok);
    assert!(
        stderr.contains("--xds-insecure-plaintext") && stderr.contains("pier certs"),
        "{stderr}"
    );
    let (ok, stderr) = serve_exit(&[
        "--xds-address",
        "127.0.0.1:0",
        "--xds-tls-cert",
        "/nonexistent/tls.crt",
        "--xds-tls-key",
        "/x",
        "--xds-client-ca",
        "/y",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("/nonexistent/tls.crt"),
        "the unreadable file is named: {stderr}"
    );
}
