//! Scenario 24: `protocol: MCP` XBackends carry real MCP traffic between the official MCP Python SDK's
//! client and server (PyPI `mcp` 2.3.0: `ClientSession` over its streamable HTTP client transport;
//! `MCPServer` — v1's FastMCP — with stateful sessions, served by uvicorn), client → Envoy (configured by
//! pier over ADS) → server, to a plaintext backend and to a TLS one (`tls`, trust from a ConfigMap) at once.
//! Nothing MCP-speaking here is hand-written: `e2e/mcp_sdk/` holds only the SDK calls.
//!
//! Through Envoy, for each backend:
//!
//! - `initialize` negotiates a session (the SDK's newest handshake version) and `tools/list` names the
//!   server's tools; a quick `tools/call` (`echo`) answers;
//! - `slow` reports progress once a second for 17 s, past Envoy's default 15 s route timeout, and its
//!   notifications (at least 15) and then the result reach the client (pier disables the default deadline
//!   on a rule that reaches an MCP backend), while three more sessions run concurrently, each initializing
//!   and calling `echo` with its own session id;
//! - stream resumption works: the server (with an `EventStore`) closes a tool call's event stream midway,
//!   the SDK client reconnects with `GET` and `Last-Event-ID` through Envoy, and gets the notification it
//!   missed, replayed, and then the result. That is the only stream resumed: the SDK client silently
//!   resumes any stream that breaks, so one cut on the way (by a 15 s route timeout, say) would otherwise
//!   go unnoticed — with `timeouts.request: 15s` on the rules, this scenario fails on exactly that;
//! - every session ends with the SDK's `DELETE` (`terminate_on_close`), which reaches the server and is
//!   accepted, after which a request carrying the ended session's id is refused `404` by the server;
//! - the server saw every request with the Host the client sent (it runs with DNS-rebinding protection
//!   allowing only that Host, so a rewritten Host would be refused) and, for the TLS backend, over TLS.
//!
//! Sessions are the point, so the client speaks the SDK's `initialize` handshake (protocol 2025-11-25); SDK
//! 2.x also speaks the session-less 2026-07-28 revision, which this scenario does not use.
//!
//! The server prints one JSON line per request it answered, which the test reads as the server's side of
//! the story; the client prints a JSON summary. `python3` must import `mcp` 2.x: `scripts/test.sh`
//! installs it (`scripts/python_deps.sh`), into `target/python-deps` where pip may not install into the
//! interpreter itself, and the test adds that directory to `PYTHONPATH`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pier::testkit::http;
use pier::testkit::lo;
use pier::testkit::pki::Ca;
use serde_json::{Value, json};

use crate::harness::manifests::*;
use crate::harness::python::python;
use crate::harness::scene::{CONVERGE, HOST, Scene};
use crate::harness::{Mode, dump_log_tail, eventually, keep_work_dirs};

both_modes!(run);

/// How long the `slow` tool runs, reporting progress once a second: past Envoy's default route timeout.
const SLOW_SECONDS: u32 = 17;
/// Envoy's default route timeout, which a call to an MCP backend must outlive.
const ENVOY_DEFAULT_ROUTE_TIMEOUT: f64 = 15.0;
/// Sessions the client runs beside its main one, concurrently with the `slow` call.
const SIDE_SESSIONS: usize = 3;
/// Bound on the SDK server starting (importing the SDK and binding its port).
const SERVER_START: Duration = Duration::from_secs(30);
/// Bound on one client run (the client bounds itself a little sooner and reports where it was).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
const CLIENT_SELF_TIMEOUT_SECS: u64 = 75;
/// The `pip` line that installs what this test needs (the message of a failure to import it).
const INSTALL: &str = "python3 -m pip install mcp==2.3.0";

/// One MCP backend: an SDK server, its XBackend and the rule that reaches it.
struct Variant {
    /// XBackend name, path prefix of its rule (`/<name>`) and the label in failure messages.
    name: &'static str,
    hostname: &'static str,
    /// The server binds `lo(n)` (an ephemeral port).
    lo: u8,
    tls: bool,
}

const VARIANTS: [Variant; 2] = [
    Variant {
        name: "plain",
        hostname: "plain.mcp-sdk.e2e.test",
        lo: 2,
        tls: false,
    },
    Variant {
        name: "tls",
        hostname: "tls.mcp-sdk.e2e.test",
        lo: 3,
        tls: true,
    },
];

impl Variant {
    fn ip(&self) -> Ipv4Addr {
        lo(self.lo)
    }

    /// The SDK server's endpoint path, which the rule's prefix `/<name>` matches.
    fn path(&self) -> String {
        format!("/{}/mcp", self.name)
    }

    fn xbackend(&self, port: u16) -> Value {
        let mut spec = json!({"type": "ExternalHostname", "externalHostname": {"hostname": self.hostname},
            "port": {"number": port}, "protocol": "MCP"});
        if self.tls {
            spec["tls"] = backend_tls("ServerOnly", self.hostname, "sdk-ca");
        }
        json!({"apiVersion": format!("{XBACKEND_GROUP}/v1alpha1"), "kind": "XBackend",
            "metadata": {"name": self.name, "namespace": NS}, "spec": spec})
    }
}

async fn run(mode: Mode) {
    require_sdk();
    let work = work_dir(mode);
    let mut scene = Scene::new("s24", mode).await;
    let ca = Ca::new("e2e MCP SDK CA");

    let mut servers = Vec::new();
    for v in &VARIANTS {
        let tls = v.tls.then(|| {
            let leaf = ca.server(&[v.hostname], &[]);
            let (cert, key) = (work.path().join("tls.crt"), work.path().join("tls.key"));
            std::fs::write(&cert, &leaf.cert_pem).expect("writing the server certificate");
            std::fs::write(&key, &leaf.key_pem).expect("writing the server key");
            (cert, key)
        });
        servers.push(SdkServer::start(v, tls, work.path()).await);
        scene.dns.set(v.hostname, &[v.ip()]);
    }

    let mut docs = vec![
        gateway_class(),
        gateway("gw", scene.port),
        ca_config_map("sdk-ca", &ca.cert_pem()),
    ];
    docs.extend(VARIANTS.iter().zip(&servers).map(|(v, s)| v.xbackend(s.port)));
    let rules = VARIANTS
        .iter()
        .map(|v| rule(&format!("/{}", v.name), vec![xbackend_ref(v.name)]))
        .collect();
    docs.push(http_route("mcp-sdk", "gw", rules));
    scene.write("00-gateway.yaml", &docs);
    scene.start_pier(super::loopback_allowed()).await;
    scene.start_envoy("default/gw").await;
    let addr = scene.listener();

    // Until the route and the cluster are in place: a plain GET through Envoy reaches the SDK server (which
    // refuses it, having no session; that it answered at all is the point).
    for (v, server) in VARIANTS.iter().zip(&servers) {
        let what = format!(
            "s24/{}: GET {} through Envoy reaching the SDK server",
            mode.label(),
            v.path()
        );
        eventually(&what, CONVERGE, || async {
            let r = http::get(addr, HOST, &v.path()).await?;
            if server.requests().iter().any(|q| q["path"] == v.path()) {
                Ok(())
            } else {
                Err(format!(
                    "status {} and the server saw nothing: {}",
                    r.status,
                    r.body.trim()
                ))
            }
        })
        .await;
    }

    let started = Instant::now();
    let (plain, tls) = tokio::join!(
        run_client(addr, &VARIANTS[0], work.path()),
        run_client(addr, &VARIANTS[1], work.path())
    );
    eprintln!("s24/{}: both SDK clients done in {:?}", mode.label(), started.elapsed());
    check(&VARIANTS[0], &plain, &servers[0]);
    check(&VARIANTS[1], &tls, &servers[1]);
}

/// What the client reported and the server saw, for one backend.
fn check(v: &Variant, summary: &Value, server: &SdkServer) {
    let name = v.name;
    let tools: Vec<&str> = summary["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for tool in ["echo", "slow", "resumable"] {
        assert!(tools.contains(&tool), "{name}: tools/list names {tool}: {summary}");
    }
    assert_eq!(summary["server"], "pier-e2e-sdk", "{name}: {summary}");
    let version = summary["protocol_version"].as_str().expect("a negotiated version");
    assert_eq!(summary["echo"]["text"], "echo: through envoy", "{name}: {summary}");
    assert_eq!(summary["echo"]["is_error"], false, "{name}: {summary}");

    let slow = &summary["slow"];
    assert_eq!(slow["is_error"], false, "{name}: the slow call succeeds: {slow}");
    assert_eq!(
        slow["text"],
        format!("slow done after {SLOW_SECONDS} s"),
        "{name}: {slow}"
    );
    let progress = slow["progress"].as_u64().unwrap_or(0);
    assert!(
        progress >= 15,
        "{name}: at least 15 progress notifications arrived: {slow}"
    );
    let seconds = slow["seconds"].as_f64().unwrap_or(0.0);
    assert!(
        seconds > ENVOY_DEFAULT_ROUTE_TIMEOUT,
        "{name}: the slow call outlived Envoy's default route timeout: {slow}"
    );

    let resumed = &summary["resumable"];
    assert_eq!(resumed["is_error"], false, "{name}: {resumed}");
    assert_eq!(resumed["text"], "resumed", "{name}: {resumed}");
    assert_eq!(
        resumed["progress"], 3,
        "{name}: every progress notification, the one sent while the stream was closed too: {resumed}"
    );
    let tokens: HashSet<&str> = resumed["resumption_tokens"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();

    let main = summary["session"].as_str().expect("the main session's id");
    let sides = summary["sessions"].as_array().expect("the side sessions");
    assert_eq!(sides.len(), SIDE_SESSIONS, "{name}: {summary}");
    let mut sessions = vec![main];
    for (i, side) in sides.iter().enumerate() {
        assert_eq!(side["echo"]["text"], format!("echo: side {i}"), "{name}: {side}");
        sessions.push(side["session"].as_str().expect("a side session's id"));
    }
    let distinct: HashSet<&str> = sessions.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        sessions.len(),
        "{name}: every session has its own id: {sessions:?}"
    );

    let requests = server.requests();
    let seen = |method: &str, session: &str| {
        requests
            .iter()
            .filter(|q| q["method"] == method && q["session"] == session)
            .collect::<Vec<_>>()
    };
    for session in &sessions {
        let deletes = seen("DELETE", session);
        assert!(
            deletes.iter().any(|q| q["status"] == 200),
            "{name}: the DELETE ending session {session} reached the server and was accepted: {deletes:?}"
        );
        assert_eq!(
            summary["after_delete"][session], 404,
            "{name}: a request in ended session {session} is refused: {summary}"
        );
        let refused = seen("POST", session);
        assert!(
            refused.iter().any(|q| q["status"] == 404),
            "{name}: the 404 for ended session {session} came from the server: {refused:?}"
        );
        assert!(
            refused.iter().all(|q| q["protocol_version"] == version),
            "{name}: requests in session {session} carry the negotiated version {version}: {refused:?}"
        );
    }
    let resumptions: Vec<&Value> = seen("GET", main)
        .into_iter()
        .filter(|q| q["last_event_id"].as_str().is_some_and(|id| tokens.contains(id)))
        .collect();
    assert!(
        resumptions.iter().any(|q| q["status"] == 200),
        "{name}: the client resumed the broken stream with GET and a Last-Event-ID it had been sent \
         (tokens {tokens:?}); the server saw {:?}",
        seen("GET", main)
    );

    // The SDK client resumes any event stream that breaks after an event id, so a stream Envoy cut (at a
    // route timeout, say) would heal unseen by the summary: only the one the server broke on purpose may
    // have been resumed.
    let resumed_anywhere: Vec<&Value> = requests.iter().filter(|q| !q["last_event_id"].is_null()).collect();
    assert_eq!(
        resumed_anywhere.len(),
        1,
        "{name}: no stream but the one the server closed was resumed (none was cut on the way): {resumed_anywhere:?}"
    );

    let scheme = if v.tls { "https" } else { "http" };
    for q in &requests {
        assert_eq!(
            q["host"], HOST,
            "{name}: the Host the client sent reached the server: {q}"
        );
        assert_eq!(q["scheme"], scheme, "{name}: {q}");
    }
}

/// Fails, naming the install command, unless `python3` imports the SDK's 2.x API.
fn require_sdk() {
    let probe = python()
        .args([
            "-c",
            "import importlib.metadata as m; from mcp.server.mcpserver import MCPServer; \
             from mcp.client.streamable_http import streamable_http_client; print(m.version('mcp'))",
        ])
        .output();
    match probe {
        Ok(out) if out.status.success() => {
            eprintln!("s24: MCP Python SDK {}", String::from_utf8_lossy(&out.stdout).trim());
        }
        Ok(out) => panic!(
            "the MCP Python SDK (PyPI `mcp` 2.x) is not importable by python3: run `{INSTALL}` \
             (scripts/test.sh installs it). python3 said:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("cannot run python3 ({e}); it and the MCP Python SDK are needed: `{INSTALL}`"),
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/mcp_sdk").join(name)
}

/// Certificates and the Python processes' logs (kept with `E2E_KEEP=1`).
fn work_dir(mode: Mode) -> tempfile::TempDir {
    let mut dir = tempfile::Builder::new()
        .prefix(&format!("pier-e2e-s24-sdk-{}-", mode.label()))
        .tempdir()
        .expect("work dir");
    if keep_work_dirs() {
        dir.disable_cleanup(true);
        eprintln!("E2E: s24/{} SDK work dir {}", mode.label(), dir.path().display());
    }
    dir
}

/// The SDK server (`e2e/mcp_sdk/server.py`) as a child process, killed and reaped on drop. Its stdout is
/// read line by line: the port it bound, then one JSON object per request it answered.
struct SdkServer {
    child: Child,
    port: u16,
    lines: Arc<Mutex<Vec<Value>>>,
    log: PathBuf,
    label: String,
}

impl SdkServer {
    async fn start(v: &Variant, tls: Option<(PathBuf, PathBuf)>, work: &Path) -> SdkServer {
        let label = format!("mcp-sdk-server-{}", v.name);
        let log = work.join(format!("{label}.log"));
        let mut cmd = python();
        cmd.arg(script("server.py"))
            .args([
                "--host",
                &v.ip().to_string(),
                "--path",
                &v.path(),
                "--allowed-host",
                HOST,
            ])
            .args(["--slow-seconds", &SLOW_SECONDS.to_string()]);
        if let Some((cert, key)) = &tls {
            cmd.arg("--certfile").arg(cert).arg("--keyfile").arg(key);
        }
        let stderr = std::fs::File::create(&log).expect("server log");
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("starting the MCP SDK server (python3)");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or_else(|_| json!({"unparsed": line}));
                sink.lock().unwrap().push(value);
            }
        });
        let mut server = SdkServer {
            child,
            port: 0,
            lines,
            log,
            label,
        };
        let deadline = Instant::now() + SERVER_START;
        loop {
            let port = server
                .lines
                .lock()
                .unwrap()
                .iter()
                .find_map(|l| l["listening"].as_u64());
            if let Some(port) = port {
                server.port = u16::try_from(port).expect("a port");
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "the MCP SDK server ({}) exited with {status} before listening:\n{}",
                    server.label,
                    pier::testkit::log_tail(&server.log, 40)
                );
            }
            assert!(
                Instant::now() < deadline,
                "the MCP SDK server ({}) did not report its port within {SERVER_START:?}",
                server.label
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every request the server has answered so far.
    fn requests(&self) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| l.get("request").cloned())
            .collect()
    }
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            dump_log_tail(&self.label, &self.log, 40);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `e2e/mcp_sdk/client.py` against `v`'s endpoint through Envoy at `addr` (bounded; the child is
/// killed if it overruns) and returns its JSON summary. Panics, with what it printed, if it failed.
async fn run_client(addr: SocketAddr, v: &Variant, work: &Path) -> Value {
    let log = work.join(format!("mcp-sdk-client-{}.log", v.name));
    let mut cmd = tokio::process::Command::from(python());
    cmd.arg(script("client.py"))
        .args(["--url", &format!("http://{addr}{}", v.path()), "--host-header", HOST])
        .args(["--sessions", &SIDE_SESSIONS.to_string()])
        .args(["--timeout", &CLIENT_SELF_TIMEOUT_SECS.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(CLIENT_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{}: the MCP SDK client did not finish within {CLIENT_TIMEOUT:?}",
                v.name
            )
        })
        .expect("running the MCP SDK client (python3)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::write(&log, format!("{stdout}\n--- stderr ---\n{stderr}"));
    let summary: Option<Value> = stdout.lines().last().and_then(|l| serde_json::from_str(l).ok());
    match summary {
        Some(s) if out.status.success() => s,
        _ => panic!(
            "{}: the MCP SDK client failed ({}); it printed:\n{stdout}\n--- stderr ---\n{stderr}",
            v.name, out.status
        ),
    }
}
