//! The hostname policy: names Envoy resolves (ExternalHostname, FQDN endpoints) are judged by shape.
//!
//! The classes, in the order they are checked: names that are really addresses (an IP literal, or a
//! name ending in a number, which resolvers and URL parsers read as IPv4: `2130706433`, `127.1`,
//! `0x7f.1`); cloud metadata names; loopback names (`localhost`, `*.localhost`, `localhost.*`);
//! single labels; cluster-internal names (under `cluster.local` or an operator's cluster domain, ending
//! in a label a Pod's search list completes to a Service or Pod, or shaped `NAME.NAMESPACE.svc.…`);
//! names under special-use or private top-level domains. Envoy resolves every name pier emits as
//! absolute (no search domains), so the cluster-internal shapes are refused as defence in depth and
//! for resolvers pier does not configure.

use std::net::{IpAddr, Ipv6Addr};

use super::{Refusal, Rule, refuse};
use crate::options::Guardrails;

/// The cluster domain every Kubernetes distribution defaults to; always refused, operators add theirs.
pub(super) const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// Names of cloud metadata services (single labels such as `metadata` are refused as such).
pub(super) const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "instance-data.ec2.internal",
    "metadata.tencentyun.com",
    "metadata.platformequinix.com",
    "metadata.packet.net",
];

/// Last labels a Pod's search list (`NS.svc.DOMAIN svc.DOMAIN DOMAIN`) completes into a cluster name:
/// `NAME.svc`, `IP.NS.pod`, and `NAME.NAMESPACE` for the namespaces every cluster has.
pub(super) const CLUSTER_LAST_LABELS: &[&str] =
    &["svc", "pod", "default", "kube-system", "kube-public", "kube-node-lease"];

/// Labels that, after at least two others, give a name the shape of a Kubernetes Service or Pod name
/// under any cluster domain (`NAME.NAMESPACE.svc.DOMAIN`, `IP.NAMESPACE.pod.DOMAIN`).
pub(super) const CLUSTER_INNER_LABELS: &[&str] = &["svc", "pod"];

/// Special-use (RFC 6761, 6762, 8375), ICANN-reserved (`internal`, and `corp`, `home`, `mail` never
/// delegated for name collisions) and customary private top-level domains: names under them only
/// resolve inside some network.
pub(super) const INTERNAL_SUFFIXES: &[&str] = &[
    "internal",
    "local",
    "localdomain",
    "home.arpa",
    "corp",
    "home",
    "mail",
    "lan",
    "intranet",
];

/// Checks a hostname that Envoy will resolve (ExternalHostname, FQDN endpoints).
pub fn check_hostname(host: &str, g: &Guardrails) -> Result<(), Refusal> {
    check(host, g, true)
}

/// [`check_hostname`] for an XBackend's or GEP-4488 Backend's `externalHostname`, where upstream forbids
/// cluster-local names outright: `--allow-cluster-local-suffix` (for migrating Envoy Gateway fqdn
/// Backends) does not apply.
pub fn check_external_hostname(host: &str, g: &Guardrails) -> Result<(), Refusal> {
    check(host, g, false)
}

fn check(host: &str, g: &Guardrails, operator_suffixes: bool) -> Result<(), Refusal> {
    let h = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    match rule_for(&h, g, operator_suffixes) {
        Some(rule) => Err(refuse(rule, host)),
        None => allow_listed(host, &h, g),
    }
}

fn rule_for(h: &str, g: &Guardrails, operator_suffixes: bool) -> Option<Rule> {
    if h.contains('*') {
        return Some(Rule::Wildcard);
    }
    if h.parse::<IpAddr>().is_ok() || looks_like_ipv6(h) {
        return Some(Rule::IpLiteral);
    }
    if !is_rfc1123_hostname(h) {
        return Some(Rule::InvalidHostname);
    }
    let labels: Vec<&str> = h.split('.').collect();
    let last = labels[labels.len() - 1];
    if ends_in_a_number(last) {
        return Some(Rule::IpLiteral);
    }
    if METADATA_NAMES.contains(&h) {
        return Some(Rule::CloudMetadata);
    }
    if last == "localhost" || labels[0] == "localhost" {
        return (!g.allow_loopback).then_some(Rule::Loopback);
    }
    if labels.len() < 2 {
        return Some(Rule::SingleLabel);
    }
    if operator_suffixes && operator_allowed_cluster_local(h, g) {
        // The operator lifted the cluster-internal rules for this suffix; `cluster.local` is also under
        // the private `local` TLD, which is part of the same exemption. The allow-list still applies.
        return None;
    }
    if cluster_internal(h, &labels, g) {
        return Some(Rule::ClusterLocal);
    }
    INTERNAL_SUFFIXES
        .iter()
        .any(|s| under(h, s))
        .then_some(Rule::InternalName)
}

/// `h` is `domain` or a name under it.
fn under(h: &str, domain: &str) -> bool {
    h.strip_suffix(domain)
        .is_some_and(|rest| rest.is_empty() || rest.ends_with('.'))
}

fn cluster_internal(h: &str, labels: &[&str], g: &Guardrails) -> bool {
    let domains = std::iter::once(DEFAULT_CLUSTER_DOMAIN).chain(g.cluster_domains.iter().map(String::as_str));
    domains.map(normalized).any(|d| under(h, &d))
        || CLUSTER_LAST_LABELS.contains(&labels[labels.len() - 1])
        || labels[2..labels.len().saturating_sub(1).max(2)]
            .iter()
            .any(|l| CLUSTER_INNER_LABELS.contains(l))
}

/// `h` is under a suffix the operator allowed with `--allow-cluster-local-suffix`.
fn operator_allowed_cluster_local(h: &str, g: &Guardrails) -> bool {
    g.cluster_local_suffixes.iter().any(|s| under(h, s))
}

/// Normalises and checks `--allow-cluster-local-suffix` values: a hostname of at least two labels (no
/// wildcard: `*.x` and `.x` mean the same suffix, so the prefix is dropped). A bare top-level label
/// would lift the rule for whole trees of unrelated names.
pub fn cluster_local_suffixes(raw: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for r in raw {
        let s = r.trim().trim_start_matches("*.").trim_matches('.').to_ascii_lowercase();
        if !is_rfc1123_hostname(&s) || !s.contains('.') {
            return Err(format!(
                "--allow-cluster-local-suffix {r:?}: want a DNS suffix of at least two labels, such as payments.svc.cluster.local"
            ));
        }
        out.push(s);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn normalized(domain: &str) -> String {
    domain.trim_matches('.').to_ascii_lowercase()
}

/// WHATWG URL's "ends in a number": the last label is decimal digits or `0x` hex, so the name is
/// parsed as an IPv4 address (`127.1`, `0x7f.1`, `2130706433`).
fn ends_in_a_number(last: &str) -> bool {
    let hex = last
        .strip_prefix("0x")
        .map(|d| d.chars().all(|c| c.is_ascii_hexdigit()));
    hex.unwrap_or_else(|| !last.is_empty() && last.chars().all(|c| c.is_ascii_digit()))
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

/// Hostnames and the rule `check_hostname` refuses each by under default guardrails. The one table both
/// enforcement points are tested against: `check_hostname` here, the authority regexes in a real Envoy
/// (`tests/it/authority_guard.rs`), with each host also upper-cased and with a port.
#[doc(hidden)]
pub const HOSTNAME_CASES: &[(&str, Option<Rule>)] = &[
    ("api.example.com", None),
    ("API.Example.com.", None),
    ("a-b.example.com", None),
    ("api.svc.example.com", None),
    ("svc.example.com", None),
    ("pod.example.org", None),
    ("a.b.c.example.test", None),
    ("v1.api.example.com", None),
    ("x1.example.io", None),
    ("localhost", Some(Rule::Loopback)),
    ("LocalHost.", Some(Rule::Loopback)),
    ("foo.localhost", Some(Rule::Loopback)),
    ("localhost.localdomain", Some(Rule::Loopback)),
    ("localhost.example.com", Some(Rule::Loopback)),
    ("metadata.google.internal", Some(Rule::CloudMetadata)),
    ("metadata.google.internal.", Some(Rule::CloudMetadata)),
    ("METADATA.goog", Some(Rule::CloudMetadata)),
    ("instance-data.ec2.internal", Some(Rule::CloudMetadata)),
    ("metadata.tencentyun.com", Some(Rule::CloudMetadata)),
    ("metadata", Some(Rule::SingleLabel)),
    ("instance-data", Some(Rule::SingleLabel)),
    ("svc.ns.svc.cluster.local", Some(Rule::ClusterLocal)),
    ("kubernetes.default.svc.cluster.local.", Some(Rule::ClusterLocal)),
    ("cluster.local", Some(Rule::ClusterLocal)),
    ("kubernetes.default", Some(Rule::ClusterLocal)),
    ("kubernetes.default.svc", Some(Rule::ClusterLocal)),
    ("kube-dns.kube-system", Some(Rule::ClusterLocal)),
    ("kube-dns.kube-system.svc", Some(Rule::ClusterLocal)),
    ("api.team-a.svc", Some(Rule::ClusterLocal)),
    ("10-0-0-1.team-a.pod", Some(Rule::ClusterLocal)),
    ("api.team-a.svc.corp.example", Some(Rule::ClusterLocal)),
    ("web-0.web.team-a.svc.k8s.example.com", Some(Rule::ClusterLocal)),
    ("10-0-0-1.team-a.pod.k8s.example.com", Some(Rule::ClusterLocal)),
    ("kube-public.kube-public", Some(Rule::ClusterLocal)),
    ("foo.internal", Some(Rule::InternalName)),
    ("db.prod.internal.", Some(Rule::InternalName)),
    ("printer.local", Some(Rule::InternalName)),
    ("host.localdomain", Some(Rule::InternalName)),
    ("router.home.arpa", Some(Rule::InternalName)),
    ("dc1.corp", Some(Rule::InternalName)),
    ("nas.lan", Some(Rule::InternalName)),
    ("backend", Some(Rule::SingleLabel)),
    ("kubernetes.", Some(Rule::SingleLabel)),
    ("2130706433", Some(Rule::IpLiteral)),
    ("10.0.0.1", Some(Rule::IpLiteral)),
    ("169.254.169.254", Some(Rule::IpLiteral)),
    ("127.0.0.1.", Some(Rule::IpLiteral)),
    ("127.1", Some(Rule::IpLiteral)),
    ("0x7f.1", Some(Rule::IpLiteral)),
    ("0x7f000001", Some(Rule::IpLiteral)),
    ("a.0xA9FEA9FE", Some(Rule::IpLiteral)),
    ("foo.123", Some(Rule::IpLiteral)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rule_of(h: &str, g: &Guardrails) -> Option<Rule> {
        check_hostname(h, g).err().map(|e| e.rule)
    }

    #[test]
    fn hostname_rules() {
        let g = Guardrails::default();
        for &(h, want) in HOSTNAME_CASES {
            assert_eq!(rule_of(h, &g), want, "{h}");
        }
    }

    #[test]
    fn operator_cluster_domains() {
        let g = Guardrails {
            cluster_domains: vec!["Corp.Example.".into(), "k8s.internal.example.com".into()],
            ..Default::default()
        };
        for h in [
            "api.team.svc.corp.example",
            "corp.example",
            "x.corp.example",
            "a.k8s.internal.example.com",
        ] {
            assert_eq!(rule_of(h, &g), Some(Rule::ClusterLocal), "{h}");
        }
        assert_eq!(rule_of("x.corp.example", &Guardrails::default()), None);
        assert_eq!(rule_of("notcorp.example", &g), None);
        assert_eq!(rule_of("api.svc.cluster.local", &g), Some(Rule::ClusterLocal));
    }

    #[test]
    fn operator_options() {
        let g = Guardrails {
            allow_loopback: true,
            allowed_hostnames: Some(vec![
                "api.example.com".into(),
                "*.svc.example.org".into(),
                "localhost".into(),
            ]),
            ..Default::default()
        };
        assert_eq!(rule_of("api.example.com", &g), None);
        assert_eq!(rule_of("a.svc.example.org", &g), None);
        assert_eq!(rule_of("svc.example.org", &g), Some(Rule::NotInAllowList));
        assert_eq!(rule_of("evil.example.com", &g), Some(Rule::NotInAllowList));
        assert_eq!(rule_of("localhost", &g), None);
        // Loopback being allowed lifts the loopback rule only.
        assert_eq!(rule_of("metadata.google.internal", &g), Some(Rule::CloudMetadata));
        assert_eq!(rule_of("a.b.svc.example.org", &g), Some(Rule::ClusterLocal));
    }

    #[test]
    fn cluster_local_suffixes_lift_the_rule_under_them_only() {
        let g = Guardrails {
            cluster_local_suffixes: cluster_local_suffixes(&["*.Payments.svc.cluster.local.".into()]).unwrap(),
            ..Default::default()
        };
        assert_eq!(g.cluster_local_suffixes, ["payments.svc.cluster.local"]);
        assert_eq!(rule_of("ledger.payments.svc.cluster.local", &g), None);
        assert_eq!(rule_of("api.billing.svc.cluster.local", &g), Some(Rule::ClusterLocal));
        assert_eq!(rule_of("ledger.payments.svc", &g), Some(Rule::ClusterLocal));
        // The other rules still apply under the suffix.
        assert_eq!(rule_of("10.payments.svc.cluster.local.1", &g), Some(Rule::IpLiteral));
        assert_eq!(rule_of("*.payments.svc.cluster.local", &g), Some(Rule::Wildcard));
        assert_eq!(
            rule_of("api.payments.svc.cluster.local", &Guardrails::default()),
            Some(Rule::ClusterLocal)
        );
        for bad in ["local", "", "*.", "a..b", "-x.y"] {
            assert!(cluster_local_suffixes(&[bad.into()]).is_err(), "{bad:?}");
        }
    }
}
