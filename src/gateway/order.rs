//! Every ordering rule the translator applies, each a total order with a tie-break, in one place.

use std::cmp::Ordering;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Gateway API conflict resolution (BackendTLSPolicy `targetRefs`, route precedence ties, listener
/// conflicts): the older object wins, then `{namespace}/{name}` alphabetically, which each caller keeps
/// beside its own further tie-breaks (`backend_tls::Rank`, `spec::RouteOrder`).
/// <https://gateway-api.sigs.k8s.io/reference/spec/#backendtlspolicyspec> (`TargetRefs`).
/// An object without `creationTimestamp` (typical in files) counts as newer than any that has one.
pub fn older_first(a: Option<&Time>, b: Option<&Time>) -> Ordering {
    match (a, b) {
        (Some(Time(x)), Some(Time(y))) => x.cmp(y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Gateway API route precedence on one listener, for requests to `host` (Envoy takes the first match
/// of a virtual host, so this is the order of its routes). Across all routes: the route hostname that
/// serves `host` most specifically ([`route_host_rank`]), then the path ([`path_precedence`]: exact
/// paths, regular expressions, then the longest prefix), then a method match, then the most header
/// matches, then the most query parameter matches, then the routes' own order — oldest route, then
/// `{namespace}/{name}`, then rule index, then match index — which the caller encodes in `tie`.
/// <https://gateway-api.sigs.k8s.io/reference/spec/#httprouterule> (`Matches`) and
/// <https://gateway-api.sigs.k8s.io/reference/spec/#httproutespec> (`Hostnames`).
///
/// GRPCRoute entries (a virtual host never mixes the two kinds: they may not share a hostname) rank by
/// the characters of the matched service, then method, then header matches, then the same tie-break
/// (<https://gateway-api.sigs.k8s.io/reference/spec/#grpcrouterule>, `Matches`).
pub fn route_precedence(host: &str, a: &super::routes::Entry, b: &super::routes::Entry) -> Ordering {
    let (ra, rb) = (&a.route, &b.route);
    let hosts = route_host_rank(&a.hostnames, host).cmp(&route_host_rank(&b.hostnames, host));
    if let (Some((sa, ma)), Some((sb, mb))) = (a.grpc_rank, b.grpc_rank) {
        return hosts
            .then_with(|| sb.cmp(&sa))
            .then_with(|| mb.cmp(&ma))
            .then_with(|| rb.headers.len().cmp(&ra.headers.len()))
            .then_with(|| a.tie.cmp(&b.tie));
    }
    hosts
        .then_with(|| path_precedence(&ra.path, &rb.path))
        .then_with(|| rb.method.is_some().cmp(&ra.method.is_some()))
        .then_with(|| rb.headers.len().cmp(&ra.headers.len()))
        .then_with(|| rb.query_params.len().cmp(&ra.query_params.len()))
        .then_with(|| a.tie.cmp(&b.tie))
}

/// Path part of [`route_precedence`]: exact paths first, then regular expressions by length (longest
/// first), then prefixes by length (longest first). Gateway API leaves regex precedence to the
/// implementation; placing regexes before prefixes (as Envoy Gateway does) keeps a catch-all
/// `PathPrefix /` from making every regex route unreachable. Distinct exact paths or equal-length prefixes never match the same request, so their
/// alphabetical order only makes the output stable; equal-length regexes may overlap and stay equal
/// here, leaving the decision to the remaining criteria.
pub fn path_precedence(a: &crate::ir::PathMatch, b: &crate::ir::PathMatch) -> Ordering {
    use crate::ir::PathMatch::{Exact, Prefix, Regex};
    let rank = |p: &crate::ir::PathMatch| match p {
        Exact(_) => 0,
        Regex(_) => 1,
        Prefix(_) => 2,
    };
    match (a, b) {
        (Exact(x), Exact(y)) | (Prefix(x), Prefix(y)) => y.len().cmp(&x.len()).then_with(|| x.cmp(y)),
        (Regex(x), Regex(y)) => y.len().cmp(&x.len()),
        _ => rank(a).cmp(&rank(b)),
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
    use crate::gateway::routes::Entry;
    use crate::ir::PathMatch::{Exact, Prefix, Regex};
    use crate::ir::{HeaderMatch, PathMatch, QueryMatch, Route, RouteAction, ValueMatch};

    #[test]
    fn older_then_undated() {
        let t = |s: &str| Time(s.parse().unwrap());
        let (old, new) = (t("2024-01-01T00:00:00Z"), t("2025-01-01T00:00:00Z"));
        assert_eq!(older_first(Some(&old), Some(&new)), Ordering::Less);
        assert_eq!(
            older_first(Some(&new), None),
            Ordering::Less,
            "a dated object is older than an undated one"
        );
        assert_eq!(older_first(None, Some(&old)), Ordering::Greater);
        assert_eq!(older_first(None, None), Ordering::Equal, "the name decides");
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
    fn regex_paths_between_exact_and_prefixes_by_length() {
        let mut v = vec![
            Regex("/a.*".into()),
            Prefix("/".into()),
            Regex("/abc/.*".into()),
            Exact("/x".into()),
        ];
        v.sort_by(path_precedence);
        assert_eq!(
            v,
            vec![
                Exact("/x".into()),
                Regex("/abc/.*".into()),
                Regex("/a.*".into()),
                Prefix("/".into())
            ]
        );
    }

    /// A route entry for the precedence table: path, method?, header count, query count, tie.
    fn entry(hosts: &[&str], path: PathMatch, method: bool, headers: usize, query: usize, tie: usize) -> Entry {
        let value = ValueMatch::Exact("v".into());
        Entry {
            listener: 0,
            hostnames: hosts.iter().map(|h| h.to_string()).collect(),
            route: Route {
                name: format!("r{tie}"),
                path,
                headers: (0..headers)
                    .map(|i| HeaderMatch {
                        name: format!("h{i}"),
                        value: value.clone(),
                    })
                    .collect(),
                query_params: (0..query)
                    .map(|i| QueryMatch {
                        name: format!("q{i}"),
                        value: value.clone(),
                    })
                    .collect(),
                method: method.then(|| "GET".to_string()),
                action: RouteAction::DirectResponse { status: 500 },
                grpc: false,
                filters: Default::default(),
            },
            grpc_rank: None,
            tie: (order(tie), 0, 0),
        }
    }

    /// The place of route `r{tie:03}` (no creation time): ordered by `tie`.
    fn order(tie: usize) -> std::sync::Arc<crate::gateway::spec::RouteOrder> {
        let key = crate::model::ObjectKey::new("ns", format!("r{tie:03}"));
        let meta = crate::model::Meta {
            namespace: Some(key.namespace.clone()),
            name: Some(key.name.clone()),
            ..Default::default()
        };
        std::sync::Arc::new(crate::gateway::spec::RouteOrder::new(
            &meta,
            crate::gateway::spec::RouteKind::Http,
            &key,
        ))
    }

    #[test]
    fn route_precedence_table() {
        let host = "a.example.com";
        let p = |s: &str| Prefix(s.into());
        // (case, higher-precedence entry, lower-precedence entry)
        let table = [
            (
                "exact hostname before wildcard, whatever the matches",
                entry(&["a.example.com"], p("/"), false, 0, 0, 9),
                entry(&["*.example.com"], Exact("/x".into()), true, 3, 3, 0),
            ),
            (
                "exact path before any prefix",
                entry(&["*"], Exact("/a".into()), false, 0, 0, 9),
                entry(&["*"], p("/a"), true, 2, 2, 0),
            ),
            (
                "longest prefix",
                entry(&["*"], p("/abc"), false, 0, 0, 9),
                entry(&["*"], p("/ab"), true, 2, 2, 0),
            ),
            (
                "regex before any prefix (a catch-all must not shadow it)",
                entry(&["*"], Regex("/abc/.*".into()), false, 0, 0, 9),
                entry(&["*"], p("/"), true, 2, 2, 0),
            ),
            (
                "longer regex first",
                entry(&["*"], Regex("/abc/.*".into()), false, 0, 0, 9),
                entry(&["*"], Regex("/a.*".into()), true, 2, 2, 0),
            ),
            (
                "method beats headers",
                entry(&["*"], p("/"), true, 0, 0, 9),
                entry(&["*"], p("/"), false, 3, 3, 0),
            ),
            (
                "more headers beats more query params",
                entry(&["*"], p("/"), false, 2, 0, 9),
                entry(&["*"], p("/"), false, 1, 5, 0),
            ),
            (
                "more query params",
                entry(&["*"], p("/"), false, 1, 2, 9),
                entry(&["*"], p("/"), false, 1, 1, 0),
            ),
            (
                "equal matches: route order (oldest, ns/name, rule, match)",
                entry(&["*"], p("/"), true, 1, 1, 0),
                entry(&["*"], p("/"), true, 1, 1, 1),
            ),
        ];
        for (case, hi, lo) in &table {
            assert_eq!(route_precedence(host, hi, lo), Ordering::Less, "{case}");
            assert_eq!(route_precedence(host, lo, hi), Ordering::Greater, "{case} (reversed)");
            assert_eq!(route_precedence(host, hi, hi), Ordering::Equal, "{case} (self)");
        }
    }

    #[test]
    fn grpc_route_precedence_table() {
        let host = "a.example.com";
        let g = |hosts: &[&str], service: usize, method: usize, headers: usize, tie: usize| {
            let mut e = entry(hosts, Prefix("/".into()), false, headers, 0, tie);
            e.grpc_rank = Some((service, method));
            e
        };
        let table = [
            (
                "exact hostname first",
                g(&["a.example.com"], 0, 0, 0, 9),
                g(&["*.example.com"], 20, 20, 5, 0),
            ),
            ("longer service", g(&["*"], 12, 0, 0, 9), g(&["*"], 11, 30, 5, 0)),
            ("then longer method", g(&["*"], 7, 4, 0, 9), g(&["*"], 7, 3, 5, 0)),
            ("then more headers", g(&["*"], 7, 3, 2, 9), g(&["*"], 7, 3, 1, 0)),
            ("then route order", g(&["*"], 7, 3, 1, 0), g(&["*"], 7, 3, 1, 1)),
        ];
        for (case, hi, lo) in &table {
            assert_eq!(route_precedence(host, hi, lo), Ordering::Less, "{case}");
            assert_eq!(route_precedence(host, lo, hi), Ordering::Greater, "{case} (reversed)");
        }
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
