//! `pier translate` and `pier bootstrap` (to stdout or `--out`) as a user runs them: the real binary on
//! the bundled example, on broken input, and the bootstrap checked by a real Envoy.

use std::path::Path;
use std::process::{Command, Output};

pub(crate) fn pier(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pier"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PIER_LOG", "warn")
        .output()
        .expect("run pier")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "pier failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

#[test]
fn translate_example_prints_six_keys_and_every_backend_shape() {
    let doc = json(&pier(&[
        "translate",
        "--allow-loopback",
        "--output",
        "json",
        "examples/",
    ]));
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["clusters", "endpoints", "listeners", "routes", "secrets", "status"]
    );
    for key in ["clusters", "endpoints", "listeners", "routes", "secrets"] {
        assert!(!doc[key].as_array().unwrap().is_empty(), "{key} is empty");
    }
    let cluster_names: Vec<&str> = doc["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // One cluster per shape: XBackend (ExternalHostname and EndpointSelector), GEP-4488 Backend, the
    // draft Backend, Envoy Gateway's Backend, a Service with a BackendTLSPolicy.
    for want in [
        "xbackend/demo/api/9443",
        "xbackend/demo/echo-h2c/80",
        "backend/demo/payments/9444",
        "backend/demo/weather/9081",
        "eg-backend/demo/legacy",
        "service/demo/billing/443",
    ] {
        assert!(
            cluster_names.contains(&want),
            "missing cluster {want} in {cluster_names:?}"
        );
    }
    // The guardrail-refused Backend never reaches Envoy, and its status says why.
    assert!(!cluster_names.iter().any(|n| n.contains("metadata-probe")));
    let probe = doc["status"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metadata"]["name"] == "metadata-probe")
        .expect("status of the refused Backend");
    assert_eq!(probe["status"]["conditions"][0]["reason"], "DestinationNotAllowed");
    // The draft shape is marked deprecated.
    let weather = doc["status"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metadata"]["name"] == "weather")
        .unwrap();
    let conds = weather["status"]["ancestors"][0]["conditions"].as_array().unwrap();
    assert!(conds.iter().any(|c| c["type"] == "Deprecated" && c["status"] == "True"));
}

#[test]
fn yaml_is_the_default_output_and_gateway_selects_one() {
    let out = pier(&["translate", "--allow-loopback", "--gateway", "demo/edge", "examples/"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_saphyr::from_slice(&out.stdout).expect("YAML output");
    assert!(doc["listeners"].as_array().is_some_and(|l| l.len() == 2));

    let out = pier(&["translate", "--gateway", "demo/nope", "examples/"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("demo/nope") && err.contains("demo/edge"), "{err}");
}

#[test]
fn malformed_input_fails_naming_file_document_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\napiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: api, namespace: demo}\nspec:\n  type: ExternalHostname\n  externalHostname: {hostname: api.example.com}\n  port: {port: 443}\n  tls: {mode: Sometimes}\n",
    )
    .unwrap();
    let out = pier(&["translate", file.to_str().unwrap()]);
    assert!(!out.status.success(), "malformed input must fail");
    let err = String::from_utf8_lossy(&out.stderr);
    for want in [
        "bad.yaml",
        "document 1",
        "XBackend demo/api",
        "spec.tls.mode",
        "Sometimes",
    ] {
        assert!(err.contains(want), "error should mention {want:?}: {err}");
    }
    assert!(
        out.stdout.is_empty(),
        "nothing is printed when the input could not be read"
    );
}

#[test]
fn unknown_kinds_are_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    )
    .unwrap();
    let out = pier(&["translate", dir.path().to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Widget"));
}

#[test]
fn an_object_defined_twice_takes_the_later_file_with_a_warning_in_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let svc = |port: u16| {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{ports: [{{port: {port}}}]}}\n")
    };
    std::fs::write(dir.path().join("a.yaml"), svc(80)).unwrap();
    std::fs::write(dir.path().join("b.yaml"), svc(81)).unwrap();
    let doc = json(&pier(&["translate", "--output", "json", dir.path().to_str().unwrap()]));
    let warnings = doc["warnings"].as_array().expect("a warnings key");
    let w = warnings[0].as_str().unwrap();
    assert!(
        w.contains("Service default/web is defined twice")
            && w.contains("a.yaml document 0 and")
            && w.contains("b.yaml document 0; the later one"),
        "{w}"
    );
}

#[test]
fn missing_path_is_a_clear_error() {
    let out = pier(&["translate", "does/not/exist.yaml"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does/not/exist.yaml"));
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").is_dir());
}

#[test]
fn bootstrap_is_accepted_by_envoy_in_both_modes() {
    for (extra, api_type) in [(None, "GRPC"), (Some("--delta"), "DELTA_GRPC")] {
        let mut args = vec![
            "bootstrap",
            "--gateway",
            "demo/edge",
            "--xds-address",
            "127.0.0.1:18000",
            "-o",
            "json",
        ];
        args.extend(extra);
        args.extend(["--dns-resolver", "127.0.0.1:5353", "--admin-port", "0"]);
        let boot = json(&pier(&args));
        assert_eq!(boot["node"]["cluster"], "demo/edge");
        assert_eq!(boot["dynamic_resources"]["ads_config"]["api_type"], api_type);
        pier::testkit::envoy::validate(&boot)
            .unwrap_or_else(|e| panic!("{api_type}: Envoy rejected the bootstrap: {e}"));
    }
    let out = pier(&["bootstrap", "--gateway", "edge", "--xds-address", "127.0.0.1:18000"]);
    assert!(!out.status.success(), "a Gateway without namespace is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAMESPACE/NAME"));
}

#[test]
fn bootstrap_out_writes_the_file_stdout_would_have_shown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("envoy.yaml");
    let args = ["bootstrap", "--gateway", "demo/edge", "--xds-address", "pier:18000"];
    let printed = pier(&args);
    assert!(printed.status.success());
    let written = pier(&[&args[..], &["--out", path.to_str().unwrap()]].concat());
    assert!(written.status.success(), "{}", String::from_utf8_lossy(&written.stderr));
    assert!(written.stdout.is_empty(), "--out also printed to stdout");
    assert_eq!(std::fs::read(&path).unwrap(), printed.stdout);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "a temporary file was left behind: {leftovers:?}");

    let out = pier(&[&args[..], &["--out", "/nonexistent-dir/envoy.yaml"]].concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-dir/envoy.yaml"));
}
