//! Authenticated xDS over loopback: pier's server with mTLS (certificates from `pier::certs`), driven by
//! tonic clients presenting a Gateway's certificate, another Gateway's, none, or one from another CA;
//! and the bounds on what a client controls, each refused with its status and counted.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use pier::envoy::Resources;
use pier::xds::XdsType::{Cluster, Secret as Sds};
use pier::xds::transport::{Refused, XdsLimits};
use tokio_stream::wrappers::ReceiverStream;

use crate::xds_support::tls::Pki;
use crate::xds_support::{AdsProxy, GW, Gw, Harness, OTHER, QUIET, WAIT, delta, model, node, sotw, translate};

/// Both Gateways, each with one secret of its own.
fn two_gateways_with_secrets() -> BTreeMap<String, Resources> {
    let gws = [
        Gw {
            name: "gw",
            ports: &[8080],
            backends: &["a"],
        },
        Gw {
            name: "other",
            ports: &[8081],
            backends: &["b"],
        },
    ];
    let mut out = translate(&model(&gws, &[]));
    for (gateway, secret) in [(GW, "gw-key"), (OTHER, "other-key")] {
        out.get_mut(gateway).unwrap().secrets.push(Secret {
            name: secret.to_string(),
            ..Default::default()
        });
    }
    out
}

async fn tls_harness(pki: &Pki, client: Option<&str>, limits: XdsLimits) -> Harness {
    let mut h = Harness::start_with(Some(pki.server()), limits).await;
    h.client_tls = Some(pki.client(client));
    h.publish(&two_gateways_with_secrets());
    h
}

#[tokio::test]
async fn sotw_a_gateway_certificate_gets_its_gateway_and_never_another_gateways_secret() {
    let pki = Pki::new(&[GW, OTHER]);
    let h = tls_harness(&pki, Some(GW), XdsLimits::default()).await;
    let mut p = sotw::Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    let mut served = Vec::new();
    for names in [vec!["other-key", "gw-key", "*"], vec!["other-key"], vec!["*"]] {
        let names: Vec<String> = names.into_iter().map(String::from).collect();
        p.subscribe(Sds, &names).await;
        let mut seen = Vec::new();
        while let Ok(Some(Ok(resp))) = tokio::time::timeout(QUIET, p.rx.message()).await.map(Result::transpose) {
            seen.extend(resp.resources.iter().map(crate::xds_support::resource_name));
        }
        assert!(!seen.contains(&"other-key".to_string()), "{names:?} → {seen:?}");
        assert!(seen.iter().all(|n| n == "gw-key"), "{names:?} → {seen:?}");
        served.extend(seen);
    }
    assert!(
        served.contains(&"gw-key".to_string()),
        "its own secret is served when named"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn delta_a_gateway_certificate_gets_its_gateway_and_never_another_gateways_secret() {
    let pki = Pki::new(&[GW, OTHER]);
    let h = tls_harness(&pki, Some(GW), XdsLimits::default()).await;
    let mut p = delta::Proxy::connect(&h, GW).await;
    p.sync(&h, GW).await;
    p.subscribe(Sds, &["other-key".to_string(), "*".to_string(), "gw-key".to_string()])
        .await;
    let mut seen = Vec::new();
    while let Ok(Some(Ok(resp))) = tokio::time::timeout(QUIET, p.rx.message()).await.map(Result::transpose) {
        seen.extend(resp.resources.iter().map(|r| r.name.clone()));
    }
    assert_eq!(seen, ["gw-key"]);
    h.shutdown().await;
}

/// Gateway `default/gw`'s certificate, `node.cluster` naming `default/other`: PermissionDenied and nothing
/// sent, in both modes; counted.
#[tokio::test]
async fn a_certificate_cannot_claim_another_gateway() {
    let pki = Pki::new(&[GW, OTHER]);
    let h = tls_harness(&pki, Some(GW), XdsLimits::default()).await;
    let mut s = sotw::Proxy::connect(&h, OTHER).await;
    s.subscribe_all(Cluster).await;
    let end = s.stream_end().await.expect_err("the stream ends with an error");
    assert_eq!(end.code(), tonic::Code::PermissionDenied, "{end:?}");
    assert!(end.message().contains("default/other"), "{}", end.message());
    let mut d = delta::Proxy::connect(&h, OTHER).await;
    d.subscribe_all(Cluster).await;
    let end = d.stream_end().await.expect_err("the stream ends with an error");
    assert_eq!(end.code(), tonic::Code::PermissionDenied, "{end:?}");
    assert_eq!(h.server.metrics.refusals(Refused::PermissionDenied), 2);
    assert_eq!(h.server.clients.len(), 0, "a refused stream is never registered");
    h.shutdown().await;
}

/// No client certificate, a certificate from another CA, or plaintext: no stream ever gets a response.
#[tokio::test]
async fn without_a_certificate_from_the_ca_nothing_is_served() {
    let pki = Pki::new(&[GW]);
    let stranger = Pki::new(&[GW]);
    let h = tls_harness(&pki, None, XdsLimits::default()).await;
    let ca = std::fs::read(pki.path("ca.crt")).unwrap();
    let foreign = crate::xds_support::tls::client_config(
        &ca,
        Some((
            stranger.path("gateways/default.gw/tls.crt"),
            stranger.path("gateways/default.gw/tls.key"),
        )),
    );
    for (what, client) in [
        ("no certificate", Some(pki.client(None))),
        ("another CA", Some(foreign)),
        ("plaintext", None),
    ] {
        let got = first_response(h.addr, client).await;
        assert!(got.is_err(), "{what}: got {got:?}");
    }
    // The control: the same request with the Gateway's certificate is answered.
    let control = first_response(h.addr, Some(pki.client(Some(GW)))).await;
    assert!(matches!(control, Ok(n) if n > 0), "{control:?}");
    assert!(h.server.metrics.refusals(Refused::TlsHandshake) >= 2);
    h.shutdown().await;
}

/// Connects, asks for clusters as Gateway `default/gw`, and returns how many resources came back.
async fn first_response(
    addr: std::net::SocketAddr,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
) -> Result<usize, String> {
    let mut client = tokio::time::timeout(WAIT, crate::xds_support::connect(addr, tls))
        .await
        .map_err(|_| "connect timed out")?
        .map_err(|e| e.to_string())?;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(DiscoveryRequest {
        node: Some(node(GW)),
        type_url: Cluster.type_url().into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let call = tokio::time::timeout(WAIT, client.stream_aggregated_resources(ReceiverStream::new(rx)));
    let mut stream = call
        .await
        .map_err(|_| "open timed out")?
        .map_err(|e| e.to_string())?
        .into_inner();
    match tokio::time::timeout(WAIT, stream.message()).await {
        Ok(Ok(Some(resp))) => Ok(resp.resources.len()),
        Ok(Ok(None)) => Err("stream ended".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no response".into()),
    }
}

/// The server's certificates and client CA are replaced on disk: new handshakes use the new ones without
/// a restart, the old CA's clients are refused, and a broken replacement keeps the working certificates.
#[tokio::test]
async fn certificates_reload_from_disk() {
    let (old, new) = (Pki::new(&[GW]), Pki::new(&[GW]));
    let state = old.server();
    let h = Harness::start_with(Some(state.clone()), XdsLimits::default()).await;
    h.publish(&two_gateways_with_secrets());
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(state.watch(h.server.metrics.clone(), stop));
    assert!(first_response(h.addr, Some(old.client(Some(GW)))).await.is_ok());
    for f in ["server/tls.crt", "server/tls.key", "ca.crt"] {
        std::fs::copy(new.path(f), old.path(f)).unwrap();
    }
    pier::testkit::eventually("the new certificates are used", WAIT, || async {
        first_response(h.addr, Some(new.client(Some(GW)))).await.map(|_| ())
    })
    .await
    .unwrap();
    assert!(first_response(h.addr, Some(old.client(Some(GW)))).await.is_err());
    std::fs::write(old.path("server/tls.crt"), "not a certificate").unwrap();
    pier::testkit::eventually("the broken file is refused", WAIT, || async {
        if h.server.metrics.tls_reloads(false) > 0 {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await
    .unwrap();
    assert!(first_response(h.addr, Some(new.client(Some(GW)))).await.is_ok());
    assert_eq!(h.server.metrics.tls_reloads(true), 1);
    let _ = stop_tx.send(true);
    h.shutdown().await;
}
