//! A synthetic configuration of a given size, the shape the scaling benchmarks use: `n` HTTPRoutes, each
//! with its own hostname and its own XBackend (ExternalHostname; every other one with TLS verified
//! against the system bundle), and for every fourth route a Service with 8 ready endpoints, a
//! BackendTLSPolicy on it, and a second rule sending to it. Routes and their objects are spread over 50
//! namespaces; one Gateway (`infra/edge`, HTTP port `port`) takes routes from all of them.
//!
//! With [`Workload::one_vhost`], the common API-gateway shape instead: no route has a hostname, each matches
//! its own path prefix (`/r-<i>`), so every route lands in the one `*` virtual host of the listener.
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
    /// Hostname-less routes on paths of their own: one virtual host of every route.
    pub one_vhost: bool,
}

impl Workload {
    pub fn new(routes: usize) -> Self {
        Self {
            routes,
            port: 8080,
            endpoint_base: [10, 1],
            one_vhost: false,
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
        let (api, rest, hostnames) = if self.one_vhost {
            (format!("/r-{i}"), format!("/r-{i}/svc"), String::new())
        } else {
            (
                "/api".to_string(),
                "/".to_string(),
                format!("  hostnames: [h-{i}.example.com]\n"),
            )
        };
        let mut rules = format!(
            "  - matches: [{{path: {{type: PathPrefix, value: {api}}}}}]
    backendRefs: [{{group: gateway.networking.x-k8s.io, kind: XBackend, name: x-{i}}}]
"
        );
        if i.is_multiple_of(4) {
            docs.push(self.service(i));
            let matches = if self.one_vhost {
                format!("matches: [{{path: {{type: PathPrefix, value: {rest}}}}}], ")
            } else {
                String::new()
            };
            rules.push_str(&format!("  - {{{matches}backendRefs: [{{name: s-{i}, port: 80}}]}}\n"));
        }
        docs.push(format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r-{i}, namespace: {ns}}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
{hostnames}  rules:
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

/// One change to a workload, as the incremental benchmarks apply it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A new route with its own XBackend.
    RouteAdded,
    /// An existing route's path prefix edited.
    RouteEdited,
    /// An XBackend's hostname edited.
    BackendEdited,
    /// One endpoint of a Service's EndpointSlice moved to another address.
    EndpointMoved,
    /// The certificate of the Gateway's HTTPS listener replaced.
    SecretRotated,
    /// A listener added to the Gateway.
    ListenerAdded,
}

impl Change {
    pub const ALL: [Change; 6] = [
        Change::RouteAdded,
        Change::RouteEdited,
        Change::BackendEdited,
        Change::EndpointMoved,
        Change::SecretRotated,
        Change::ListenerAdded,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Change::RouteAdded => "route-added",
            Change::RouteEdited => "route-edited",
            Change::BackendEdited => "backend-edited",
            Change::EndpointMoved => "endpoint-moved",
            Change::SecretRotated => "secret-rotated",
            Change::ListenerAdded => "listener-added",
        }
    }
}

impl Workload {
    /// The workload's model, and the model after `change`. Both have an HTTPS listener for
    /// `secure.example.com` (no route attaches there) whose certificate is a Secret, so a rotation has
    /// something to rotate.
    pub fn models(&self, change: Change) -> (crate::model::Model, crate::model::Model) {
        let ca = super::pki::Ca::new("workload");
        let before = self.parse(&[self.text(), self.https(), self.certificate(&ca)]);
        let mut after = before.clone();
        let edit = match change {
            Change::RouteAdded => self.route(self.routes),
            Change::RouteEdited if self.one_vhost => self.route(5).replace("value: /r-5}", "value: /r-5/v2}"),
            Change::RouteEdited => self.route(5).replace("value: /api", "value: /api/v2"),
            Change::BackendEdited => self.xbackend(5).replace("x-5.example.com}", "x-5b.example.com}"),
            Change::EndpointMoved => self
                .service(4)
                .replace("- addresses: [10.1.1.1]", "- addresses: [10.1.99.1]"),
            Change::SecretRotated => self.certificate(&ca),
            Change::ListenerAdded => self.https().replace(
                "  - {name: http,",
                "  - {name: admin, protocol: HTTP, port: 9090, hostname: admin.example.com}\n  - {name: http,",
            ),
        };
        after.absorb(&self.parse(&[edit]));
        (before, after)
    }

    /// The Gateway with an HTTPS listener for `secure.example.com`.
    fn https(&self) -> String {
        self.gateway().replace(
            "  - {name: http,",
            "  - {name: secure, protocol: HTTPS, port: 8443, hostname: secure.example.com, tls: {certificateRefs: [{name: edge-cert}]}}\n  - {name: http,",
        )
    }

    /// The HTTPS listener's Secret: a fresh certificate from `ca` each call.
    fn certificate(&self, ca: &super::pki::Ca) -> String {
        let leaf = ca.server(&["secure.example.com"], &[]);
        let indent = |pem: &str| pem.lines().map(|l| format!("    {l}\n")).collect::<String>();
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: edge-cert, namespace: infra}}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}",
            indent(&leaf.cert_pem),
            indent(&leaf.key_pem)
        )
    }

    fn parse(&self, texts: &[String]) -> crate::model::Model {
        let mut model = crate::model::Model::default();
        for (i, text) in texts.iter().enumerate() {
            let loaded = crate::model::load::parse_texts(&[(format!("workload-{i}.yaml"), text.clone())])
                .expect("the workload parses");
            model.absorb(&loaded.model);
        }
        model
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

    #[test]
    fn one_vhost_puts_every_route_in_the_listeners_one_virtual_host() {
        let w = Workload {
            one_vhost: true,
            ..Workload::new(8)
        };
        for change in Change::ALL {
            let (before, after) = w.models(change);
            let opts = crate::Options::default();
            let (a, b) = (crate::translate(&before, &opts), crate::translate(&after, &opts));
            assert_ne!(a.gateways, b.gateways, "{change:?} changes no resource");
        }
        let loaded = crate::model::load::parse_texts(&w.files()).expect("the workload parses");
        let t = crate::translate(&loaded.model, &crate::Options::default());
        let res = t.resources(Some("infra/edge")).unwrap();
        let vhosts: Vec<_> = res.routes.iter().flat_map(|r| &r.virtual_hosts).collect();
        assert_eq!(vhosts.len(), 1);
        assert_eq!(vhosts[0].domains, ["*"]);
        assert_eq!(vhosts[0].routes.len(), 8 + 2, "a route per rule");
    }

    #[test]
    fn every_change_changes_something_the_translation_shows() {
        let w = Workload::new(8);
        for change in Change::ALL {
            let (before, after) = w.models(change);
            let opts = crate::Options::default();
            let (a, b) = (crate::translate(&before, &opts), crate::translate(&after, &opts));
            assert_ne!(a.gateways, b.gateways, "{change:?} changes no resource");
            let refused = b
                .statuses
                .iter()
                .map(|s| serde_json::to_string(s).unwrap())
                .filter(|s| s.contains("\"status\":\"False\"") && !s.contains("Conflicted"))
                .collect::<Vec<_>>();
            assert!(refused.is_empty(), "{change:?}: {refused:?}");
        }
    }
}
