//! Runs the `pier` binary under test: `pier serve` on a config directory (ephemeral xDS and admin ports, read
//! back from `--address-file`), `pier bootstrap` for each proxy, and the config directory itself, whose
//! files are written, replaced and removed atomically (write a hidden temp file, rename it into place) so
//! pier's watcher never reads half a file. pier is killed on drop; [`Pier::terminate`] is the graceful path
//! (SIGTERM, sent with `kill(1)` because the suite uses no `unsafe`).
//!
//! xDS runs authenticated, as a deployment should: `pier certs` makes a CA and pier's certificate in the
//! scene's work directory (`pki/`), `pier serve` requires client certificates from it, and each proxy's
//! bootstrap presents its Gateway's certificate (issued by `pier certs --gateway` when the proxy starts).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ::pier::testkit::http::{self, Response};
use serde_json::Value;

use super::{Mode, dump_log_tail, eventually};

/// Deadline for pier to publish its addresses, to become ready, and to exit after SIGTERM.
pub const PIER_TIMEOUT: Duration = Duration::from_secs(20);

pub fn pier_bin() -> &'static str {
    env!("CARGO_BIN_EXE_pier")
}

/// A command for the pier binary with no `PIER_*` variables inherited, so the caller's environment cannot
/// change what the suite tests.
fn pier_command() -> Command {
    let mut cmd = Command::new(pier_bin());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PIER_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// Runs a short `pier` command (e.g. `pier certs`) to completion; panics with its stderr if it fails.
fn run_pier(args: &[&str]) {
    let out = pier_command().args(args).output().expect("running pier");
    assert!(
        out.status.success(),
        "pier {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The watched directory of manifests (inside a scene's work directory, so `E2E_KEEP=1` keeps it too).
pub struct ConfigDir {
    path: PathBuf,
}

impl ConfigDir {
    pub fn new(parent: &Path) -> ConfigDir {
        let path = parent.join("config");
        std::fs::create_dir_all(&path).expect("config dir");
        ConfigDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates or replaces `name` in one step (rename), never exposing a partial file.
    pub fn write(&self, name: &str, contents: &str) {
        let tmp = self.path().join(format!(".{name}.tmp"));
        std::fs::write(&tmp, contents).expect("writing a manifest");
        std::fs::rename(&tmp, self.path().join(name)).expect("renaming a manifest into place");
    }

    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.path().join(name)).expect("removing a manifest");
    }
}

/// How to run `pier serve`.
#[derive(Debug, Clone, Default)]
pub struct PierOptions {
    /// `--allow-loopback` (every scenario's upstreams are on 127.0.0.0/8; the guardrail scenario runs without).
    pub allow_loopback: bool,
    /// A fixed xDS address (a restarted pier must come back where the proxies' bootstraps point).
    pub xds_address: Option<SocketAddr>,
    /// Further flags.
    pub extra_args: Vec<String>,
}

/// A running `pier serve`.
pub struct Pier {
    pub label: String,
    /// `pier certs` output shared by every pier and proxy of the scene.
    pub pki: PathBuf,
    pub xds: SocketAddr,
    pub admin: SocketAddr,
    child: Option<Child>,
    log: PathBuf,
}

impl Pier {
    /// Starts `pier serve` on `config` and waits for its address file. Its log goes to `<work>/<label>.log`.
    pub async fn start(config: &ConfigDir, work: &Path, label: &str, options: &PierOptions) -> Pier {
        let address_file = work.join(format!("{label}-addresses.json"));
        let _ = std::fs::remove_file(&address_file);
        let log = work.join(format!("{label}.log"));
        let log_file = std::fs::File::create(&log).expect("creating the pier log");
        let xds = options.xds_address.map_or("127.0.0.1:0".to_string(), |a| a.to_string());
        let pki = work.join("pki");
        run_pier(&["certs", "--out", &pki.display().to_string(), "--server-ip", "127.0.0.1"]);
        let file = |f: &str| pki.join(f).display().to_string();
        let mut cmd = pier_command();
        cmd.arg("serve")
            .arg("--config-dir")
            .arg(config.path())
            .args(["--xds-address", &xds, "--admin-address", "127.0.0.1:0"])
            .arg("--address-file")
            .arg(&address_file)
            // Envoy's listeners bind loopback only: nothing the suite starts is reachable from outside.
            .args(["--listener-address", "127.0.0.1"])
            .args([
                "--xds-tls-cert",
                &file("server/tls.crt"),
                "--xds-tls-key",
                &file("server/tls.key"),
            ])
            .args(["--xds-client-ca", &file("ca.crt")])
            .args(&options.extra_args)
            .env(
                "PIER_LOG",
                std::env::var("E2E_PIER_LOG").unwrap_or_else(|_| "info".to_string()),
            )
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log handle"))
            .stderr(log_file);
        if options.allow_loopback {
            cmd.arg("--allow-loopback");
        }
        let child = cmd.spawn().expect("spawning pier serve");
        let mut pier = Pier {
            label: label.to_string(),
            pki,
            xds: "127.0.0.1:0".parse().unwrap(),
            admin: "127.0.0.1:0".parse().unwrap(),
            child: Some(child),
            log,
        };
        let deadline = Instant::now() + PIER_TIMEOUT;
        let addresses: Value = loop {
            // Written atomically by pier, but tolerate a torn read anyway: just try again.
            if let Some(v) = std::fs::read(&address_file)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
            {
                break v;
            }
            if let Some(Ok(Some(status))) = pier.child.as_mut().map(Child::try_wait) {
                // Dropping `pier` while panicking prints its log.
                panic!("pier serve ({label}) exited during start-up: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "pier ({label}) wrote no address file within {PIER_TIMEOUT:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let parse = |key: &str| -> SocketAddr {
            let text = addresses[key]
                .as_str()
                .unwrap_or_else(|| panic!("address file lacks {key}: {addresses}"));
            text.parse()
                .unwrap_or_else(|e| panic!("address file {key}={text:?}: {e}"))
        };
        pier.xds = parse("xds");
        pier.admin = parse("admin");
        pier
    }

    /// Waits until `/readyz` answers 200 (the first complete read of the directory is being served).
    pub async fn wait_ready(&self) {
        eventually(&format!("pier {} /readyz 200", self.label), PIER_TIMEOUT, || async {
            let r = self.admin_get("/readyz").await?;
            if r.status == 200 {
                Ok(())
            } else {
                Err(format!("/readyz {}: {}", r.status, r.body))
            }
        })
        .await
    }

    pub async fn admin_get(&self, path: &str) -> Result<Response, String> {
        http::get(self.admin, &self.admin.to_string(), path).await
    }

    /// An admin endpoint's body as JSON (panics on a non-200 or non-JSON answer).
    pub async fn admin_json(&self, path: &str) -> Value {
        let r = self
            .admin_get(path)
            .await
            .unwrap_or_else(|e| panic!("pier {path}: {e}"));
        assert_eq!(r.status, 200, "pier {path}: {}", r.body);
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("pier {path} is not JSON ({e}): {}", r.body))
    }

    /// `pier bootstrap` for a proxy of `gateway`, pointed at this pier and at the suite's DNS responder, with
    /// an ephemeral admin port.
    pub fn bootstrap(&self, gateway: &str, mode: Mode, dns: SocketAddr, node_id: &str) -> Value {
        let (dns, node_id) = (dns.to_string(), node_id.to_string());
        let mut args = vec!["--admin-port", "0", "--node-id", &node_id, "--dns-resolver", &dns];
        args.extend(["--output", "json"]);
        if mode == Mode::Delta {
            args.push("--delta");
        }
        self.bootstrap_with(gateway, &args)
    }

    /// `pier bootstrap --grpc` for a proxyless gRPC client of `gateway`: the JSON `GRPC_XDS_BOOTSTRAP`
    /// names, with gRPC's `tls` channel credentials presenting the Gateway's client certificate.
    pub fn grpc_bootstrap(&self, gateway: &str, node_id: &str) -> Value {
        self.bootstrap_with(gateway, &["--grpc", "--node-id", node_id])
    }

    /// [`Pier::grpc_bootstrap`] declaring the CA files under `trust_dir` as certificate providers
    /// (`--trust-dir`), so pier serves the client the TLS backends it can verify.
    pub fn grpc_bootstrap_trusting(&self, gateway: &str, node_id: &str, trust_dir: &Path) -> Value {
        let dir = trust_dir.display().to_string();
        self.bootstrap_with(gateway, &["--grpc", "--node-id", node_id, "--trust-dir", &dir])
    }

    /// `pier bootstrap ARGS` for `gateway`, pointed at this pier over mTLS with the Gateway's certificate
    /// (issued here), printed as JSON.
    fn bootstrap_with(&self, gateway: &str, args: &[&str]) -> Value {
        let pki = self.pki.display().to_string();
        run_pier(&["certs", "--out", &pki, "--gateway", gateway]);
        let certs = self.pki.join("gateways").join(gateway.replace('/', "."));
        let file = |f: &str| certs.join(f).display().to_string();
        let out = pier_command()
            .args([
                "bootstrap",
                "--gateway",
                gateway,
                "--xds-address",
                &self.xds.to_string(),
            ])
            .args(args)
            .args(["--xds-tls-cert", &file("tls.crt"), "--xds-tls-key", &file("tls.key")])
            .args(["--xds-ca", &file("ca.crt")])
            .output()
            .expect("running pier bootstrap");
        let what = format!("pier bootstrap {}", args.join(" "));
        assert!(
            out.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{what} printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// SIGTERM, then wait (bounded) for pier to exit on its own. Panics if it does not.
    pub async fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("pier is running");
        let signalled = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(signalled.is_ok_and(|s| s.success()), "sending SIGTERM to pier failed");
        let deadline = Instant::now() + PIER_TIMEOUT;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("pier ({}) did not exit within {PIER_TIMEOUT:?} of SIGTERM", self.label);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// pier's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Pier {
    fn drop(&mut self) {
        if std::thread::panicking() {
            dump_log_tail(&format!("pier {}", self.label), &self.log, 40);
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
