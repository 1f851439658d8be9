//! `pier diff` as a user runs it: each case under `testdata/diff/<case>/` (`old/`, `new/`, a README saying
//! what changes) has its expected text output in `diff.txt` (`UPDATE=1` rewrites them; review the
//! change). Also: the exit codes a CI gate relies on (0 no change, 1 changes, 2 error), the flags in the
//! JSON output, and a `git:REF` side giving what the same directories give.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/diff")
}

fn pier_diff(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pier"))
        .arg("diff")
        .args(args)
        .current_dir(cwd)
        .env("PIER_LOG", "error")
        .output()
        .expect("running pier diff")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_case_prints_its_reviewed_output_and_exit_code() {
    let mut names: Vec<String> = std::fs::read_dir(cases())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 3, "the cases are there: {names:?}");
    for name in names {
        let dir = cases().join(&name);
        let out = pier_diff(&dir, &["old", "new"]);
        let want_code = if name == "no-change" { 0 } else { 1 };
        assert_eq!(
            out.status.code(),
            Some(want_code),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = dir.join("diff.txt");
        if std::env::var_os("UPDATE").is_some() {
            std::fs::write(&expected, stdout(&out)).unwrap();
        }
        let want = std::fs::read_to_string(&expected).unwrap_or_else(|e| panic!("{name}/diff.txt ({e}): UPDATE=1"));
        assert_eq!(stdout(&out), want, "{name}: the output changed (UPDATE=1 after review)");
    }
}

#[test]
fn json_output_names_what_review_must_catch() {
    let flags = |case: &str| -> Vec<String> {
        let out = pier_diff(&cases().join(case), &["old", "new", "-o", "json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        doc["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {}", f["kind"].as_str().unwrap(), f["what"].as_str().unwrap()))
            .collect()
    };
    let tls = flags("tls-downgrade");
    assert_eq!(tls.len(), 2, "{tls:?}");
    assert!(
        tls[0].starts_with("tls-downgrade cluster service/default/ledger/443: SAN checks dropped"),
        "{tls:?}"
    );
    assert!(
        tls[1].starts_with("tls-downgrade cluster xbackend/default/api/443: TLS turned off"),
        "{tls:?}"
    );
    let refused = flags("guardrail-refusal");
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused
            .iter()
            .any(|f| f.starts_with("guardrail-refusal Accepted=False")),
        "{refused:?}"
    );
    assert!(
        refused
            .iter()
            .any(|f| f.starts_with("backend-errors ") && f.contains("from 0% to 75%")),
        "{refused:?}"
    );
    assert!(flags("no-change").is_empty());
}

#[test]
fn an_error_is_exit_code_two() {
    let out = pier_diff(&cases(), &["no-such-dir", "no-change/new"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OLD"), "names the side");
}

#[test]
fn a_git_side_is_the_path_at_that_commit() {
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(repo.path())
            .output()
            .expect("git");
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let case = cases().join("tls-downgrade");
    let config = repo.path().join("gateways");
    copy_dir(&case.join("old"), &config);
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "old"]);
    std::fs::remove_dir_all(&config).unwrap();
    copy_dir(&case.join("new"), &config);
    let from_git = pier_diff(repo.path(), &["git:HEAD", "gateways"]);
    let from_dirs = pier_diff(&case, &["old", "new"]);
    assert_eq!(
        from_git.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&from_git.stderr)
    );
    assert_eq!(stdout(&from_git), stdout(&from_dirs));
    let explicit = pier_diff(&config, &["git:HEAD:.", "."]);
    assert_eq!(
        stdout(&explicit),
        stdout(&from_dirs),
        "a path relative to a subdirectory"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}
