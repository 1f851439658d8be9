//! Hostname intersection between listeners and routes (Gateway API `Listener.Hostname`,
//! `HTTPRouteSpec.Hostnames`). `*.example.com` matches any name ending in `.example.com` with at
//! least one more label, never `example.com` itself.

/// Does `pattern` (exact or `*.suffix`) match `name` (exact or wildcard)?
fn covers(pattern: &str, name: &str) -> bool {
    match pattern.strip_prefix('*') {
        None => pattern == name,
        Some(suffix) => {
            // A wildcard covers a more specific wildcard too: `*.example.com` covers `*.a.example.com`.
            let name_rest = name.strip_prefix('*').unwrap_or(name);
            name_rest.len() > suffix.len() && name_rest.ends_with(suffix)
                || (name.starts_with('*') && name_rest == suffix)
        }
    }
}

/// The hostname a request must carry to match both a listener hostname and a route hostname, if
/// any: the more specific of the two when one covers the other.
pub fn intersect(listener: &str, route: &str) -> Option<String> {
    if covers(listener, route) {
        Some(route.to_string())
    } else if covers(route, listener) {
        Some(listener.to_string())
    } else {
        None
    }
}

/// Effective hostnames of a route on a listener: route hostnames narrowed to the listener's, or the
/// listener's own when the route has none. `["*"]` stands for "any host". Empty: no intersection.
pub fn effective(listener: Option<&str>, route: &[String]) -> Vec<String> {
    let mut out: Vec<String> = match (listener, route.is_empty()) {
        (None, true) => vec!["*".to_string()],
        (None, false) => route.to_vec(),
        (Some(l), true) => vec![l.to_string()],
        (Some(l), false) => route.iter().filter_map(|r| intersect(l, r)).collect(),
    };
    out.sort();
    out.dedup();
    out
}

/// Does a route hostname set (from `effective`) serve requests for virtual-host name `host`?
pub fn serves(route_hosts: &[String], host: &str) -> bool {
    route_hosts.iter().any(|h| h == "*" || h == host || covers(h, host))
}

/// Can one request host match both effective hostnames (`*` = any host)?
pub fn overlap(a: &str, b: &str) -> bool {
    a == "*" || b == "*" || intersect(a, b).is_some()
}

/// Listener isolation (Gateway API `GatewaySpec.Listeners`, "Listeners that are distinct only by
/// Hostname"): of the hostnames of the listeners sharing a port (`None`: no hostname), the index of
/// the most specific one that covers `host` — an effective route hostname, exact, wildcard, or `*`
/// for "any". Exact before wildcard, longer wildcard before shorter, no hostname last. Requests for
/// `host` belong to that listener alone, so only its routes may claim them.
pub fn owner(listener_hosts: &[Option<&str>], host: &str) -> Option<usize> {
    listener_hosts
        .iter()
        .enumerate()
        .filter(|(_, l)| match l {
            None => true,
            Some(l) => host != "*" && covers(l, host),
        })
        .min_by(|(_, a), (_, b)| super::order::hostname_specificity(a.unwrap_or("*"), b.unwrap_or("*")))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_table() {
        // The listeners of upstream GatewayHTTPListenerIsolation.
        let ls = [
            None,
            Some("*.example.com"),
            Some("*.foo.example.com"),
            Some("abc.foo.example.com"),
        ];
        let cases = [
            ("*", Some(0)),
            ("bar.com", Some(0)),
            ("example.com", Some(0)),
            ("x.example.com", Some(1)),
            ("*.example.com", Some(1)),
            ("foo.example.com", Some(1)),
            ("x.foo.example.com", Some(2)),
            ("*.foo.example.com", Some(2)),
            ("*.bar.foo.example.com", Some(2)),
            ("a.abc.foo.example.com", Some(2)),
            ("abc.foo.example.com", Some(3)),
        ];
        for (host, want) in cases {
            assert_eq!(owner(&ls, host), want, "{host}");
        }
        assert_eq!(owner(&[Some("a.example.com")], "b.example.com"), None);
        assert_eq!(
            owner(&[Some("*.example.com")], "*"),
            None,
            "a catch-all is nobody's but the empty listener's"
        );
    }

    #[test]
    fn intersection_table() {
        let cases = [
            ("foo.example.com", "foo.example.com", Some("foo.example.com")),
            ("foo.example.com", "bar.example.com", None),
            ("*.example.com", "foo.example.com", Some("foo.example.com")),
            ("*.example.com", "example.com", None),
            ("foo.example.com", "*.example.com", Some("foo.example.com")),
            ("*.example.com", "*.foo.example.com", Some("*.foo.example.com")),
            ("*.foo.example.com", "*.example.com", Some("*.foo.example.com")),
            ("*.example.com", "*.example.com", Some("*.example.com")),
            ("*.example.com", "a.b.example.com", Some("a.b.example.com")),
            ("*.example.com", "*.example.org", None),
        ];
        for (l, r, want) in cases {
            assert_eq!(intersect(l, r).as_deref(), want, "{l} ∩ {r}");
        }
    }

    #[test]
    fn effective_hosts() {
        assert_eq!(effective(None, &[]), vec!["*"]);
        assert_eq!(effective(Some("*.example.com"), &[]), vec!["*.example.com"]);
        assert_eq!(
            effective(Some("*.example.com"), &["a.example.com".into(), "other.org".into()]),
            vec!["a.example.com"]
        );
        assert!(effective(Some("a.example.com"), &["b.example.com".into()]).is_empty());
        assert!(serves(&["*.example.com".into()], "a.example.com"));
        assert!(!serves(&["a.example.com".into()], "b.example.com"));
    }
}
