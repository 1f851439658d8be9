//! Every Envoy resource name pier emits is minted here, on the IR side, from identity only (kind,
//! namespace, name, port, section), never from content or position in the input. So one backend used by
//! many routes is one cluster, names are stable across restarts and replicas, and an operator can read a
//! name in Envoy's `/config_dump` and know which object it came from.
//!
//! `gateway/` mints names into the IR; `envoy/` reads them from the IR and calls this module only for the
//! two names that derive from IR content alone (a dynamic-forward-proxy DNS cache, named after its
//! settings, and a filter chain, named after its Gateway listener). Nothing else may format a name.
//!
//! **Uniqueness rule.** Within one Gateway's resources of one xDS type, two names are equal only if they
//! denote the same thing. Every name therefore contains, separated by `/`:
//! - a prefix for the kind of thing it names (`service`, `xbackend`, `backend`, `eg-backend`, `failover`,
//!   `ca`, `ca-bundle`, `cert`, `httproute`, `grpcroute`) wherever two kinds could otherwise collide;
//! - the owning object's namespace and name (a Gateway's for listeners and route configurations);
//! - whatever distinguishes several things one object yields: the port, the Gateway listener
//!   (`sectionName`), the rule and match index, the hostname.
//!
//! Kubernetes names, namespaces, section names and hostnames cannot contain `/`, `+` or `#`, so the parts
//! are recoverable and no two identities share a name. Composite names (`failover/a+b`) join member names
//! with `+`, which no member contains.
//!
//! **Length cap.** Kubernetes bounds each part (namespace 63 bytes; names, section names and hostnames
//! 253), so a single-object name stays under ~600 bytes, but a composite (an aggregate over every backend
//! of a rule) has no bound, and Envoy copies names into every stat, log line and admin dump. A name longer
//! than [`MAX_NAME_LEN`] keeps a readable prefix and ends in `#` plus 16 hex digits of the SHA-256 of the
//! whole name: still deterministic, still unique (a collision needs a 64-bit hash collision between two
//! names with the same 495-byte prefix), and still traceable to its origin by the prefix.

use sha2::{Digest, Sha256};

/// Longest name pier emits, in bytes.
pub const MAX_NAME_LEN: usize = 512;
/// `#` + 16 hex digits.
const HASH_SUFFIX_LEN: usize = 17;

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

/// `name` itself when it fits in [`MAX_NAME_LEN`], else its prefix plus a hash of the whole.
fn bounded(name: String) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let digest = Sha256::digest(name.as_bytes());
    let mut cut = MAX_NAME_LEN - HASH_SUFFIX_LEN;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}#{hex}", &name[..cut])
}

/// Cluster (and EDS service) name for one port of one backend object: `xbackend/default/openai/443`.
pub fn cluster(kind: BackendKind, namespace: &str, name: &str, port: u16) -> String {
    bounded(format!("{}/{namespace}/{name}/{port}", kind.prefix()))
}

/// Cluster of an Envoy Gateway Backend. Its endpoints carry their own ports (and a DynamicResolver has
/// none), and Envoy Gateway ignores the backendRef port, so the Backend is one cluster whatever port a
/// route names: `eg-backend/default/legacy`.
pub fn eg_backend_cluster(namespace: &str, name: &str) -> String {
    bounded(format!("{}/{namespace}/{name}", BackendKind::EgBackend.prefix()))
}

/// Aggregate cluster failing over across `members` in order (a primary backend, then the rule's Envoy
/// Gateway `fallback` Backends): named by its members, so the same failover set is one cluster.
pub fn failover_cluster(members: &[String]) -> String {
    bounded(format!("failover/{}", members.join("+")))
}

/// The HTTP/2 twin of a cluster, for GRPCRoutes to a backend whose own cluster speaks HTTP/1.1 or
/// negotiates: `service/default/echo/8080/h2`.
pub fn http2_twin(cluster: &str) -> String {
    bounded(format!("{cluster}/h2"))
}

/// DNS cache shared by every dynamic-forward-proxy cluster with the same settings.
pub fn dns_cache(lookup_family: &str, refresh_rate_ms: u64) -> String {
    format!("pier-dfp-{lookup_family}-{refresh_rate_ms}ms")
}

/// A weighted-cluster entry that points here gets `cluster_not_found_response_code: 500`: the share of
/// traffic of an invalid backendRef. No cluster of this name ever exists (`envoy::check` enforces it).
pub const INVALID_BACKEND_CLUSTER: &str = "pier/invalid-backend-ref";

/// The listener and route configuration a proxyless gRPC client asks for with target
/// `xds:///host:port`: the target's authority exactly (gRFC A27), so never shortened — a client could not
/// ask for any other name.
pub fn proxyless_target(host: &str, port: u16) -> String {
    format!("{host}:{port}")
}

/// CA bundle taken from one ConfigMap or Secret (`kind` is `configmap` or `secret`).
pub fn ca_secret(kind: &str, namespace: &str, name: &str) -> String {
    bounded(format!("ca/{kind}/{namespace}/{name}"))
}

/// CA bundle taken from one ClusterTrustBundle (cluster-scoped: no namespace).
pub fn cluster_trust_bundle_secret(name: &str) -> String {
    bounded(format!("ca/clustertrustbundle/{name}"))
}

/// CA bundle concatenated from several references, owned by one object (a Backend or a policy).
pub fn ca_bundle_secret(owner_kind: &str, namespace: &str, name: &str) -> String {
    bounded(format!("ca-bundle/{owner_kind}/{namespace}/{name}"))
}

/// The system trust bundle (a file Envoy reads).
pub const SYSTEM_CA_SECRET: &str = "ca/system";

/// A `kubernetes.io/tls` Secret served as an SDS certificate.
pub fn tls_certificate_secret(namespace: &str, name: &str) -> String {
    bounded(format!("cert/{namespace}/{name}"))
}

/// The Envoy listener for one port of a Gateway.
pub fn listener(gateway_namespace: &str, gateway: &str, port: u16) -> String {
    bounded(format!("{gateway_namespace}/{gateway}/{port}"))
}

/// Route configuration of a plain-HTTP port.
pub fn http_route_config(gateway_namespace: &str, gateway: &str, port: u16) -> String {
    bounded(format!("{gateway_namespace}/{gateway}/{port}"))
}

/// Route configuration of one HTTPS filter chain (one Gateway listener).
pub fn https_route_config(gateway_namespace: &str, gateway: &str, port: u16, listener: &str) -> String {
    bounded(format!("{gateway_namespace}/{gateway}/{port}/{listener}"))
}

/// Filter chain of one HTTPS Gateway listener (unique within its Envoy listener: one port of one Gateway).
pub fn filter_chain(listener: &str) -> String {
    listener.to_string()
}

/// Virtual host for one hostname of one Gateway listener (`*` when the listener has no hostname).
pub fn virtual_host(gateway_listener: &str, hostname: &str) -> String {
    bounded(format!("{gateway_listener}/{hostname}"))
}

/// The session cookie of an owner that names none (GEP-1619: a unique name SHOULD be generated): a
/// rule (`httproute/ns/name/rule/0`) or a Backend (`xbackend/ns/name`). A cookie name is a token, so the
/// owner is hashed rather than spelled: `pier-session-` and 16 hex digits, stable for its owner.
pub fn session_cookie(owner: &str) -> String {
    let digest = Sha256::digest(owner.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("pier-session-{hex}")
}

/// One route entry: a (route, rule, match) triple.
pub fn route(route_kind: &str, namespace: &str, name: &str, rule: usize, match_index: usize) -> String {
    bounded(format!(
        "{route_kind}/{namespace}/{name}/rule/{rule}/match/{match_index}"
    ))
}

/// A route entry's name, read back: the parts [`route`] put in, or `None` for a name that is not one
/// (or was cut by the length cap, whose parts are no longer all there). The one reader of the format, so
/// tools that trace an Envoy route back to its rule (`pier explain`) never parse names themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteName<'a> {
    pub route_kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub rule: usize,
    pub match_index: usize,
}

pub fn parse_route(name: &str) -> Option<RouteName<'_>> {
    let parts: Vec<&str> = name.split('/').collect();
    let [route_kind, namespace, route, "rule", rule, "match", m] = parts.as_slice() else {
        return None;
    };
    Some(RouteName {
        route_kind,
        namespace,
        name: route,
        rule: rule.parse().ok()?,
        match_index: m.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_names_read_back_what_they_were_minted_from() {
        let name = route("grpcroute", "default", "api", 3, 1);
        assert_eq!(
            parse_route(&name),
            Some(RouteName {
                route_kind: "grpcroute",
                namespace: "default",
                name: "api",
                rule: 3,
                match_index: 1
            })
        );
        assert_eq!(parse_route("httproute/default/api/rule/3"), None);
        // Cut by the length cap: the hash replaced the tail, so it is not read as a route.
        let long = route("httproute", "default", &"r".repeat(MAX_NAME_LEN), 0, 0);
        assert_eq!(parse_route(&long), None);
    }

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

    #[test]
    fn longest_single_object_names_stay_whole() {
        let ns = "n".repeat(63);
        let name = "a".repeat(253);
        let section = "s".repeat(253);
        let c = cluster(BackendKind::EgBackend, &ns, &name, 65535);
        assert!(!c.contains('#') && c.ends_with("/65535"), "{c}");
        let r = route("grpcroute", &ns, &name, 15, 63);
        assert!(!r.contains('#'), "{r}");
        // A listener section name as long as the Gateway name is the one identity that can pass the cap.
        let rc = https_route_config(&ns, &name, 443, &section);
        assert_eq!(rc.len(), MAX_NAME_LEN);
    }

    #[test]
    fn composite_names_are_capped_deterministically_and_stay_distinct() {
        let members: Vec<String> = (0..8)
            .map(|i| cluster(BackendKind::Service, "team", &format!("{}{i}", "b".repeat(200)), 8080))
            .collect();
        let a = failover_cluster(&members);
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert!(a.starts_with("failover/service/team/"), "readable prefix: {a}");
        assert_eq!(a, failover_cluster(&members), "deterministic");
        let mut other = members.clone();
        other.swap(6, 7);
        let b = failover_cluster(&other);
        assert_eq!(a[..MAX_NAME_LEN - HASH_SUFFIX_LEN], b[..MAX_NAME_LEN - HASH_SUFFIX_LEN]);
        assert_ne!(a, b, "same prefix, different members: different names");
    }

    #[test]
    fn cap_respects_utf8_boundaries() {
        let long = format!("x{}", "é".repeat(400));
        let n = bounded(long);
        assert!(n.len() <= MAX_NAME_LEN && n.contains('#'));
    }
}
