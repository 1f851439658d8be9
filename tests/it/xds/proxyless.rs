//! Proxyless gRPC clients on the real ADS server: a stream whose node is a gRPC library's gets the
//! Gateway's proxyless half by exact name, an Envoy of the same Gateway never sees it, and a gRPC
//! client's rejection is a verdict exactly as an Envoy's is (what NACK containment bisects on).

use std::collections::BTreeMap;

use pier::snapshot::GatewayOut;
use pier::xds::XdsType::{Cluster, Endpoint, Listener, Route};
use pier::xds::clients::Verdict;

use crate::xds_support::sotw::Proxy;
use crate::xds_support::{AdsProxy, Harness, strings};

const GATEWAY: &str = "default/gw";
const TARGET: &str = "echo.example:8080";

const INPUT: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\n\
    spec: {controllerName: pier.dev/gateway-controller}\n---\n\
    apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n\
    spec: {gatewayClassName: pier, listeners: [{name: grpc, protocol: HTTP, port: 8080}]}\n---\n\
    apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: echo, namespace: default}\n\
    spec: {parentRefs: [{name: gw}], hostnames: [echo.example], rules: [{backendRefs: [{name: a, port: 80}]}]}\n---\n\
    apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\nspec: {ports: [{name: grpc, port: 80}]}\n---\n\
    apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
    metadata: {name: a-1, namespace: default, labels: {kubernetes.io/service-name: a}}\n\
    addressType: IPv4\nports: [{name: grpc, port: 50051}]\n\
    endpoints: [{addresses: [10.0.0.1], conditions: {ready: true}}]\n";

/// The engine's output for [`INPUT`], both halves, as `pier serve` publishes it.
fn packed() -> BTreeMap<String, GatewayOut> {
    let loaded = pier::model::load::parse_texts(&[("in.yaml".into(), INPUT.into())]).expect("parses");
    let engine = pier::translate::engine::Engine::with(loaded.model, pier::Options::default());
    let out: BTreeMap<String, GatewayOut> = engine.gateways().map(|(k, o)| (k.to_string(), o.clone())).collect();
    assert!(out[GATEWAY].grpc.is_some(), "the Gateway serves proxyless clients");
    out
}

async fn grpc_client(h: &Harness) -> Proxy {
    let mut p = Proxy::connect(h, GATEWAY).await;
    p.node.as_mut().expect("node not sent yet").user_agent_name = "gRPC Go".into();
    p
}

#[tokio::test]
async fn a_grpc_client_gets_the_proxyless_half_and_an_envoy_never_does() {
    let h = Harness::start().await;
    let out = packed();
    h.cache().publish_packed(&out);
    let grpc_clusters: Vec<String> = out[GATEWAY].grpc.as_ref().unwrap().clusters.keys().cloned().collect();
    assert_eq!(grpc_clusters.len(), 1, "{grpc_clusters:?}");
    let cluster = grpc_clusters[0].as_str();

    let mut grpc = grpc_client(&h).await;
    grpc.subscribe(Listener, &strings(&[TARGET])).await;
    let (_, listeners) = grpc.recv_type(Listener).await;
    assert_eq!(listeners, [TARGET], "the API listener, by its exact name");
    grpc.ack(Listener, &strings(&[TARGET])).await;
    grpc.subscribe(Route, &strings(&[TARGET])).await;
    let (_, routes) = grpc.recv_type(Route).await;
    assert_eq!(routes, [TARGET]);
    grpc.ack(Route, &strings(&[TARGET])).await;
    grpc.subscribe(Cluster, &strings(&[cluster])).await;
    let (_, clusters) = grpc.recv_type(Cluster).await;
    assert_eq!(clusters, [cluster]);
    grpc.ack(Cluster, &strings(&[cluster])).await;
    grpc.subscribe(Endpoint, &strings(&[cluster])).await;
    let (_, endpoints) = grpc.recv_type(Endpoint).await;
    assert_eq!(endpoints, [cluster]);

    let mut envoy = Proxy::connect(&h, GATEWAY).await;
    envoy.subscribe(Listener, &[]).await;
    let (_, envoy_listeners) = envoy.recv_type(Listener).await;
    assert_eq!(
        envoy_listeners,
        ["default/gw/8080"],
        "Envoy's wildcard never carries an API listener"
    );
    let agents: Vec<(String, &str)> = h
        .server
        .clients
        .list()
        .iter()
        .map(|c| (c.node_id.clone(), c.agent.as_str()))
        .collect();
    assert_eq!(agents.iter().filter(|(_, a)| *a == "grpc").count(), 1, "{agents:?}");
    h.shutdown().await;
}

#[tokio::test]
async fn a_grpc_clients_rejection_is_a_verdict_as_an_envoys_is() {
    let h = Harness::start().await;
    let generation = h.cache().publish_packed(&packed()).generation;
    let mut grpc = grpc_client(&h).await;
    grpc.subscribe(Listener, &strings(&[TARGET])).await;
    grpc.recv_type(Listener).await;
    grpc.nack(
        Listener,
        &strings(&[TARGET]),
        "",
        "LDS resource validation failed: planted",
    )
    .await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match h.server.clients.verdict(generation) {
            Verdict::Rejected { gateway, message, .. } => {
                assert_eq!(gateway, GATEWAY);
                assert!(message.contains("planted"), "{message}");
                break;
            }
            other => assert!(
                tokio::time::Instant::now() < deadline,
                "no rejection verdict: {other:?}"
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    h.shutdown().await;
}

/// [`INPUT`] with Service `a` verified by a BackendTLSPolicy against ConfigMap `default/backend-ca`.
fn tls_input(ca_pem: &str) -> String {
    let pem = ca_pem.trim_end().replace('\n', "\\n");
    format!(
        "{INPUT}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: backend-ca, namespace: default}}\n\
         data: {{ca.crt: \"{pem}\\n\"}}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {{name: a-tls, namespace: default}}\n\
         spec: {{targetRefs: [{{group: '', kind: Service, name: a}}], validation: {{hostname: a.example, \
         caCertificateRefs: [{{group: '', kind: ConfigMap, name: backend-ca}}]}}}}\n"
    )
}

/// The cluster a gRPC client whose metadata declares `declared` is given for the target's route.
async fn served_cluster(h: &Harness, declared: &[&str]) -> pier::envoy::pb::cluster::Cluster {
    let mut grpc = grpc_client(h).await;
    let node = grpc.node.as_mut().expect("node not sent yet");
    node.metadata = Some(pier::xds::agent::Trust::metadata(declared));
    grpc.subscribe(Listener, &strings(&[TARGET])).await;
    grpc.recv_type(Listener).await;
    grpc.ack(Listener, &strings(&[TARGET])).await;
    grpc.subscribe(Route, &strings(&[TARGET])).await;
    let (resp, _) = grpc.recv_type(Route).await;
    let config: pier::envoy::pb::route::RouteConfiguration =
        prost::Message::decode(resp.resources[0].value.as_slice()).expect("a route configuration");
    let Some(pier::envoy::pb::route::route::Action::Route(action)) = &config.virtual_hosts[0].routes[0].action else {
        panic!("a forwarding route: {config:?}")
    };
    let Some(pier::envoy::pb::route::route_action::ClusterSpecifier::Cluster(cluster)) = &action.cluster_specifier
    else {
        panic!("one cluster: {action:?}")
    };
    grpc.subscribe(Cluster, &strings(&[cluster])).await;
    let (resp, names) = grpc.recv_type(Cluster).await;
    assert_eq!(
        names,
        [cluster.as_str()],
        "the route's cluster, under its own name either way"
    );
    prost::Message::decode(resp.resources[0].value.as_slice()).expect("a cluster")
}

#[tokio::test]
async fn a_tls_backend_is_verified_by_clients_declaring_its_ca_and_unreachable_for_the_others() {
    let ca = pier::testkit::pki::Ca::new("backend CA");
    let text = tls_input(&ca.cert_pem());
    let loaded = pier::model::load::parse_texts(&[("in.yaml".into(), text)]).expect("parses");
    let engine = pier::translate::engine::Engine::with(loaded.model, pier::Options::default());
    let out: BTreeMap<String, GatewayOut> = engine.gateways().map(|(k, o)| (k.to_string(), o.clone())).collect();
    let h = Harness::start().await;
    h.cache().publish_packed(&out);

    let declaring = served_cluster(&h, &["ca/configmap/default/backend-ca"]).await;
    let socket = declaring
        .transport_socket
        .expect("a client declaring the CA verifies the backend");
    assert_eq!(socket.name, "envoy.transport_sockets.tls");
    let eds = declaring.eds_cluster_config.expect("EDS");
    assert_eq!(eds.service_name, declaring.name, "its own endpoints");
    let declared: Vec<Vec<String>> = h
        .server
        .clients
        .list()
        .into_iter()
        .map(|c| c.certificate_providers)
        .collect();
    assert_eq!(
        declared,
        [vec!["ca/configmap/default/backend-ca".to_string()]],
        "/debug/clients shows what the client declared"
    );

    for declared in [&[][..], &["ca/configmap/default/other-ca"][..]] {
        let other = served_cluster(&h, declared).await;
        assert!(other.transport_socket.is_none(), "{declared:?}: {other:?}");
        let eds = other.eds_cluster_config.expect("EDS");
        assert_eq!(
            eds.service_name,
            pier::ir::names::INVALID_BACKEND_CLUSTER,
            "{declared:?}: a client that cannot verify gets no endpoint"
        );
    }
    h.shutdown().await;
}
