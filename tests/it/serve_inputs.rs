//! `pier serve` on a config directory that an outsider writes to: files it must not open (a FIFO, a link
//! to `/dev/zero`), a file over `--max-file-bytes` and an alias bomb never stall reloads, never take
//! down the configuration already served, and never stop pier being ready; each is named where the
//! operator looks (`/debug/status`, `/readyz`). The real binary, on loopback, every wait bounded.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pier::testkit::http::{self, Request, Response};
use serde_json::Value;

/// Deadline for every wait: pier's start, a change showing up.
const WAIT: Duration = Duration::from_secs(20);

/// A running `pier serve`, killed on drop (its log printed if the test failed).
pub struct Serve {
    pub admin: SocketAddr,
    pub xds: SocketAddr,
    child: Child,
    log: PathBuf,
}

impl Serve {
    /// Starts `pier serve --config-dir dir` with `args`; `Err` with pier's log if it exits first.
    pub fn start(dir: &Path, work: &Path, args: &[&str]) -> Result<Serve, String> {
        Serve::start_on("127.0.0.1:0", dir, work, args)
    }

    /// [`Serve::start`] with the admin API on `admin`.
    pub fn start_on(admin: &str, dir: &Path, work: &Path, args: &[&str]) -> Result<Serve, String> {
        let address_file = work.join("addresses.json");
        let log = work.join("pier.log");
        let log_file = std::fs::File::create(&log).expect("creating the log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pier"));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PIER_") {
                cmd.env_remove(key);
            }
        }
        let mut child = cmd
            .args(["serve", "--xds-address", "127.0.0.1:0", "--admin-address", admin])
            .arg("--config-dir")
            .arg(dir)
            .arg("--address-file")
            .arg(&address_file)
            .args(args)
            .env("PIER_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log handle"))
            .stderr(log_file)
            .spawn()
            .expect("spawning pier serve");
        let deadline = Instant::now() + WAIT;
        loop {
            let addresses = std::fs::read(&address_file)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            let addr = |key: &str| addresses.as_ref().and_then(|v| v[key].as_str()?.parse().ok());
            if let (Some(admin), Some(xds)) = (addr("admin"), addr("xds")) {
                return Ok(Serve { admin, xds, child, log });
            }
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(format!("pier serve exited ({status}):\n{log}"));
            }
            assert!(Instant::now() < deadline, "pier wrote no address file within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub async fn send(&self, request: Request) -> Response {
        http::send(self.admin, &request).await.expect("the admin API answers")
    }

    /// GET `path` as curl would send it (Host: the address).
    pub async fn get(&self, path: &str) -> Response {
        self.send(Request::get(&self.admin.to_string(), path)).await
    }

    pub async fn json(&self, path: &str) -> Value {
        let r = self.get(path).await;
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.body))
    }

    /// Waits until `/debug/status` satisfies `pred`, returning it.
    pub async fn status_until(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let status = self.json("/debug/status").await;
            if pred(&status) {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {WAIT:?}; status: {status}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- pier log ---\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

pub fn gateway(hostname: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: pier}}
spec: {{controllerName: pier.dev/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: default}}
spec:
  gatewayClassName: pier
  listeners:
  - {{name: http, protocol: HTTP, port: 8080}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [{hostname}]
  rules: [{{matches: [{{path: {{type: PathPrefix, value: /}}}}]}}]
"
    )
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("running mkfifo");
    assert!(status.success());
}

#[tokio::test]
async fn files_an_outsider_writes_never_stall_reloads_or_drop_the_served_config() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("gw.yaml"), gateway("before.example.com")).unwrap();
    let mut pier = Serve::start(&dir, work.path(), &["--max-file-bytes", "4096"]).unwrap();
    pier.status_until("the first read", |s| s["generation"] == 1).await;
    assert!(pier.get("/debug/config_dump").await.body.contains("before.example.com"));

    // Files pier must not open, and one over the cap.
    mkfifo(&dir.join("fifo.yaml"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).unwrap();
    std::fs::write(dir.join("big.yaml"), format!("# {}\n", "x".repeat(5_000))).unwrap();
    let status = pier
        .status_until("three warnings", |s| {
            s["source_warnings"].as_array().is_some_and(|w| w.len() == 3)
        })
        .await;
    let warnings = status["source_warnings"].to_string();
    for want in [
        "big.yaml: skipped: 5003 bytes is over the 4096-byte limit for one file (--max-file-bytes)",
        "fifo.yaml: skipped: it is a FIFO, not a regular file",
        "zero.yaml: skipped: it is a character device, not a regular file",
    ] {
        assert!(warnings.contains(want), "{want} in {warnings}");
    }

    // An alias bomb (1.6 KB expanding to 9 MB): an error naming the file; the last good config stays.
    let bomb = format!(
        "a: &a {}\nb: &b [{}]\nc: [{}]\n",
        "x".repeat(1_000),
        vec!["*a"; 95].join(","),
        vec!["*b"; 95].join(",")
    );
    std::fs::write(dir.join("bomb.yaml"), bomb).unwrap();
    let status = pier
        .status_until("the bomb's error", |s| s["source_error"].is_string())
        .await;
    let error = status["source_error"].as_str().unwrap();
    assert!(
        error.contains("bomb.yaml: document 0: invalid YAML: the file expands to more than 4096 bytes"),
        "{error}"
    );
    let ready = pier.get("/readyz").await;
    assert_eq!(ready.status, 200, "still ready on the last good config: {}", ready.body);
    assert!(ready.body.contains("bomb.yaml"), "{}", ready.body);
    assert!(pier.get("/debug/config_dump").await.body.contains("before.example.com"));

    // Reloads go on: the bomb removed and the Gateway edited, the edit is served.
    std::fs::remove_file(dir.join("bomb.yaml")).unwrap();
    std::fs::write(dir.join("gw.yaml"), gateway("after.example.com")).unwrap();
    // The removal and the edit may be read as one reload or two (on a loaded host the watcher can
    // see them apart), so the generation is at least 2, not exactly.
    pier.status_until("the edit", |s| {
        s["source_error"].is_null() && s["generation"].as_u64().is_some_and(|g| g >= 2)
    })
    .await;
    let deadline = Instant::now() + WAIT;
    while !pier.get("/debug/config_dump").await.body.contains("after.example.com") {
        assert!(Instant::now() < deadline, "the edit was never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(pier.running());
}

/// `GET path` with this Host and these headers.
fn get(host: &str, path: &str, headers: &[(&str, &str)]) -> Request {
    headers
        .iter()
        .fold(Request::get(host, path), |r, (name, value)| r.header(name, value))
}

#[tokio::test]
async fn the_admin_api_answers_only_its_own_names_and_with_a_token_only_to_its_holder() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("gw.yaml"), gateway("a.example.com")).unwrap();
    let token_file = work.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let args = [
        "--admin-token-file",
        token_file.to_str().unwrap(),
        "--admin-allowed-host",
        "pier-admin.pier-system.svc",
    ];
    let pier = Serve::start(&dir, work.path(), &args).unwrap();
    let addr = pier.admin.to_string();
    let port = pier.admin.port();
    let bearer = [("Authorization", "Bearer s3cret-token")];

    // DNS rebinding: a page's own name, pointed at 127.0.0.1, is refused on every path, probes included.
    for path in ["/healthz", "/debug/status"] {
        let r = pier
            .send(get(&format!("rebind.attacker.example:{port}"), path, &bearer))
            .await;
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert!(r.body.contains("\"rebind.attacker.example:"), "{}", r.body);
    }
    // IP literals, localhost and the listed name pass.
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("pier-admin.pier-system.svc:{port}"),
    ] {
        assert_eq!(
            pier.send(get(&host, "/debug/status", &bearer)).await.status,
            200,
            "{host}"
        );
    }

    // The probes are open; everything else needs the token.
    let ready = Instant::now() + WAIT;
    while pier.get("/readyz").await.status != 200 {
        assert!(Instant::now() < ready, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pier.get("/healthz").await.status, 200);
    for path in ["/metrics", "/debug/status", "/debug/config_dump", "/debug/clients"] {
        let none = pier.get(path).await;
        assert_eq!(none.status, 401, "{path}");
        assert_eq!(none.header("www-authenticate"), Some("Bearer realm=\"pier-admin\""));
        let wrong = pier
            .send(get(&addr, path, &[("Authorization", "Bearer s3cret-tokeN")]))
            .await;
        assert_eq!(wrong.status, 401, "{path}");
        assert_eq!(pier.send(get(&addr, path, &bearer)).await.status, 200, "{path}");
    }
}

#[test]
fn an_admin_api_beyond_loopback_without_a_token_is_refused_at_start() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    // Refused before anything is bound, so nothing listens beyond loopback even for a moment.
    let Err(log) = Serve::start_on("0.0.0.0:0", &dir, work.path(), &[]) else {
        panic!("pier served an unauthenticated admin API on 0.0.0.0");
    };
    assert!(
        log.contains("the admin address 0.0.0.0:0 is not loopback and no admin token is set")
            && log.contains("--admin-allow-unauthenticated"),
        "{log}"
    );
}

#[tokio::test]
async fn a_private_key_quoted_by_an_error_is_redacted_wherever_the_admin_api_shows_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("config");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("gw.yaml"), gateway("a.example.com")).unwrap();
    let pier = Serve::start(&dir, work.path(), &[]).unwrap();
    pier.status_until("the first read", |s| s["generation"] == 1).await;

    // A key pasted where a number belongs: the parse error quotes the value.
    let key = "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAs3cr3tKeyMaterial\\n-----END RSA PRIVATE KEY-----";
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: s, namespace: default}}\nspec: {{ports: [{{port: \"{key}\"}}]}}\n"
    );
    std::fs::write(dir.join("svc.yaml"), service).unwrap();
    pier.status_until("the error", |s| s["source_error"].is_string()).await;
    for path in ["/readyz", "/debug/status"] {
        let body = pier.get(path).await.body;
        assert!(
            body.contains("svc.yaml") && body.contains("[redacted private key]"),
            "{path}: {body}"
        );
        assert!(!body.contains("s3cr3tKeyMaterial"), "{path} shows the key: {body}");
    }
}
