//! Destination guardrails: which addresses and hostnames a namespace user may point a Backend at.
//!
//! A Backend lets whoever can write it make the shared proxy connect somewhere. Without limits that
//! reaches the proxy's own admin port on loopback, cloud metadata on 169.254.169.254, or any
//! in-cluster Service by its `.cluster.local` name, bypassing ReferenceGrant (see
//! `spec/envoy-gateway-backend-security-risks.md`). The built-in rules refuse those classes; operators
//! (never namespace users) can deny more CIDRs, restrict hostnames to an allow-list, allow loopback
//! for development, and opt in to unix sockets and DynamicResolver. A refused destination never
//! reaches any Envoy resource: the translator drops it and the status names the rule.
//!
//! Limit: for hostnames Envoy resolves itself (STRICT_DNS), these rules check the *name*; a public
//! name that resolves to a private address is the DNS-rebinding gap the GEP accepts.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::options::Guardrails;

/// Why a destination was refused: the rule and the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: Rule,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Loopback,
    LinkLocal,
    Unspecified,
    Multicast,
    Broadcast,
    DeniedCidr,
    ClusterLocal,
    SingleLabel,
    IpLiteral,
    Wildcard,
    InvalidHostname,
    NotInAllowList,
    UnixSocketsDisabled,
}

impl Rule {
    /// Stable rule name shown in status messages and docs.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Loopback => "loopback",
            Rule::LinkLocal => "link-local",
            Rule::Unspecified => "unspecified-address",
            Rule::Multicast => "multicast",
            Rule::Broadcast => "broadcast",
            Rule::DeniedCidr => "denied-cidr",
            Rule::ClusterLocal => "cluster-local-hostname",
            Rule::SingleLabel => "single-label-hostname",
            Rule::IpLiteral => "ip-literal-hostname",
            Rule::Wildcard => "wildcard-hostname",
            Rule::InvalidHostname => "invalid-hostname",
            Rule::NotInAllowList => "hostname-not-allowed",
            Rule::UnixSocketsDisabled => "unix-sockets-disabled",
        }
    }

    fn explain(self) -> &'static str {
        match self {
            Rule::Loopback => "loopback addresses reach the proxy itself, including its admin interface",
            Rule::LinkLocal => "link-local addresses include cloud metadata endpoints such as 169.254.169.254",
            Rule::Unspecified => "the unspecified address is not a destination",
            Rule::Multicast => "multicast addresses are not unicast destinations",
            Rule::Broadcast => "the broadcast address is not a destination",
            Rule::DeniedCidr => "the operator denied this range",
            Rule::ClusterLocal => "cluster-internal names bypass ReferenceGrant; reference the Service instead",
            Rule::SingleLabel => "single-label names resolve through search domains to cluster-internal services",
            Rule::IpLiteral => "an IP address is not a hostname",
            Rule::Wildcard => "wildcard hostnames are not destinations",
            Rule::InvalidHostname => "not an RFC 1123 hostname",
            Rule::NotInAllowList => "the operator's hostname allow-list does not include it",
            Rule::UnixSocketsDisabled => {
                "unix socket endpoints are disabled (an operator can allow them with --allow-unix-sockets)"
            }
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "destination {:?} refused by rule {}: {}",
            self.value,
            self.rule.name(),
            self.rule.explain()
        )
    }
}

fn refuse(rule: Rule, value: impl Into<String>) -> Refusal {
    Refusal {
        rule,
        value: value.into(),
    }
}

/// Checks an IP endpoint address.
pub fn check_ip(ip: IpAddr, g: &Guardrails) -> Result<(), Refusal> {
    let ip = canonical(ip);
    let v = ip.to_string();
    if ip.is_loopback() && !g.allow_loopback {
        return Err(refuse(Rule::Loopback, v));
    }
    if ip.is_unspecified() {
        return Err(refuse(Rule::Unspecified, v));
    }
    if ip.is_multicast() {
        return Err(refuse(Rule::Multicast, v));
    }
    match ip {
        IpAddr::V4(v4) => {
            if v4.is_link_local() {
                return Err(refuse(Rule::LinkLocal, v));
            }
            if v4.is_broadcast() {
                return Err(refuse(Rule::Broadcast, v));
            }
        }
        IpAddr::V6(v6) => {
            // fe80::/10; `Ipv6Addr::is_unicast_link_local` is stable but spell it out for clarity.
            if (v6.segments()[0] & 0xffc0) == 0xfe80 {
                return Err(refuse(Rule::LinkLocal, v));
            }
        }
    }
    if g.denied_cidrs.iter().any(|net| net.contains(&ip)) {
        return Err(refuse(Rule::DeniedCidr, v));
    }
    Ok(())
}

/// IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is checked as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Checks a hostname that Envoy will resolve (ExternalHostname, FQDN endpoints).
pub fn check_hostname(host: &str, g: &Guardrails) -> Result<(), Refusal> {
    let h = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if h.contains('*') {
        return Err(refuse(Rule::Wildcard, host));
    }
    if h.parse::<IpAddr>().is_ok() || looks_like_ipv6(&h) {
        return Err(refuse(Rule::IpLiteral, host));
    }
    if !is_rfc1123_hostname(&h) {
        return Err(refuse(Rule::InvalidHostname, host));
    }
    if h == "localhost" || h.ends_with(".localhost") {
        if g.allow_loopback {
            return allow_listed(host, &h, g);
        }
        return Err(refuse(Rule::Loopback, host));
    }
    if h == "cluster.local" || h.ends_with(".cluster.local") {
        return Err(refuse(Rule::ClusterLocal, host));
    }
    if !h.contains('.') {
        return Err(refuse(Rule::SingleLabel, host));
    }
    // All-numeric dotted names (`127.1`) are parsed as addresses by resolvers.
    if h.split('.').all(|l| l.chars().all(|c| c.is_ascii_digit())) {
        return Err(refuse(Rule::IpLiteral, host));
    }
    allow_listed(host, &h, g)
}

fn allow_listed(host: &str, h: &str, g: &Guardrails) -> Result<(), Refusal> {
    let Some(list) = &g.allowed_hostnames else {
        return Ok(());
    };
    let ok = list.iter().any(|entry| {
        let e = entry.to_ascii_lowercase();
        match e.strip_prefix("*.") {
            Some(suffix) => h.len() > suffix.len() && h.ends_with(&format!(".{suffix}")),
            None => h == e,
        }
    });
    if ok {
        Ok(())
    } else {
        Err(refuse(Rule::NotInAllowList, host))
    }
}

/// Checks a unix socket path (Envoy Gateway `unix` endpoints).
pub fn check_unix(path: &str, g: &Guardrails) -> Result<(), Refusal> {
    if g.allow_unix_sockets {
        Ok(())
    } else {
        Err(refuse(Rule::UnixSocketsDisabled, path))
    }
}

fn looks_like_ipv6(h: &str) -> bool {
    let inner = h.trim_start_matches('[').trim_end_matches(']');
    inner.contains(':') && inner.parse::<Ipv6Addr>().is_ok()
}

/// RFC 1123 hostname: labels of 1–63 of `[a-z0-9-]`, not starting or ending with `-`, 253 total.
pub fn is_rfc1123_hostname(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

// The same hostname rules, enforced by Envoy on a request's authority (`Host`, `:authority`).
//
// A DynamicResolver Backend (dynamic forward proxy) connects wherever the request's authority says, so
// `check_hostname` cannot run at translation time. Envoy runs these RE2 regexes instead, as RBAC rules on
// the routes that forward to such a Backend (see `envoy::routes`): an authority matching any deny regex,
// or (with an allow-list) none of the allow regexes, is answered 403. KEEP IN SYNC with `check_hostname`:
// every rule there has its regex here, and `HOSTNAME_CASES` is run through both (`hostname_rules` here,
// a real Envoy in `tests/it/envoy_validate.rs`). Differences, both fail-closed: label and name lengths are not
// checked (such names cannot be resolved anyway), and under `allow_loopback` a bare `localhost` stays
// denied as a single label (RE2 has no look-ahead to exempt it).
//
// The host is everything before the first `:`; a port may follow. Envoy matches the whole value (RE2 full
// match; the anchors say so to the reader). One small regex per rule: Envoy refuses a regex whose RE2
// program is larger than 100 instructions.

/// Optional trailing dot, then an optional port, to the end.
const AUTHORITY_TAIL: &str = r"\.?(?::.*)?$";

/// RE2 regexes, each anchored and matched against the whole authority, that together match every
/// authority whose host `check_hostname` refuses by its built-in rules.
pub fn authority_deny_regexes(g: &Guardrails) -> Vec<String> {
    let mut out: Vec<String> = [
        // Rule::Wildcard.
        r"^.*\*.*$",
        // Rule::IpLiteral: bracketed IPv6 (`[::1]`, `[::ffff:169.254.169.254]:80`).
        r"^\[.*$",
        // Rule::IpLiteral: digits and dots only (`10.0.0.5`, `127.1`, `127.0.0.1.`), any port.
        r"^[0-9.]+(?::.*)?$",
        // Rule::InvalidHostname: a character outside `[A-Za-z0-9.-]` in the host.
        r"^[^:]*[^0-9A-Za-z.:-].*$",
        // Rule::InvalidHostname: an empty label (leading dot, `..`) or a label starting with `-`.
        r"^(?:[^:]*\.)?[.-].*$",
        // Rule::InvalidHostname: a label ending with `-`.
        r"^[^:]*-(?:[.:].*)?$",
        // Rule::InvalidHostname, Rule::IpLiteral: after the first `:` anything but a port number
        // (also every bare IPv6 literal, `::1`, which has several colons).
        r"^[^:]*:(?:.*[^0-9].*)?$",
    ]
    .map(String::from)
    .into();
    // Rule::Loopback, Rule::ClusterLocal; `(?i)`: `LOCALHOST` resolves like `localhost`.
    if !g.allow_loopback {
        out.push(format!(r"(?i)^(?:[^:]*\.)?localhost{AUTHORITY_TAIL}"));
    }
    out.push(format!(r"(?i)^(?:[^:]*\.)?cluster\.local{AUTHORITY_TAIL}"));
    // Rule::SingleLabel (and the empty host).
    out.push(format!(r"^[^.:]*{AUTHORITY_TAIL}"));
    out
}

/// With an operator allow-list, one RE2 regex per entry (as `allow_listed` reads it: exact names, and
/// `*.suffix` for names ending in `.suffix`); an authority matching none of them is refused.
pub fn authority_allow_regexes(g: &Guardrails) -> Option<Vec<String>> {
    let list = g.allowed_hostnames.as_ref()?;
    let regexes = list.iter().map(|entry| {
        let e = entry.to_ascii_lowercase();
        match e.strip_prefix("*.") {
            // At least one character before `.suffix`, as in `allow_listed`.
            Some(suffix) => format!(r"(?i)^[^:]+\.{}{AUTHORITY_TAIL}", re2_literal(suffix)),
            None => format!(r"(?i)^{}{AUTHORITY_TAIL}", re2_literal(&e)),
        }
    });
    Some(regexes.collect())
}

/// `s` matched literally by RE2 (a hostname's `.` is its only metacharacter; the rest are escaped in case).
fn re2_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Hostnames and the rule `check_hostname` refuses each by under default guardrails. The one table both
/// enforcement points are tested against: `check_hostname` here, the authority regexes in a real Envoy
/// (`tests/it/envoy_validate.rs`), with each host also upper-cased and with a port.
#[doc(hidden)]
pub const HOSTNAME_CASES: &[(&str, Option<Rule>)] = &[
    ("api.example.com", None),
    ("API.Example.com.", None),
    ("a-b.example.com", None),
    ("localhost", Some(Rule::Loopback)),
    ("LocalHost.", Some(Rule::Loopback)),
    ("foo.localhost", Some(Rule::Loopback)),
    ("svc.ns.svc.cluster.local", Some(Rule::ClusterLocal)),
    ("kubernetes.default.svc.cluster.local.", Some(Rule::ClusterLocal)),
    ("cluster.local", Some(Rule::ClusterLocal)),
    ("backend", Some(Rule::SingleLabel)),
    ("kubernetes.", Some(Rule::SingleLabel)),
    ("2130706433", Some(Rule::SingleLabel)),
    ("10.0.0.1", Some(Rule::IpLiteral)),
    ("169.254.169.254", Some(Rule::IpLiteral)),
    ("127.0.0.1.", Some(Rule::IpLiteral)),
    ("127.1", Some(Rule::IpLiteral)),
    ("[::1]", Some(Rule::IpLiteral)),
    ("::1", Some(Rule::IpLiteral)),
    ("[::ffff:169.254.169.254]", Some(Rule::IpLiteral)),
    ("*.example.com", Some(Rule::Wildcard)),
    ("-bad.example.com", Some(Rule::InvalidHostname)),
    ("bad-.example.com", Some(Rule::InvalidHostname)),
    ("a..example.com", Some(Rule::InvalidHostname)),
    (".example.com", Some(Rule::InvalidHostname)),
    ("under_score.example.com", Some(Rule::InvalidHostname)),
];

/// Parses an IP the way Envoy Gateway's schema allows (dotted quad or IPv6), for its `ip` endpoints.
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse::<Ipv4Addr>()
        .map(IpAddr::V4)
        .ok()
        .or_else(|| s.parse::<Ipv6Addr>().map(IpAddr::V6).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule_of(r: Result<(), Refusal>) -> Option<Rule> {
        r.err().map(|e| e.rule)
    }

    #[test]
    fn ip_rules() {
        let g = Guardrails::default();
        let cases = [
            ("127.0.0.1", Some(Rule::Loopback)),
            ("127.8.9.10", Some(Rule::Loopback)),
            ("::1", Some(Rule::Loopback)),
            ("::ffff:127.0.0.1", Some(Rule::Loopback)),
            ("169.254.169.254", Some(Rule::LinkLocal)),
            ("fe80::1", Some(Rule::LinkLocal)),
            ("0.0.0.0", Some(Rule::Unspecified)),
            ("::", Some(Rule::Unspecified)),
            ("224.0.0.1", Some(Rule::Multicast)),
            ("ff02::1", Some(Rule::Multicast)),
            ("255.255.255.255", Some(Rule::Broadcast)),
            ("10.0.0.1", None),
            ("2001:db8::1", None),
        ];
        for (ip, want) in cases {
            assert_eq!(rule_of(check_ip(ip.parse().unwrap(), &g)), want, "{ip}");
        }
    }

    #[test]
    fn operator_options() {
        let g = Guardrails {
            denied_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
            allow_loopback: true,
            allowed_hostnames: Some(vec!["api.example.com".into(), "*.svc.example.org".into()]),
            ..Default::default()
        };
        assert_eq!(
            rule_of(check_ip("10.1.2.3".parse().unwrap(), &g)),
            Some(Rule::DeniedCidr)
        );
        assert_eq!(rule_of(check_ip("127.0.0.1".parse().unwrap(), &g)), None);
        assert_eq!(rule_of(check_hostname("api.example.com", &g)), None);
        assert_eq!(rule_of(check_hostname("a.svc.example.org", &g)), None);
        assert_eq!(
            rule_of(check_hostname("svc.example.org", &g)),
            Some(Rule::NotInAllowList)
        );
        assert_eq!(
            rule_of(check_hostname("evil.example.com", &g)),
            Some(Rule::NotInAllowList)
        );
        assert_eq!(rule_of(check_unix("/run/x.sock", &g)), Some(Rule::UnixSocketsDisabled));
    }

    #[test]
    fn hostname_rules() {
        let g = Guardrails::default();
        for &(h, want) in HOSTNAME_CASES {
            assert_eq!(rule_of(check_hostname(h, &g)), want, "{h}");
        }
    }

    // What a regex matches is judged by Envoy's RE2 itself, over `HOSTNAME_CASES`, in
    // `tests/it/envoy_validate.rs`; these pin the shape Envoy needs.
    #[test]
    fn authority_regexes_are_anchored_and_follow_the_options() {
        let g = Guardrails::default();
        let deny = authority_deny_regexes(&g);
        for re in &deny {
            let body = re.strip_prefix("(?i)").unwrap_or(re);
            assert!(body.starts_with('^') && body.ends_with('$'), "{re}");
        }
        assert!(deny.iter().any(|r| r.contains("localhost")));
        assert!(deny.iter().any(|r| r.contains(r"cluster\.local")));
        let loopback = Guardrails {
            allow_loopback: true,
            ..Default::default()
        };
        assert!(
            !authority_deny_regexes(&loopback)
                .iter()
                .any(|r| r.contains("localhost"))
        );
        assert_eq!(authority_deny_regexes(&loopback).len(), deny.len() - 1);
        assert_eq!(authority_allow_regexes(&g), None);

        let listed = Guardrails {
            allowed_hostnames: Some(vec!["API.example.com".into(), "*.svc.example.org".into()]),
            ..Default::default()
        };
        assert_eq!(
            authority_allow_regexes(&listed),
            Some(vec![
                r"(?i)^api\.example\.com\.?(?::.*)?$".to_string(),
                r"(?i)^[^:]+\.svc\.example\.org\.?(?::.*)?$".to_string(),
            ])
        );
        assert_eq!(re2_literal("a.b*c[d]"), r"a\.b\*c\[d\]");
    }
}
