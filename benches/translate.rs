//! Translation cost at fleet scale: parse + translate a synthetic model of N namespaces, each with a
//! Gateway-attached HTTPRoute to an ExternalHostname XBackend with TLS, a Service with a 3-endpoint
//! EndpointSlice, and an Envoy Gateway Backend — the work `pier translate` and every reload do.
//!
//! `cargo bench --bench translate`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pier::options::Options;

fn synthetic(n: usize) -> String {
    let mut docs = vec![
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\nspec: {controllerName: pier.dev/gateway-controller}\n".to_string(),
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: edge, namespace: infra}\nspec:\n  gatewayClassName: pier\n  listeners:\n  - {name: http, protocol: HTTP, port: 8080, allowedRoutes: {namespaces: {from: All}}}\n".to_string(),
    ];
    for i in 0..n {
        let ns = format!("team-{i}");
        docs.push(format!(
            "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {{name: api, namespace: {ns}}}\nspec:\n  type: ExternalHostname\n  externalHostname: {{hostname: api{i}.example.com}}\n  port: {{port: 443}}\n  tls:\n    mode: ServerOnly\n    validation: {{hostname: api{i}.example.com, wellKnownCACertificates: System}}\n"
        ));
        docs.push(format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  ports: [{{name: http, port: 80}}]\n"
        ));
        docs.push(format!(
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: web-1, namespace: {ns}, labels: {{kubernetes.io/service-name: web}}}}\naddressType: IPv4\nports: [{{name: http, port: 8080}}]\nendpoints:\n- addresses: [10.{}.{}.1]\n- addresses: [10.{}.{}.2]\n- addresses: [10.{}.{}.3]\n",
            i / 250, i % 250, i / 250, i % 250, i / 250, i % 250
        ));
        docs.push(format!(
            "apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: Backend\nmetadata: {{name: legacy, namespace: {ns}}}\nspec:\n  endpoints: [{{ip: {{address: 192.0.2.{}, port: 9000}}}}]\n",
            1 + i % 250
        ));
        docs.push(format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: edge, namespace: infra}}]\n  hostnames: [t{i}.example.com]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /api}}}}]\n    backendRefs: [{{group: gateway.networking.x-k8s.io, kind: XBackend, name: api}}]\n  - matches: [{{path: {{type: PathPrefix, value: /legacy}}}}]\n    backendRefs: [{{group: gateway.envoyproxy.io, kind: Backend, name: legacy}}]\n  - backendRefs: [{{name: web, port: 80, weight: 90}}, {{name: missing, port: 80, weight: 10}}]\n"
        ));
    }
    docs.join("---\n")
}

fn bench(c: &mut Criterion) {
    let opts = Options::default();
    let mut group = c.benchmark_group("translate");
    group.sample_size(10);
    for n in [100usize, 1000] {
        let text = synthetic(n);
        let input = [("synthetic.yaml".to_string(), text)];
        group.bench_with_input(BenchmarkId::new("parse", n), &input, |b, input| {
            b.iter(|| pier::model::load::parse_texts(input).expect("parses"));
        });
        let model = pier::model::load::parse_texts(&input).expect("parses").model;
        group.bench_with_input(BenchmarkId::new("translate", n), &model, |b, model| {
            b.iter(|| pier::translate(model, &opts));
        });
        let t = pier::translate(&model, &opts);
        group.bench_with_input(BenchmarkId::new("render_json", n), &t, |b, t| {
            b.iter(|| t.document(None).expect("document"));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
