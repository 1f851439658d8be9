//! Unit tests of `testkit::upstream`: what the servers record, TLS refusals, and the path behaviours.

use super::*;
use crate::testkit::pki::{Ca, Leaf};
use crate::testkit::{eventually, http, lo};
use rustls::ClientConfig;
use rustls::RootCertStore;
use rustls::pki_types::ServerName;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio_rustls::TlsConnector;

fn connector(ca: &Ca, client: Option<&Leaf>) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert_der()).unwrap();
    let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some(leaf) => builder
            .with_client_auth_cert(vec![leaf.cert_der.clone()], leaf.key_der())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn plain_upstream_names_itself_and_records_requests() {
    let up = Upstream::http("plain", lo(2)).await;
    let response = http::get(up.addr, "x.e2e.test", "/hello?q=1").await.unwrap();
    assert_eq!(
        (response.status, response.upstream(), response.body.as_str()),
        (200, Some("plain"), "plain\n")
    );
    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].path.as_str(), seen[0].tls, seen[0].version.as_str()),
        ("/hello?q=1", false, "HTTP/1.1")
    );
    assert_eq!(
        (seen[0].method.as_str(), seen[0].host.as_deref()),
        ("GET", Some("x.e2e.test"))
    );
    assert_eq!(seen[0].header("USER-AGENT"), Some("pier-testkit"));
    assert_eq!(up.connections(), 1);

    let request = http::Request::get("x.e2e.test", "/h")
        .method("DELETE")
        .header("x-twice", "1")
        .header("x-twice", "2");
    http::send(up.addr, &request).await.unwrap();
    let seen = &up.requests()[1];
    assert_eq!(
        (seen.method.as_str(), seen.header_all("x-twice")),
        ("DELETE", vec!["1", "2"])
    );
}

#[tokio::test]
async fn fail_once_fails_each_key_once() {
    let up = Upstream::http("flaky", lo(2)).await;
    let mut statuses = Vec::new();
    for path in [
        "/r/fail-once/a",
        "/r/fail-once/a",
        "/fail-once/b?x=1",
        "/fail-once/a",
        "/fail-once/",
    ] {
        statuses.push(http::get(up.addr, "x", path).await.unwrap().status);
    }
    assert_eq!(statuses, [503, 200, 503, 200, 200]);
    assert_eq!(up.requests().len(), 5, "failed requests are recorded too");
    assert_eq!(path_arg("/a/delay/500?x=1", "delay"), Some("500"));
    assert_eq!(path_arg("/delay", "delay"), None);
    assert_eq!(path_arg("/x/delayed/5", "delay"), None);
}

#[tokio::test]
async fn upgrades_to_an_echo() {
    let up = Upstream::http("ws", lo(2)).await;
    let (head, echoed) = http::upgrade_echo(up.addr, "x", "/ws", b"hello through").await.unwrap();
    assert_eq!((head.status, head.upstream()), (101, Some("ws")));
    assert_eq!(echoed, b"hello through");
    assert_eq!(up.requests()[0].header("upgrade"), Some("websocket"));
}

#[tokio::test]
async fn delay_once_holds_only_the_first_request_of_a_key() {
    let up = Upstream::http("slow-once", lo(2)).await;
    let addr = up.addr;
    let held = tokio::spawn(async move { http::get(addr, "x", "/t/delay-once/k").await });
    eventually("the first request arrived", Duration::from_secs(5), || async {
        if up.requests().len() == 1 {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await
    .unwrap();
    // The second request with the key is answered while the first is still held.
    let second = http::get(addr, "x", "/t/delay-once/k").await.unwrap();
    assert_eq!(second.status, 200);
    assert!(!held.is_finished(), "the first request was not held");
    held.abort();
    // `fail-once` keys are their own.
    assert_eq!(http::get(addr, "x", "/fail-once/k").await.unwrap().status, 503);
}

#[tokio::test]
async fn tls_upstream_records_sni_and_client_certificate_and_refuses_the_rest() {
    let ca = Ca::new("e2e test CA");
    let server = ca.server(&["api.e2e.test"], &[]);
    let client = ca.client("pier-e2e-client");
    let up = Upstream::https(
        "secure",
        lo(2),
        ServerTls::requiring_client_cert(&server, ca.cert_der()),
    )
    .await;
    let name = ServerName::try_from("api.e2e.test").unwrap();

    let tcp = TcpStream::connect(up.addr).await.unwrap();
    let tls = connector(&ca, Some(&client)).connect(name.clone(), tcp).await.unwrap();
    let response = http::request_over(tls, "api.e2e.test", "/mtls").await.unwrap();
    assert_eq!((response.status, response.upstream()), (200, Some("secure")));
    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].tls);
    assert_eq!(seen[0].sni.as_deref(), Some("api.e2e.test"));
    assert_eq!(seen[0].client_cn.as_deref(), Some("pier-e2e-client"));

    // Without a client certificate the handshake fails server-side and no request is recorded.
    let tcp = TcpStream::connect(up.addr).await.unwrap();
    if let Ok(tls) = connector(&ca, None).connect(name, tcp).await {
        // TLS 1.3 clients finish before the server has checked their (missing) certificate.
        let _ = http::request_over(tls, "api.e2e.test", "/anon").await;
    }
    let failed = eventually("the refused handshake", Duration::from_secs(5), || async {
        let hs = up.handshakes();
        if hs.iter().any(|h| h.error.is_some()) {
            Ok(hs)
        } else {
            Err(format!("{hs:?}"))
        }
    })
    .await
    .unwrap();
    assert_eq!(failed.len(), 2);
    assert_eq!(
        up.requests().len(),
        1,
        "the anonymous request never reached the service"
    );

    // Plaintext to the TLS port is counted, never served.
    let mut tcp = TcpStream::connect(up.addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    eventually("the plaintext attempt", Duration::from_secs(5), || async {
        if up.plaintext_attempts() == 1 {
            Ok(())
        } else {
            Err("not yet".into())
        }
    })
    .await
    .unwrap();
    assert_eq!(up.requests().len(), 1);
}
