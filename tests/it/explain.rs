//! `pier explain` as a user runs it. Golden cases: each `testdata/explain/<case>/args` is one command line
//! after `pier explain` (run from the repository root, on the golden cases' inputs and `examples/`),
//! and `explain.txt` / `explain.json` are what it prints with `-o text` / `-o json`.
//! `UPDATE=1 cargo test --test it explain::` rewrites them; they are never edited by hand.
//!
//! Online: `pier serve` on `examples/` (with an admin token) and `pier explain --admin` against it print
//! exactly what the offline command prints on the same files, since both build the explanation from the
//! same documents.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::serve_inputs::Serve;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `pier explain ARGS`, from the repository root, with no PIER_* variable leaking in from the caller.
fn explain(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pier"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PIER_") {
            cmd.env_remove(key);
        }
    }
    cmd.arg("explain")
        .args(args)
        .current_dir(root())
        .env("PIER_LOG", "warn")
        .output()
        .expect("run pier explain")
}

fn stdout(args: &[&str]) -> String {
    let out = explain(args);
    assert!(
        out.status.success(),
        "pier explain {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn cases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("testdata/explain"))
        .expect("testdata/explain/ exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("args").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no explain case");
    dirs
}

fn diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

#[test]
fn golden_explanations() {
    let update = std::env::var("UPDATE").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let line = std::fs::read_to_string(case.join("args")).expect("read args");
        let args: Vec<&str> = line.split_whitespace().collect();
        for (format, file) in [("text", "explain.txt"), ("json", "explain.json")] {
            let mut with_format = args.clone();
            with_format.extend(["-o", format]);
            let actual = stdout(&with_format);
            assert!(
                !actual.contains("PRIVATE KEY"),
                "{name} -o {format} shows a private key"
            );
            let path = case.join(file);
            if update {
                std::fs::write(&path, &actual).expect("write expected output");
                continue;
            }
            let expected = std::fs::read_to_string(&path).unwrap_or_default();
            if expected != actual {
                failures.push(format!(
                    "explain/{name}/{file} differs (UPDATE=1 cargo test --test it explain:: to accept):\n{}",
                    diff(&expected, &actual)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn an_unknown_object_exits_2_naming_the_nearest() {
    let out = explain(&["httproute/demo/apsi", "examples/", "--allow-loopback"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTPRoute demo/apsi") && err.contains("did you mean demo/apis?"),
        "{err}"
    );
    assert!(err.contains("HTTPRoute pier knows: demo/apis, demo/site"), "{err}");

    let out = explain(&["route/demo/apis", "examples/"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KIND/NAMESPACE/NAME"));

    let out = explain(&["httproute/demo/apis", "examples/", "--gateway", "demo/nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no pier Gateway \"demo/nope\""), "{err}");
}

#[test]
fn a_running_pier_explains_what_the_files_explain() {
    let work = tempfile::tempdir().unwrap();
    let token = work.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let token = token.to_str().unwrap();
    let examples = root().join("examples");
    let pier = Serve::start(
        &examples,
        work.path(),
        &["--allow-loopback", "--admin-token-file", token],
    )
    .unwrap();
    let admin = pier.admin.to_string();
    let online = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--admin", &admin, "--admin-token-file", token]);
        explain(&all)
    };
    // Until the first read is published, pier has nothing on the Gateway.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !online(&["gateway/demo/edge"]).status.success() {
        assert!(Instant::now() < deadline, "pier published nothing within 20s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = |out: Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    for subject in ["httproute/demo/apis", "service/demo/billing", "gateway/demo/edge"] {
        for format in ["text", "json"] {
            let offline = stdout(&[subject, "examples/", "--allow-loopback", "-o", format]);
            let online = text(online(&[subject, "-o", format]));
            assert_eq!(online, offline, "{subject} -o {format}:\n{}", diff(&offline, &online));
        }
    }
    let one_gateway = ["backend/demo/payments", "--gateway", "demo/edge"];
    let offline = stdout(&[&one_gateway[..], &["examples/", "--allow-loopback"]].concat());
    let online_text = text(online(&one_gateway));
    assert_eq!(online_text, offline, "{}", diff(&offline, &online_text));

    let out = online(&["httproute/demo/nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean"));
    let out = explain(&["httproute/demo/apis", "--admin", &admin]);
    assert_eq!(out.status.code(), Some(2), "no token");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--admin-token-file"), "{err}");
}
