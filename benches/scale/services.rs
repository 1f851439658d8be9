//! `services DIR N`: N Services in one namespace, each with an EndpointSlice and an HTTPRoute of its own,
//! for measuring how finding a Service's endpoints scales with the Services beside it (issue 11 saw a
//! namespace scan per Service port: 8,000 Services took 10 s, 16,000 took 66 s).

use std::path::Path;

/// The namespace everything lives in.
const NS: &str = "apps";

pub fn write(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).expect("creating DIR");
    // The workload's GatewayClass and Gateway (infra/edge, admitting routes from every namespace).
    let gateway = pier::testkit::workload::Workload::new(0).gateway();
    std::fs::write(dir.join("gateway.yaml"), gateway).expect("writing gateway.yaml");
    for i in 0..n {
        std::fs::write(dir.join(format!("service-{i:05}.yaml")), service(i)).expect("writing a Service");
    }
}

/// Service `s-i`, its slice (two ready endpoints), and route `r-i` to it on its own hostname.
fn service(i: usize) -> String {
    let (a, b) = (i / 250 % 250, i % 250 + 1);
    format!(
        "apiVersion: v1
kind: Service
metadata: {{name: s-{i}, namespace: {NS}}}
spec:
  ports: [{{name: http, port: 80}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: s-{i}-1, namespace: {NS}, labels: {{kubernetes.io/service-name: s-{i}}}}}
addressType: IPv4
ports: [{{name: http, port: 8080}}]
endpoints:
- addresses: [10.{a}.{b}.1]
- addresses: [10.{a}.{b}.2]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r-{i}, namespace: {NS}}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  hostnames: [h-{i}.example.com]
  rules:
  - backendRefs: [{{name: s-{i}, port: 80}}]
"
    )
}
