//! A synthetic configuration of a given size, the shape the scaling benchmarks use: `n` HTTPRoutes, each
//! with its own hostname and its own XBackend (ExternalHostname; every other one with TLS verified
//! against the system bundle), and for every fourth route a Service with 8 ready endpoints, a
//! BackendTLSPolicy on it, and a second rule sending to it. Routes and their objects are spread over 50
//! namespaces; one Gateway (`infra/edge`, HTTP port `port`) takes routes from all of them.
//!
//! [`Workload::files`] gives one file per route (its XBackend, Service, EndpointSlice and policy in the
//! same file) plus `gateway.yaml`, the layout a directory source sees; [`Workload::text`] gives it all as
//! one text. Deterministic: the same size gives the same bytes.

/// Namespaces the objects are spread over.
const NAMESPACES: usize = 50;

#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub routes: usize,
    /// The Gateway's HTTP listener port.
    pub port: u16,
    /// Where every external hostname resolves in tests that send traffic (the names are made up).
    pub endpoint_base: [u8; 2],
}

impl Workload {
    pub fn new(routes: usize) -> Self {
        Self {
            routes,
            port: 8080,
            endpoint_base: [10, 1],
        }
    }

    /// The GatewayClass and Gateway.
    pub fn gateway(&self) -> String {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: pier}}
spec: {{controllerName: pier.dev/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: infra}}
spec:
  gatewayClassName: pier
  listeners:
  - {{name: http, protocol: HTTP, port: {}, allowedRoutes: {{namespaces: {{from: All}}}}}}
",
            self.port
        )
    }

    /// Route `i` and the objects only it uses.
    pub fn route(&self, i: usize) -> String {
        let ns = namespace(i);
        let mut docs = vec![self.xbackend(i)];
        let mut rules = format!(
            "  - matches: [{{path: {{type: PathPrefix, value: /api}}}}]
    backendRefs: [{{group: gateway.networking.x-k8s.io, kind: XBackend, name: x-{i}}}]
"
        );
        if i.is_multiple_of(4) {
            docs.push(self.service(i));
            rules.push_str(&format!("  - backendRefs: [{{name: s-{i}, port: 80}}]\n"));
        }
        docs.push(format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r-{i}, namespace: {ns}}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  hostnames: [h-{i}.example.com]
  rules:
{rules}"
        ));
        docs.join("---\n")
    }

    fn xbackend(&self, i: usize) -> String {
        let ns = namespace(i);
        let tls = if i.is_multiple_of(2) {
            format!(
                "  tls:\n    mode: ServerOnly\n    validation: {{hostname: x-{i}.example.com, wellKnownCACertificates: System}}\n"
            )
        } else {
            String::new()
        };
        let port = if i.is_multiple_of(2) { 443 } else { 80 };
        format!(
            "apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {{name: x-{i}, namespace: {ns}}}
spec:
  type: ExternalHostname
  externalHostname: {{hostname: x-{i}.example.com}}
  port: {{port: {port}}}
{tls}"
        )
    }

    /// Service `s-i` with an 8-endpoint EndpointSlice and a BackendTLSPolicy.
    fn service(&self, i: usize) -> String {
        let ns = namespace(i);
        let [a, b] = self.endpoint_base;
        let endpoints: String = (0..8)
            .map(|e| {
                format!(
                    "- addresses: [{a}.{b}.{}.{}]\n",
                    (i / 4) % 250,
                    1 + e + 8 * ((i / 1000) % 30)
                )
            })
            .collect();
        format!(
            "apiVersion: v1
kind: Service
metadata: {{name: s-{i}, namespace: {ns}}}
spec:
  ports: [{{name: https, port: 80}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: s-{i}-1, namespace: {ns}, labels: {{kubernetes.io/service-name: s-{i}}}}}
addressType: IPv4
ports: [{{name: https, port: 8443}}]
endpoints:
{endpoints}---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {{name: s-{i}, namespace: {ns}}}
spec:
  targetRefs: [{{group: '', kind: Service, name: s-{i}}}]
  validation: {{hostname: s-{i}.example.com, wellKnownCACertificates: System}}
"
        )
    }

    /// `(file name, text)`: `gateway.yaml` and `route-<i>.yaml` for every route.
    pub fn files(&self) -> Vec<(String, String)> {
        std::iter::once(("gateway.yaml".to_string(), self.gateway()))
            .chain((0..self.routes).map(|i| (format!("route-{i:05}.yaml"), self.route(i))))
            .collect()
    }

    /// Everything as one multi-document text.
    pub fn text(&self) -> String {
        self.files()
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join("---\n")
    }
}

/// The namespace route `i` and its objects live in.
pub fn namespace(i: usize) -> String {
    format!("team-{}", i % NAMESPACES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_translates_without_refusals() {
        let w = Workload::new(8);
        let loaded = crate::model::load::parse_texts(&w.files()).expect("the workload parses");
        assert_eq!(loaded.model.http_routes.len(), 8);
        assert_eq!(loaded.model.services.len(), 2);
        let t = crate::translate(&loaded.model, &crate::Options::default());
        let res = t.resources(Some("infra/edge")).unwrap();
        // 8 XBackends and 2 Services.
        assert_eq!(res.clusters.len(), 10);
        fn refused(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    if m.get("status").and_then(|s| s.as_str()) == Some("False")
                        && m.get("type").and_then(|t| t.as_str()) != Some("Conflicted")
                    {
                        out.push(v.to_string());
                    }
                    m.values().for_each(|x| refused(x, out));
                }
                serde_json::Value::Array(a) => a.iter().for_each(|x| refused(x, out)),
                _ => {}
            }
        }
        let mut refused_conditions = Vec::new();
        refused(&serde_json::to_value(&t.statuses).unwrap(), &mut refused_conditions);
        let refused = refused_conditions;
        assert!(refused.is_empty(), "{refused:?}");
    }
}
