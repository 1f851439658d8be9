//! Every ordering rule the translator applies, each a total order with a tie-break, in one place.

use std::cmp::Ordering;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

/// Gateway API conflict resolution (BackendTLSPolicy `targetRefs`, route precedence ties, listener
/// conflicts): the older object wins, then `{namespace}/{name}` alphabetically.
/// <https://gateway-api.sigs.k8s.io/reference/spec/#backendtlspolicyspec> (`TargetRefs`).
/// An object without `creationTimestamp` (typical in files) counts as newer than any that has one.
pub fn oldest_first(a: &ObjectMeta, b: &ObjectMeta) -> Ordering {
    let ts = |m: &ObjectMeta| m.creation_timestamp.clone();
    match (ts(a), ts(b)) {
        (Some(Time(x)), Some(Time(y))) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
    .then_with(|| a.namespace.cmp(&b.namespace))
    .then_with(|| a.name.cmp(&b.name))
}

/// Order of route entries within a virtual host (Envoy takes the first match): exact paths first,
/// then prefixes by length (longest first), then the routes' own order (oldest, namespace/name, rule
/// index, match index), which the caller encodes in `tie`.
/// <https://gateway-api.sigs.k8s.io/reference/spec/#httprouterule> (`Matches`).
pub fn path_precedence(a: &crate::ir::PathMatch, b: &crate::ir::PathMatch) -> Ordering {
    use crate::ir::PathMatch::{Exact, Prefix};
    match (a, b) {
        (Exact(_), Prefix(_)) => Ordering::Less,
        (Prefix(_), Exact(_)) => Ordering::Greater,
        (Exact(x), Exact(y)) => y.len().cmp(&x.len()).then_with(|| x.cmp(y)),
        (Prefix(x), Prefix(y)) => y.len().cmp(&x.len()).then_with(|| x.cmp(y)),
    }
}

/// Listener hostname specificity for virtual hosts: exact names before wildcards, longer wildcards
/// (more labels) first, the catch-all last. Envoy applies the same rule itself; this only fixes the
/// output order.
pub fn hostname_specificity(a: &str, b: &str) -> Ordering {
    let rank = |h: &str| match h {
        "*" => (2, 0),
        h if h.starts_with("*.") => (1, usize::MAX - h.len()),
        h => (0, usize::MAX - h.len()),
    };
    rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
}

/// How specifically a route claims the request host `host` (one of the route's effective hostnames
/// serves it): an exact hostname beats a wildcard, a longer one beats a shorter one, and a route
/// without hostnames comes last. Gateway API orders routes by this before their matches
/// (<https://gateway-api.sigs.k8s.io/reference/spec/#httproutespec>, `Hostnames`).
pub fn route_host_rank(route_hosts: &[String], host: &str) -> (u8, usize) {
    route_hosts
        .iter()
        .filter(|h| super::hostnames::serves(std::slice::from_ref(*h), host))
        .map(|h| match h.as_str() {
            "*" => (2, 0),
            h if h.starts_with('*') => (1, usize::MAX - h.len()),
            h => (0, usize::MAX - h.len()),
        })
        .min()
        .unwrap_or((3, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::PathMatch::{Exact, Prefix};

    fn meta(ns: &str, name: &str, ts: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            creation_timestamp: ts.map(|t| Time(t.parse().unwrap())),
            ..Default::default()
        }
    }

    #[test]
    fn oldest_then_name() {
        let old = meta("b", "z", Some("2024-01-01T00:00:00Z"));
        let new = meta("a", "a", Some("2025-01-01T00:00:00Z"));
        let none = meta("a", "a", None);
        assert_eq!(oldest_first(&old, &new), Ordering::Less);
        assert_eq!(oldest_first(&new, &none), Ordering::Less);
        assert_eq!(
            oldest_first(&meta("a", "b", None), &meta("a", "c", None)),
            Ordering::Less
        );
        assert_eq!(
            oldest_first(&meta("a", "z", None), &meta("b", "a", None)),
            Ordering::Less
        );
    }

    #[test]
    fn paths() {
        let mut v = vec![
            Prefix("/".into()),
            Prefix("/abc".into()),
            Exact("/a".into()),
            Exact("/abcd".into()),
            Prefix("/ab".into()),
        ];
        v.sort_by(path_precedence);
        assert_eq!(
            v,
            vec![
                Exact("/abcd".into()),
                Exact("/a".into()),
                Prefix("/abc".into()),
                Prefix("/ab".into()),
                Prefix("/".into())
            ]
        );
    }

    #[test]
    fn route_hosts() {
        let exact = vec!["a.example.com".to_string()];
        let wild = vec!["*.example.com".to_string()];
        let any = vec!["*".to_string()];
        let h = "a.example.com";
        assert!(route_host_rank(&exact, h) < route_host_rank(&wild, h));
        assert!(route_host_rank(&wild, h) < route_host_rank(&any, h));
    }

    #[test]
    fn hostnames() {
        let mut v = vec!["*", "*.example.com", "a.example.com", "*.a.example.com"];
        v.sort_by(|a, b| hostname_specificity(a, b));
        assert_eq!(v, vec!["a.example.com", "*.a.example.com", "*.example.com", "*"]);
    }
}
