//! The scenario's Python processes (`e2e/proxyless_grpc/driver.py`): gRPC servers that report every call
//! they take, and grpcio clients that keep their `xds:///` channels open between commands. Every wait is
//! bounded; dropping one kills its process.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::python::python;

/// Bound on a process starting (importing grpc, binding its ports) and on one command's answer (each
/// call has its own 5 s deadline inside the client).
const START: Duration = Duration::from_secs(30);
const ANSWER: Duration = Duration::from_secs(120);

fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/proxyless_grpc/driver.py")
}

/// A driver process whose stdout lines arrive on a channel.
fn spawn(args: &[&str], env: &[(&str, &Path)], log: &Path) -> (Child, ChildStdin, Receiver<Value>) {
    let mut cmd = python();
    cmd.arg(driver()).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("driver log"))
        .spawn()
        .expect("starting python3 e2e/proxyless_grpc/driver.py");
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let value = serde_json::from_str(&line).unwrap_or_else(|_| json!({ "unparsed": line }));
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    (child, stdin, rx)
}

fn next(rx: &Receiver<Value>, within: Duration, what: &str, log: &Path) -> Value {
    rx.recv_timeout(within).unwrap_or_else(|e| {
        panic!(
            "{what}: no answer within {within:?} ({e}):\n{}",
            pier::testkit::log_tail(log, 40)
        )
    })
}

/// gRPC servers, one per name, each reporting the calls it takes.
pub struct Servers {
    child: Child,
    _stdin: ChildStdin,
    pub ports: BTreeMap<String, u16>,
    calls: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl Servers {
    /// `specs`: `NAME` (on 127.0.0.1) or `NAME@IP`.
    pub fn start(specs: &[&str], work: &Path) -> Servers {
        Servers::start_with(specs, &[], work, "grpc-servers")
    }

    /// `specs` as for [`Servers::start`], each ending in `+tls`: TLS servers presenting `cert` (`key`).
    pub fn start_tls(specs: &[&str], (cert, key): (&Path, &Path), work: &Path) -> Servers {
        let env = [("SERVER_CERT", cert), ("SERVER_KEY", key)];
        Servers::start_with(specs, &env, work, "grpc-tls-servers")
    }

    fn start_with(specs: &[&str], env: &[(&str, &Path)], work: &Path, label: &str) -> Servers {
        let log = work.join(format!("{label}.log"));
        let mut args = vec!["serve"];
        args.extend(specs);
        let (child, stdin, rx) = spawn(&args, env, &log);
        let first = next(&rx, START, "the gRPC servers' ports", &log);
        let ports = first
            .as_object()
            .unwrap_or_else(|| panic!("the servers printed {first}"))
            .iter()
            .map(|(k, v)| (k.clone(), u16::try_from(v.as_u64().expect("a port")).expect("a port")))
            .collect();
        let calls = Arc::new(Mutex::new(BTreeMap::new()));
        let sink = calls.clone();
        std::thread::spawn(move || {
            for line in rx {
                if let Some(name) = line["rpc"].as_str() {
                    *sink.lock().unwrap().entry(name.to_string()).or_insert(0) += 1;
                }
            }
        });
        Servers {
            child,
            _stdin: stdin,
            ports,
            calls,
        }
    }

    /// How many calls server `name` has taken.
    pub fn calls(&self, name: &str) -> usize {
        self.calls.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A grpcio client reading `GRPC_XDS_BOOTSTRAP`, its channels kept open across commands.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    log: PathBuf,
}

/// What a batch of calls gave: calls answered per server, failures per status code, the last failure's
/// detail.
#[derive(Debug, Default)]
pub struct Outcome {
    pub servers: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub detail: Option<String>,
}

impl Outcome {
    pub fn count(&self, server: &str) -> u64 {
        self.servers.get(server).copied().unwrap_or(0)
    }

    pub fn failed(&self, code: &str) -> u64 {
        self.errors.get(code).copied().unwrap_or(0)
    }
}

impl Client {
    pub fn start(label: &str, bootstrap: &Value, work: &Path) -> Client {
        let file = work.join(format!("{label}-bootstrap.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(bootstrap).expect("json")).expect("bootstrap");
        let log = work.join(format!("{label}.log"));
        let (child, stdin, rx) = spawn(&["client"], &[("GRPC_XDS_BOOTSTRAP", &file)], &log);
        Client { child, stdin, rx, log }
    }

    /// `n` calls of `method` on `target` (server-streaming when `stream`).
    pub fn calls(&mut self, target: &str, method: &str, n: u32, stream: bool) -> Outcome {
        let command = json!({ "target": target, "method": method, "n": n, "stream": stream, "timeout": 5 });
        writeln!(self.stdin, "{command}").expect("writing to the grpcio client");
        let answer = next(&self.rx, ANSWER, &format!("{n} calls of {method}"), &self.log);
        let map = |v: &Value| -> BTreeMap<String, u64> {
            v.as_object()
                .into_iter()
                .flatten()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        };
        Outcome {
            servers: map(&answer["servers"]),
            errors: map(&answer["errors"]),
            detail: answer["detail"].as_str().map(str::to_string),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
