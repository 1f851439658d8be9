//! Every Envoy resource name pier emits is minted here, from identity only (kind, namespace, name,
//! port), never from content or position in the input. So one backend used by many routes is one
//! cluster, names are stable across restarts and replicas, and an operator can read a name in Envoy's
//! `/config_dump` and know which object it came from.

/// Which kind of object a cluster was built from; part of the cluster name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BackendKind {
    Service,
    XBackend,
    /// `gateway.networking.k8s.io` Backend (GEP-4488 or draft shape).
    Backend,
    /// `gateway.envoyproxy.io` Backend.
    EgBackend,
}

impl BackendKind {
    pub fn prefix(self) -> &'static str {
        match self {
            BackendKind::Service => "service",
            BackendKind::XBackend => "xbackend",
            BackendKind::Backend => "backend",
            BackendKind::EgBackend => "eg-backend",
        }
    }
}

/// Cluster (and EDS service) name for one port of one backend object: `xbackend/default/openai/443`.
pub fn cluster(kind: BackendKind, namespace: &str, name: &str, port: u16) -> String {
    format!("{}/{namespace}/{name}/{port}", kind.prefix())
}

/// Cluster of an Envoy Gateway Backend. Its endpoints carry their own ports (and a DynamicResolver has
/// none), and Envoy Gateway ignores the backendRef port, so the Backend is one cluster whatever port a
/// route names: `eg-backend/default/legacy`.
pub fn eg_backend_cluster(namespace: &str, name: &str) -> String {
    format!("{}/{namespace}/{name}", BackendKind::EgBackend.prefix())
}

/// Aggregate cluster failing over across `members` in order (a primary backend, then the rule's Envoy
/// Gateway `fallback` Backends): named by its members, so the same failover set is one cluster.
pub fn failover_cluster(members: &[String]) -> String {
    format!("failover/{}", members.join("+"))
}

/// The HTTP/2 twin of a cluster, for GRPCRoutes to a backend whose own cluster speaks HTTP/1.1 or
/// negotiates: `service/default/echo/8080/h2`.
pub fn http2_twin(cluster: &str) -> String {
    format!("{cluster}/h2")
}

/// DNS cache shared by every dynamic-forward-proxy cluster with the same settings.
pub fn dns_cache(lookup_family: &str, refresh_rate_ms: u64) -> String {
    format!("pier-dfp-{lookup_family}-{refresh_rate_ms}ms")
}

/// A weighted-cluster entry that points here gets `cluster_not_found_response_code: 500`: the share of
/// traffic of an invalid backendRef. No cluster of this name ever exists (`envoy::check` enforces it).
pub const INVALID_BACKEND_CLUSTER: &str = "pier/invalid-backend-ref";

/// CA bundle taken from one ConfigMap or Secret (`kind` is `configmap` or `secret`).
pub fn ca_secret(kind: &str, namespace: &str, name: &str) -> String {
    format!("ca/{kind}/{namespace}/{name}")
}

/// CA bundle concatenated from several references, owned by one object (a Backend or a policy).
pub fn ca_bundle_secret(owner_kind: &str, namespace: &str, name: &str) -> String {
    format!("ca-bundle/{owner_kind}/{namespace}/{name}")
}

/// The system trust bundle (a file Envoy reads).
pub const SYSTEM_CA_SECRET: &str = "ca/system";

/// A `kubernetes.io/tls` Secret served as an SDS certificate.
pub fn tls_certificate_secret(namespace: &str, name: &str) -> String {
    format!("cert/{namespace}/{name}")
}

/// The Envoy listener for one port of a Gateway.
pub fn listener(gateway_namespace: &str, gateway: &str, port: u16) -> String {
    format!("{gateway_namespace}/{gateway}/{port}")
}

/// Route configuration of a plain-HTTP port.
pub fn http_route_config(gateway_namespace: &str, gateway: &str, port: u16) -> String {
    format!("{gateway_namespace}/{gateway}/{port}")
}

/// Route configuration of one HTTPS filter chain (one Gateway listener).
pub fn https_route_config(gateway_namespace: &str, gateway: &str, port: u16, listener: &str) -> String {
    format!("{gateway_namespace}/{gateway}/{port}/{listener}")
}

/// Filter chain of one HTTPS Gateway listener.
pub fn filter_chain(listener: &str) -> String {
    listener.to_string()
}

/// Virtual host for one hostname of one Gateway listener (`*` when the listener has no hostname).
pub fn virtual_host(gateway_listener: &str, hostname: &str) -> String {
    format!("{gateway_listener}/{hostname}")
}

/// One route entry: a (route, rule, match) triple.
pub fn route(route_kind: &str, namespace: &str, name: &str, rule: usize, match_index: usize) -> String {
    format!("{route_kind}/{namespace}/{name}/rule/{rule}/match/{match_index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_carry_identity() {
        assert_eq!(
            cluster(BackendKind::XBackend, "default", "openai", 443),
            "xbackend/default/openai/443"
        );
        assert_eq!(eg_backend_cluster("ns", "b"), "eg-backend/ns/b");
        assert_ne!(
            cluster(BackendKind::Service, "a", "b", 1),
            cluster(BackendKind::Backend, "a", "b", 1),
            "same name, different kind: different clusters"
        );
    }
}
