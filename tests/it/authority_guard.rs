//! The DynamicResolver authority guard, live: a real Envoy answers 403 exactly for the request
//! authorities `gateway::policy::check_hostname` refuses (the RBAC regexes and the Rust rules must not
//! drift apart), and routes that do not reach the forward proxy are unaffected. Forwarding is replaced
//! by a direct 200, so nothing leaves the machine.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pier::envoy::{self, bootstrap::validation_bootstrap};
use pier::gateway::policy;
use pier::ir::build::{self as ir, *};
use pier::ir::*;
use pier::options::Guardrails;
use serde_json::{Value, json};

/// The authority guard, judged by a real Envoy answering real requests (nothing else here runs its RE2
/// regexes). On a route to a dynamic forward proxy, every `policy::HOSTNAME_CASES` host, as written,
/// upper-cased and with a port, gets 403 exactly when `check_hostname` refuses it; an operator allow-list
/// is enforced too. A route to anything else on the same listener answers any authority. Forwarding
/// actions become a direct 200 (after the RBAC filter has had its say), so nothing leaves the machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authority_guard_refuses_what_check_hostname_refuses() {
    let Some(bin) = pier::testkit::envoy::require() else {
        return;
    };
    let (default, listed) = (Guardrails::default(), allow_listed());
    let ports = [free_port(), free_port()];
    let live = |port: u16, g: &Guardrails| {
        let cluster = format!("dfp/{port}");
        let routes = vec![
            route("other", prefix("/other"), RouteAction::DirectResponse { status: 200 }),
            route("dfp", prefix("/"), to(&[(Some(&cluster), 1)])),
        ];
        let route_config = RouteConfig {
            name: format!("live/{port}"),
            virtual_hosts: vec![vhost("live/*", &["*"], routes)],
        };
        let listener = Listener {
            name: format!("live/{port}"),
            address: "127.0.0.1".into(),
            port,
            kind: ListenerKind::Http { route_config },
        };
        let dfp = dfp(dns(60_000, LookupFamily::V4Preferred), g);
        (
            listener,
            cluster.clone(),
            ir::cluster(&cluster, dfp, UpstreamProtocol::Http1, None),
        )
    };
    let (l0, c0, cluster0) = live(ports[0], &default);
    let (l1, c1, cluster1) = live(ports[1], &listed);
    let gw = GatewayIr {
        namespace: "ns".into(),
        name: "live".into(),
        listeners: vec![l0, l1],
        clusters: BTreeMap::from([(c0, cluster0), (c1, cluster1)]),
        secrets: BTreeMap::new(),
    };
    let res = envoy::build(&gw);
    assert_eq!(envoy::check(&res), Ok(()));
    let mut boot = validation_bootstrap(&res);
    boot.as_object_mut().unwrap().remove("dynamic_resources");
    answer_instead_of_forwarding(&mut boot);
    let work = tempfile::tempdir().unwrap();
    let envoy = pier::testkit::envoy::Envoy::start(&bin, &boot, work.path(), "guard")
        .await
        .unwrap();
    envoy.wait_live(Duration::from_secs(30)).await.unwrap();

    let mut wrong = Vec::new();
    let mut expect = |port: u16, path: &str, authority: &str, forwarded: bool| {
        let (got, want) = (status(port, path, authority), if forwarded { 200 } else { 403 });
        if got != want {
            wrong.push(format!(
                "port {port} {path} authority {authority:?}: {got}, want {want}"
            ));
        }
    };
    for &(host, _) in policy::HOSTNAME_CASES {
        let allowed = policy::check_hostname(host, &default).is_ok();
        for authority in [host.to_string(), host.to_ascii_uppercase(), format!("{host}:8080")] {
            expect(ports[0], "/dfp", &authority, allowed);
        }
        expect(ports[0], "/other", host, true);
    }
    // No `host[:port]` (Envoy's `strip_any_host_port` strips numeric ports only, so these reach RBAC whole).
    for authority in ["api.example.com:80x", "api.example.com:", "a:b:c", "127.0.0.1:19000"] {
        expect(ports[0], "/dfp", authority, false);
    }
    let hosts = [
        "api.example.com",
        "API.example.com.",
        "a.svc.example.org",
        "x.api.example.com",
    ];
    let more = [
        "svc.example.org",
        "evil.example.com",
        "foo.localhost",
        "127.0.0.1",
        "[::1]",
    ];
    for host in hosts.into_iter().chain(more) {
        let allowed = policy::check_hostname(host, &listed).is_ok();
        expect(ports[1], "/dfp", host, allowed);
        expect(ports[1], "/dfp", &format!("{host}:443"), allowed);
    }
    // The documented difference: allowed by `check_hostname` (allow_loopback, allow-listed), yet a bare
    // `localhost` stays a denied single label for the proxy.
    assert_eq!(policy::check_hostname("localhost", &listed), Ok(()));
    expect(ports[1], "/dfp", "localhost", false);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

fn free_port() -> u16 {
    pier::testkit::free_port(std::net::Ipv4Addr::LOCALHOST)
}

/// Replaces each route's forwarding action by a direct 200.
fn answer_instead_of_forwarding(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.contains_key("match") && map.remove("route").is_some() {
                map.insert("direct_response".into(), json!({ "status": 200 }));
            }
            map.values_mut().for_each(answer_instead_of_forwarding);
        }
        Value::Array(items) => items.iter_mut().for_each(answer_instead_of_forwarding),
        _ => {}
    }
}

/// The status code Envoy answers a `GET` with this authority (0: no HTTP answer). Reads the status line
/// only: after answering, Envoy waits for the client to close first (`delayed_close_timeout`, 1 s).
fn status(port: u16, path: &str, authority: &str) -> u16 {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0; 256];
    while !answer.contains(&b'\n') {
        match conn.read(&mut buf) {
            Ok(n) if n > 0 => answer.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    let line = String::from_utf8_lossy(&answer);
    line.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}
