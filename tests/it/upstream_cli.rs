//! `pier upstream` (the docker-compose stack's demo servers) as a user runs it: plain and TLS answers that
//! name the upstream, a prompt exit on SIGTERM (in a container it is PID 1), and a clear error for a
//! certificate or key it cannot use. Built only with the `demo` feature.

use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pier::testkit::{eventually, free_port, http, lo};

use crate::support::https;

const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/upstream-certs");
const DEADLINE: Duration = Duration::from_secs(20);

/// A running `pier upstream`, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str]) -> (Running, SocketAddr) {
    let addr = SocketAddr::from((lo(1), free_port(lo(1))));
    let child = Command::new(env!("CARGO_BIN_EXE_pier"))
        .args(["upstream", "--listen", &addr.to_string()])
        .args(args)
        .env("PIER_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawning pier upstream");
    (Running(child), addr)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pier"))
        .arg("upstream")
        .args(args)
        .env("PIER_LOG", "warn")
        .output()
        .expect("running pier upstream")
}

#[tokio::test]
async fn plain_upstream_answers_with_its_name_and_stops_on_sigterm() {
    let (mut running, addr) = start(&["--name", "echo-1"]);
    let response = eventually("pier upstream to answer", DEADLINE, || {
        http::get(addr, "echo.demo.test", "/anything")
    })
    .await
    .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.upstream(), Some("echo-1"));
    assert_eq!(response.body, "echo-1\n");

    let pid = running.0.id().to_string();
    // SIGTERM through kill(1): this crate uses no `unsafe`, so no libc::kill.
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = Instant::now();
    while started.elapsed() < DEADLINE {
        if let Some(status) = running.0.try_wait().unwrap() {
            assert!(status.success(), "pier upstream exited with {status} on SIGTERM");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("pier upstream did not exit within {DEADLINE:?} of SIGTERM");
}

#[tokio::test]
async fn tls_upstream_serves_its_certificate_to_a_client_that_trusts_the_ca() {
    let cert = format!("{CERTS}/api.crt");
    let key = format!("{CERTS}/api.key");
    let (_running, addr) = start(&["--name", "api", "--tls-cert", &cert, "--tls-key", &key]);
    let ca = std::fs::read_to_string(format!("{CERTS}/ca.crt")).unwrap();
    let response = eventually("pier upstream to answer over TLS", DEADLINE, || {
        https::get(addr, "api.demo.test", "/", &ca)
    })
    .await
    .unwrap();
    assert_eq!(response.upstream(), Some("api"));
    // TLS only: a plaintext request gets no HTTP answer.
    assert!(http::get(addr, "api.demo.test", "/").await.is_err());
}

#[test]
fn unusable_certificate_files_are_refused_naming_the_option_and_file() {
    let listen = SocketAddr::from((lo(1), free_port(lo(1)))).to_string();
    let cert = format!("{CERTS}/api.crt");
    let key = format!("{CERTS}/api.key");
    let missing = format!("{CERTS}/missing.crt");
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["--tls-cert", &missing, "--tls-key", &key],
            &["--tls-cert", "missing.crt"],
        ),
        // A certificate where the key belongs: no PKCS#8 key in it.
        (
            &["--tls-cert", &cert, "--tls-key", &cert],
            &["--tls-key", "PRIVATE KEY"],
        ),
        (
            &["--tls-cert", &cert, "--tls-key", &key, "--client-ca", &key],
            &["--client-ca", "CERTIFICATE"],
        ),
    ];
    for (args, want) in cases {
        let out = run(&[&["--name", "api", "--listen", &listen][..], args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        for w in want {
            assert!(stderr.contains(w), "{args:?}: the error does not name {w:?}: {stderr}");
        }
    }
    let out = run(&["--name", "api", "--listen", &listen, "--tls-cert", &cert]);
    assert!(!out.status.success(), "--tls-cert without --tls-key was accepted");
}
