//! The hostname rules, enforced by Envoy on a request's authority (`Host`, `:authority`).
//!
//! A DynamicResolver Backend (dynamic forward proxy) connects wherever the request's authority says, so
//! `check_hostname` cannot run at translation time. Envoy runs these RE2 regexes instead, as RBAC rules on
//! the routes that forward to such a Backend (see `envoy::routes`): an authority matching any deny regex,
//! or (with an allow-list) none of the allow regexes, is answered 403. KEEP IN SYNC with `names`: every
//! rule there has its regexes here, and `HOSTNAME_CASES` is run through both (`names` unit tests, a real
//! Envoy in `tests/it/authority_guard.rs`). Differences, all fail-closed: label and name lengths are not
//! checked (such names cannot be resolved anyway), under `allow_loopback` a bare `localhost` stays
//! denied as a single label and `localhost.*` names stay denied by the other name rules, and the
//! operator's `cluster_local_suffixes` are not exempted: names under them stay denied here (RE2 has no
//! look-ahead to exempt any of them, and a forward proxy to in-cluster Services is not what the option
//! is for).
//!
//! The host is everything before the first `:`; a port may follow. Envoy matches the whole value (RE2 full
//! match; the anchors say so to the reader). One small regex per rule and name: Envoy refuses a regex
//! whose RE2 program is larger than 100 instructions.

use super::names::{
    CLUSTER_INNER_LABELS, CLUSTER_LAST_LABELS, DEFAULT_CLUSTER_DOMAIN, INTERNAL_SUFFIXES, METADATA_NAMES,
};
use crate::options::Guardrails;

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
        // Rule::IpLiteral: the last label is a number, decimal or `0x` hex (`10.0.0.5`, `127.1`,
        // `0x7f.1`, `2130706433`, `127.0.0.1.`), any port.
        r"(?i)^(?:[^:]*\.)?(?:[0-9]+|0x[0-9a-f]*)\.?(?::.*)?$",
        // Rule::InvalidHostname: a character outside `[A-Za-z0-9.-]` in the host.
        r"^[^:]*[^0-9A-Za-z.:-].*$",
        // Rule::InvalidHostname: an empty label (leading dot, `..`) or a label starting with `-`.
        r"^(?:[^:]*\.)?[.-].*$",
        // Rule::InvalidHostname: a label ending with `-`.
        r"^[^:]*-(?:[.:].*)?$",
        // Rule::InvalidHostname, Rule::IpLiteral: after the first `:` anything but a port number
        // (also every bare IPv6 literal, `::1`, which has several colons).
        r"^[^:]*:(?:.*[^0-9].*)?$",
        // Rule::SingleLabel (and the empty host).
        r"^[^.:]*\.?(?::.*)?$",
    ]
    .map(String::from)
    .into();
    // `(?i)` from here on: `LOCALHOST` resolves like `localhost`.
    // Rule::CloudMetadata.
    out.extend(
        METADATA_NAMES
            .iter()
            .map(|n| format!(r"(?i)^{}{AUTHORITY_TAIL}", re2_literal(n))),
    );
    // Rule::Loopback.
    if !g.allow_loopback {
        out.push(format!(r"(?i)^(?:[^:]*\.)?localhost{AUTHORITY_TAIL}"));
        out.push(r"(?i)^localhost\..*$".to_string());
    }
    // Rule::ClusterLocal: under a cluster domain, ending in a search-completed label, or
    // `NAME.NAMESPACE.svc.…`-shaped.
    let domains = std::iter::once(DEFAULT_CLUSTER_DOMAIN.to_string()).chain(
        g.cluster_domains
            .iter()
            .map(|d| d.trim_matches('.').to_ascii_lowercase()),
    );
    out.extend(domains.map(|d| under(&d)));
    out.extend(CLUSTER_LAST_LABELS.iter().map(|l| under(l)));
    out.extend(
        CLUSTER_INNER_LABELS
            .iter()
            .map(|l| format!(r"(?i)^[^.:]+\.[^.:]+\.(?:[^.:]*\.)*{}\.[^.:].*$", re2_literal(l))),
    );
    // Rule::InternalName.
    out.extend(INTERNAL_SUFFIXES.iter().map(|s| under(s)));
    out
}

/// The authority's host is `domain` or a name under it.
fn under(domain: &str) -> String {
    format!(r"(?i)^(?:[^:]*\.)?{}{AUTHORITY_TAIL}", re2_literal(domain))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rust's `regex` agrees with RE2 on this syntax (no look-around, no backreferences), so the table
    /// is checked here too; the live Envoy test is the final word.
    #[test]
    fn deny_regexes_refuse_exactly_what_check_hostname_refuses() {
        let g = Guardrails::default();
        // Byte regexes without Unicode: the inputs are ASCII, and pier builds `regex` without Unicode
        // case tables.
        let deny: Vec<regex::bytes::Regex> = authority_deny_regexes(&g)
            .iter()
            .map(|r| regex::bytes::RegexBuilder::new(r).unicode(false).build().unwrap())
            .collect();
        for &(host, _) in super::super::HOSTNAME_CASES {
            let refused = super::super::check_hostname(host, &g).is_err();
            for authority in [host.to_string(), host.to_ascii_uppercase(), format!("{host}:8080")] {
                assert_eq!(
                    deny.iter().any(|r| r.is_match(authority.as_bytes())),
                    refused,
                    "{authority}"
                );
            }
        }
    }

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
        assert_eq!(authority_deny_regexes(&loopback).len(), deny.len() - 2);
        let domains = Guardrails {
            cluster_domains: vec!["Corp.Example.".into()],
            ..Default::default()
        };
        assert!(authority_deny_regexes(&domains).contains(&r"(?i)^(?:[^:]*\.)?corp\.example\.?(?::.*)?$".to_string()));
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
