//! `pier demo --once`, the README's first command, run as a user would: the bundled example, a real Envoy, the
//! demo upstreams, every request through Envoy as expected (exit 0, a ✓ on every row of the table).
//!
//! Bounded and leaving nothing behind: the listener ports are ones the demo picks free (`0`), the run has a
//! deadline, and on overrun the demo gets SIGTERM (it then stops Envoy itself), then SIGKILL, and finally the
//! Envoy it reported is killed by pid, so even a hung demo cannot leave a proxy running. The demo's
//! upstreams use fixed addresses (127.0.0.2-9, ports 9080-9445): a demo already running on this machine
//! makes this test fail, saying so. Built only with the `demo` feature (the binary has no `demo` otherwise).

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Start-up normally takes about a second and the requests less; this only bounds a hang.
const DEADLINE: Duration = Duration::from_secs(120);
/// How long a SIGTERMed demo gets to stop Envoy and pier before it is killed.
const GRACE: Duration = Duration::from_secs(15);

#[test]
fn demo_once_sends_every_request_through_envoy_as_expected() {
    let Some(envoy) = pier::testkit::envoy::require() else {
        return;
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pier"));
    // The caller's PIER_* settings must not change what is tested.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PIER_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd
        .args(["demo", "--once", "--listen-port-http", "0", "--listen-port-https", "0"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("ENVOY_BIN", envoy)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning pier demo");
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    let status = wait_bounded(&mut child, &stdout.0);
    let (out, err) = (stdout.finish(), stderr.finish());
    let status = status.unwrap_or_else(|| panic!("pier demo overran {DEADLINE:?}; stdout:\n{out}\nstderr:\n{err}"));
    assert!(
        status.success(),
        "pier demo failed ({status}); stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("Envoy is LIVE"), "{out}");
    for request in [
        "GET api.demo.test/v1/models",
        "GET api.demo.test/payments/charge",
        "GET api.demo.test/weather",
        "GET api.demo.test/legacy ×20",
        "GET www.demo.test/ ×20",
        "GET www.demo.test/billing",
        "GET https://www.demo.test:",
    ] {
        assert!(out.contains(&format!("✓ {request}")), "no ✓ for {request}:\n{out}");
    }
    assert!(!out.contains('✗'), "{out}");
    assert!(
        out.contains("client cert CN=client"),
        "payments saw the Gateway's client certificate:\n{out}"
    );
    assert!(out.contains("curl -H 'Host: api.demo.test' http://127.0.0.1:"), "{out}");
}

/// A pipe read to its end on a thread (so the child never blocks on a full pipe), readable meanwhile.
struct Collected(Arc<Mutex<String>>, JoinHandle<()>);

impl Collected {
    fn finish(self) -> String {
        let _ = self.1.join();
        self.0.lock().unwrap().clone()
    }
}

fn collect(pipe: Option<impl Read + Send + 'static>) -> Collected {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    let reader = std::thread::spawn(move || {
        let Some(mut pipe) = pipe else { return };
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Collected(text, reader)
}

/// The exit status, or `None` after [`DEADLINE`], by which time the demo and its Envoy have been killed.
fn wait_bounded(child: &mut Child, stdout: &Mutex<String>) -> Option<ExitStatus> {
    if let Some(status) = wait_until(child, Instant::now() + DEADLINE) {
        return Some(status);
    }
    // SIGTERM through kill(1): this crate uses no `unsafe`, so no libc::kill.
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    if wait_until(child, Instant::now() + GRACE).is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    // "admin http://127.0.0.1:N (pid P, log ...)": the demo's Envoy, if it got that far.
    let text = stdout.lock().unwrap().clone();
    let envoy_pid = text
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .map(str::to_string);
    if let Some(pid) = envoy_pid {
        // Only if that pid still is an Envoy (not a recycled pid).
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("envoy") {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    }
    None
}

fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
