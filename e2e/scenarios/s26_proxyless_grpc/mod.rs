//! Scenario 26: proxyless gRPC. gRPC's own xDS clients get their configuration from pier — no Envoy on
//! the path — and call gRPC servers (grpcio generic handlers, unary and server-streaming) on loopback.
//! The same scenario runs with each real client, nothing xDS-speaking hand-written:
//!
//! - `grpcio`: grpcio 1.85 (`xds:///` targets, the resolver and balancers of gRPC C-core), driven by
//!   `e2e/proxyless_grpc/driver.py`, which holds only grpcio calls;
//! - `tonic_xds`: tonic-xds 0.1.0-alpha.4, gRPC's Rust xDS client ([`tonic_xds`]).
//!
//! The client's bootstrap is `pier bootstrap --grpc` (mTLS to pier with the Gateway's certificate, gRPC's
//! `tls` channel credentials), `node.cluster` naming the Gateway. On one open channel:
//!
//! - unary and server-streaming calls succeed, and method matches pick the right Backend;
//! - a 3:1 split sends about three quarters of the calls one way;
//! - a Backend the guardrails refuse (an operator-denied address) fails its calls with UNAVAILABLE, and its
//!   server never sees a call;
//! - an endpoint added to a Service takes calls, one removed stops taking them, and a changed weight moves
//!   the split, each without reopening the channel;
//! - the GRPCRoute's `pier.dev/ProxylessGRPC` condition names the target, and `/debug/clients` lists the
//!   client as `grpc`.
//!
//! A second client, whose node names another Gateway, gets nothing of this one: its calls to this
//! Gateway's target fail (the listener does not exist for it), while its own Gateway's target works.
//!
//! Upstream TLS (gRFC A29) has its own flow, with each client: [`tls`].
//!
//! gRPC speaks state-of-the-world ADS only, so this scenario runs once (no `both_modes!`).

mod procs;
mod tls;
mod tonic_xds;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::Mode;
use crate::harness::manifests::*;
use crate::harness::pier::PierOptions;
use crate::harness::scene::Scene;
use procs::{Client, Outcome, Servers};

/// A proxyless gRPC client, as the scenario drives it: built from `pier bootstrap --grpc`'s JSON, with
/// its channels kept open across calls.
trait Proxyless: Sized {
    /// Whether a call that can reach no endpoint fails at once with UNAVAILABLE (gRPC C-core), rather
    /// than waiting for one until its deadline (tonic-xds 0.1.0-alpha.4). Either way it reaches nothing.
    const FAILS_FAST: bool;
    async fn start(label: &str, bootstrap: &Value, work: &Path) -> Self;
    /// `n` calls of `method` on `target` (server-streaming when `stream`), each with a 5 s deadline.
    async fn calls(&mut self, target: &str, method: &str, n: u32, stream: bool) -> Outcome;
}

impl Proxyless for Client {
    const FAILS_FAST: bool = true;
    async fn start(label: &str, bootstrap: &Value, work: &Path) -> Client {
        Client::start(label, bootstrap, work)
    }

    async fn calls(&mut self, target: &str, method: &str, n: u32, stream: bool) -> Outcome {
        tokio::task::block_in_place(|| Client::calls(self, target, method, n, stream))
    }
}

/// The refused server's address: loopback (so a broken guardrail would stay on this machine and be seen),
/// denied by the operator (`--deny-cidr`) while the rest of loopback is allowed.
const REFUSED_IP: &str = "127.0.0.2";
const HOSTNAME: &str = "echo.e2e.test";
const OTHER_HOSTNAME: &str = "other.e2e.test";
const CONVERGE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcio() {
    if crate::harness::envoy::skipped() {
        return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
    }
    run::<Client>("s26-grpcio").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_xds() {
    if crate::harness::envoy::skipped() {
        return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
    }
    run::<tonic_xds::TonicXds>("s26-tonic-xds").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcio_tls() {
    if crate::harness::envoy::skipped() {
        return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
    }
    tls::run::<Client>("s26-grpcio-tls").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_xds_tls() {
    if crate::harness::envoy::skipped() {
        return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
    }
    tls::run::<tonic_xds::TonicXds>("s26-tonic-xds-tls").await;
}

async fn run<C: Proxyless>(name: &str) {
    let mut scene = Scene::new(name, Mode::Sotw).await;
    let servers = Servers::start(&["a", "b", "c", &format!("refused@{REFUSED_IP}")], scene.work_dir());
    let port = |name: &str| servers.ports[name];
    scene.write("00-gateways.yaml", &gateways(scene.port));
    scene.write("10-services.yaml", &services(port("a"), port("b"), port("refused")));
    scene.write("20-routes.yaml", &routes(3, 1));
    let options = PierOptions {
        allow_loopback: true,
        extra_args: vec!["--deny-cidr".into(), format!("{REFUSED_IP}/32")],
        ..PierOptions::default()
    };
    scene.start_pier(options).await;
    let target = format!("xds:///{HOSTNAME}:{}", scene.port);
    let boot = scene.pier().grpc_bootstrap("default/gw", "grpc-s26");
    let mut client = C::start("grpc-client", &boot, scene.work_dir()).await;

    calls_and_method_matches(&mut client, &target).await;
    weights_split(&mut client, &target, ("a", 3), ("b", 1)).await;
    guarded_fails_closed(&mut client, &target, &servers).await;
    status_and_clients(&scene).await;

    // Endpoints change under the open channel: c joins Service a, then a's own endpoint leaves.
    scene.write(
        "10-services.yaml",
        &with_second_endpoint(port("a"), port("b"), port("c"), port("refused")),
    );
    converge(&mut client, &target, "/echo.Echo/Say", |o| {
        o.count("a") > 0 && o.count("c") > 0
    })
    .await;
    scene.write(
        "10-services.yaml",
        &services_moved(port("b"), port("c"), port("refused")),
    );
    converge(&mut client, &target, "/echo.Echo/Say", |o| o.count("c") == 30).await;

    // A weight change moves the split on the same channel.
    scene.write("20-routes.yaml", &routes(0, 1));
    converge(&mut client, &target, "/echo.Echo/Split", |o| o.count("b") == 30).await;

    other_gateway_gets_nothing::<C>(&scene, &target).await;
}

async fn calls_and_method_matches(client: &mut impl Proxyless, target: &str) {
    let say = client.calls(target, "/echo.Echo/Say", 20, false).await;
    assert_eq!((say.count("a"), say.errors.len()), (20, 0), "Say goes to a: {say:?}");
    let other = client.calls(target, "/echo.Echo/Other", 20, false).await;
    assert_eq!(
        (other.count("b"), other.errors.len()),
        (20, 0),
        "Other goes to b: {other:?}"
    );
    let stream = client.calls(target, "/echo.Echo/Stream", 5, true).await;
    assert_eq!(
        (stream.count("a"), stream.errors.len()),
        (5, 0),
        "server-streaming calls get their three messages from a: {stream:?}"
    );
}

/// 400 calls split `w1:w2`: each side within six standard deviations of its expected share.
async fn weights_split(client: &mut impl Proxyless, target: &str, (s1, w1): (&str, u64), (s2, w2): (&str, u64)) {
    let n = 400;
    let o = client.calls(target, "/echo.Echo/Split", n as u32, false).await;
    assert_eq!(o.count(s1) + o.count(s2), n, "every split call answered: {o:?}");
    let p = w1 as f64 / (w1 + w2) as f64;
    let expected = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    let got = o.count(s1) as f64;
    assert!(
        (got - expected).abs() <= 6.0 * sd,
        "{s1} took {got} of {n} calls; {w1}:{w2} expects {expected} ± {}: {o:?}",
        6.0 * sd
    );
}

async fn guarded_fails_closed<C: Proxyless>(client: &mut C, target: &str, servers: &Servers) {
    let o = client.calls(target, "/echo.Echo/Guarded", 5, false).await;
    assert!(o.servers.is_empty(), "calls to a refused Backend reach nothing: {o:?}");
    let code = if C::FAILS_FAST {
        "UNAVAILABLE"
    } else {
        "DEADLINE_EXCEEDED"
    };
    assert_eq!(o.failed(code), 5, "calls to a refused Backend fail closed: {o:?}");
    assert_eq!(servers.calls("refused"), 0, "the refused server never took a call");
}

async fn status_and_clients(scene: &Scene) {
    let status = scene.pier().admin_json("/debug/status").await;
    let text = status.to_string();
    assert!(
        text.contains("pier.dev/ProxylessGRPC") && text.contains(&format!("xds:///{HOSTNAME}:{}", scene.port)),
        "the GRPCRoute's status names the proxyless target: {text}"
    );
    let clients = scene.pier().admin_json("/debug/clients").await;
    let grpc: Vec<&Value> = clients["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["agent"] == "grpc")
        .collect();
    assert_eq!(grpc.len(), 1, "/debug/clients lists the gRPC client: {clients}");
    assert_eq!(grpc[0]["gateway"], "default/gw");
    assert_eq!(grpc[0]["states"]["listeners"], "SYNCED", "{}", grpc[0]);
}

/// Repeats 30 calls until `done` holds for one batch, for at most [`CONVERGE`].
async fn converge(client: &mut impl Proxyless, target: &str, method: &str, done: impl Fn(&Outcome) -> bool) {
    let deadline = Instant::now() + CONVERGE;
    loop {
        let o = client.calls(target, method, 30, false).await;
        if done(&o) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{method} calls did not change as configured: {o:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn other_gateway_gets_nothing<C: Proxyless>(scene: &Scene, target: &str) {
    let boot = scene.pier().grpc_bootstrap("default/other", "grpc-s26-other");
    let mut other = C::start("grpc-client-other", &boot, scene.work_dir()).await;
    let own = format!("xds:///{OTHER_HOSTNAME}:{}", scene.port + 1);
    let o = other.calls(&own, "/echo.Echo/Say", 5, false).await;
    assert_eq!(o.count("b"), 5, "the other Gateway's own target works: {o:?}");
    // gRPC gives a name no response carries 15 s (its does-not-exist timer) before failing fast; until
    // then calls wait and time out. Either way no call may be answered.
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let o = other.calls(target, "/echo.Echo/Say", 3, false).await;
        assert!(o.servers.is_empty(), "another Gateway's target gets nothing: {o:?}");
        assert_eq!(o.errors.values().sum::<u64>(), 3, "{o:?}");
        let said = o.detail.as_deref().is_some_and(|d| d.contains("does not exist"));
        if said || (!C::FAILS_FAST && Instant::now() + Duration::from_secs(25) > deadline) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the client never said the listener does not exist: {o:?}"
        );
    }
}

fn gateways(port: u16) -> Vec<Value> {
    vec![gateway_class(), gateway("gw", port), gateway("other", port + 1)]
}

/// A Service with one gRPC port (h2c) and one EndpointSlice per `(slice, port)`, all at 127.0.0.1.
pub(super) fn grpc_service(name: &str, slices: &[(&str, u16, &str)]) -> Vec<Value> {
    let mut svc = service(name, "grpc", 80);
    svc["spec"]["ports"][0]["appProtocol"] = json!("kubernetes.io/h2c");
    let mut out = vec![svc];
    out.extend(
        slices
            .iter()
            .map(|(slice, port, ip)| endpoint_slice(slice, name, "grpc", *port, &[(ip, true)])),
    );
    out
}

fn refused_backend(refused: u16) -> Value {
    eg_backend_ip("refused", REFUSED_IP, refused, &["gateway.envoyproxy.io/h2c"])
}

fn services(a: u16, b: u16, refused: u16) -> Vec<Value> {
    let mut out = grpc_service("a", &[("a-1", a, "127.0.0.1")]);
    out.extend(grpc_service("b", &[("b-1", b, "127.0.0.1")]));
    out.push(refused_backend(refused));
    out
}

fn with_second_endpoint(a: u16, b: u16, c: u16, refused: u16) -> Vec<Value> {
    let mut out = grpc_service("a", &[("a-1", a, "127.0.0.1"), ("a-2", c, "127.0.0.1")]);
    out.extend(grpc_service("b", &[("b-1", b, "127.0.0.1")]));
    out.push(refused_backend(refused));
    out
}

fn services_moved(b: u16, c: u16, refused: u16) -> Vec<Value> {
    let mut out = grpc_service("a", &[("a-2", c, "127.0.0.1")]);
    out.extend(grpc_service("b", &[("b-1", b, "127.0.0.1")]));
    out.push(refused_backend(refused));
    out
}

pub(super) fn method(name: &str) -> Value {
    json!([{ "method": { "service": "echo.Echo", "method": name } }])
}

/// The Gateway's GRPCRoute (Split weighted `a_weight:b_weight`) and the other Gateway's.
fn routes(a_weight: u32, b_weight: u32) -> Vec<Value> {
    let rule = |m: &str, refs: Vec<Value>| json!({ "matches": method(m), "backendRefs": refs });
    let mut echo = grpc_route(
        "echo",
        "gw",
        vec![
            rule("Say", vec![service_ref("a", 80)]),
            rule("Other", vec![service_ref("b", 80)]),
            rule("Stream", vec![service_ref("a", 80)]),
            rule(
                "Split",
                vec![
                    weighted(service_ref("a", 80), a_weight),
                    weighted(service_ref("b", 80), b_weight),
                ],
            ),
            rule(
                "Guarded",
                vec![backend_ref("gateway.envoyproxy.io", "Backend", "refused")],
            ),
        ],
    );
    echo["spec"]["hostnames"] = json!([HOSTNAME]);
    let mut other = grpc_route("other", "other", vec![json!({ "backendRefs": [service_ref("b", 80)] })]);
    other["spec"]["hostnames"] = json!([OTHER_HOSTNAME]);
    vec![echo, other]
}
