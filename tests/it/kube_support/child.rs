//! The real `pier serve --kubernetes` binary as a child process against the fake API server (for what an
//! in-process pier cannot show: its memory, a SIGKILL), and the kubeconfig that points a client there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::wait_for;
use crate::fake_apiserver::FakeApiServer;

/// Writes `dir/kubeconfig` for `api`, with `token` as the user's bearer token (the fake API server names
/// a client by it; none: an anonymous one), and returns its path.
pub fn kubeconfig(api: &FakeApiServer, dir: &Path, token: Option<&str>) -> PathBuf {
    let user = token.map_or("{}".to_string(), |t| format!("{{token: {t}}}"));
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: '{}'}}}}]\n\
             users: [{{name: u, user: {user}}}]\n\
             contexts: [{{name: c, context: {{cluster: fake, user: u, namespace: default}}}}]\ncurrent-context: c\n",
            api.url()
        ),
    )
    .unwrap();
    path
}

/// A running `pier serve --kubernetes`, killed (SIGKILL) and reaped when dropped.
pub struct ServeChild {
    pub child: Child,
    /// Its admin API.
    pub admin: std::net::SocketAddr,
    /// Where its kubeconfig and address file live (removed with it).
    _dir: tempfile::TempDir,
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `pier serve --kubernetes` on ephemeral loopback ports against `api`, authenticating with
/// `token`, with the Lease in `pier-system` and `extra` arguments; returns once it wrote its addresses.
pub async fn serve(api: &FakeApiServer, token: Option<&str>, extra: &[&str]) -> ServeChild {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(api, dir.path(), token);
    let address_file = dir.path().join("addr.json");
    let child = Command::new(env!("CARGO_BIN_EXE_pier"))
        .args([
            "serve",
            "--kubernetes",
            "--xds-address",
            "127.0.0.1:0",
            "--admin-address",
            "127.0.0.1:0",
        ])
        .arg("--address-file")
        .arg(&address_file)
        .args(["--lease-namespace", "pier-system"])
        .args(extra)
        .env("KUBECONFIG", &kubeconfig)
        .env("PIER_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut serve = ServeChild {
        child,
        admin: "127.0.0.1:0".parse().unwrap(),
        _dir: dir,
    };
    let addrs: Value = wait_for("pier's address file", || {
        std::fs::read_to_string(&address_file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
    })
    .await;
    serve.admin = addrs["admin"].as_str().unwrap().parse().unwrap();
    serve
}
