//! Destination guardrails: which addresses and hostnames a namespace user may point a Backend at.
//!
//! A Backend lets whoever can write it make the shared proxy connect somewhere. Without limits that
//! reaches the proxy's own admin port on loopback, cloud metadata on 169.254.169.254, or any
//! in-cluster Service by its `.cluster.local` name, bypassing ReferenceGrant (see
//! `spec/envoy-gateway-backend-security-risks.md`). The built-in rules refuse those classes; operators
//! (never namespace users) can deny more CIDRs, name their cluster domains and NAT64 prefixes, restrict
//! hostnames to an allow-list, allow loopback for development, and opt in to unix sockets and
//! DynamicResolver. A refused destination never reaches any Envoy resource: the translator drops it and
//! the status names the rule.
//!
//! One policy per kind of input, applied wherever one enters pier: [`check_ip`] for every address
//! (Backend endpoints of every shape, EndpointSlices, answers of pier's own resolver) and
//! [`check_hostname`] for every name Envoy resolves. Rules are written against classes, not examples:
//! IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo, ISATAP) are judged by
//! the IPv4 rules as well (`address`), and names by their shape (`names`). Dynamic forward proxies,
//! whose destination is only known per request, get the same name rules as RE2 regexes that Envoy
//! runs (`authority`); `HOSTNAME_CASES` holds both to the same answers.
//!
//! Limit: for hostnames Envoy resolves itself (STRICT_DNS, the default), these rules check the *name*; a
//! public name that resolves to a private address is the DNS-rebinding gap the GEP accepts. With
//! `--resolve-hostnames pier` the answers come back here too ([`judge_answers`], from
//! `gateway::backends::resolved`), so the gap closes. Every DNS cluster
//! pier emits resolves names as absolute (no search domains), so a name that passes cannot be
//! completed into a cluster-internal one by a Pod's resolver.

mod address;
mod authority;
mod names;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use address::{check_ip, embedded_ipv4};
pub use authority::{authority_allow_regexes, authority_deny_regexes};
#[doc(hidden)]
pub use names::HOSTNAME_CASES;
pub use names::{check_external_hostname, check_hostname, cluster_local_suffixes, is_rfc1123_hostname};

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
    Reserved,
    CloudMetadata,
    DeniedCidr,
    ClusterLocal,
    InternalName,
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
            Rule::Reserved => "reserved-address",
            Rule::CloudMetadata => "cloud-metadata",
            Rule::DeniedCidr => "denied-cidr",
            Rule::ClusterLocal => "cluster-local-hostname",
            Rule::InternalName => "internal-hostname",
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
            Rule::Unspecified => {
                "addresses in 0.0.0.0/8 and :: are not destinations (0.0.0.0 reaches the proxy itself)"
            }
            Rule::Multicast => "multicast addresses are not unicast destinations",
            Rule::Broadcast => "the broadcast address is not a destination",
            Rule::Reserved => "240.0.0.0/4 is reserved and not a destination",
            Rule::CloudMetadata => "cloud metadata services hand out the node's credentials; no Backend may reach them",
            Rule::DeniedCidr => "the operator denied this range",
            Rule::ClusterLocal => {
                "cluster-internal names bypass ReferenceGrant (and a Pod's search domains complete short ones); reference the Service instead"
            }
            Rule::InternalName => {
                "names under special-use and private top-level domains (.internal, .local, .localdomain, .home.arpa, ...) only resolve inside a network"
            }
            Rule::SingleLabel => "single-label names resolve through search domains to cluster-internal services",
            Rule::IpLiteral => "an IP address is not a hostname (resolvers read a name ending in a number as one)",
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

/// Checks a unix socket path (Envoy Gateway `unix` endpoints).
pub fn check_unix(path: &str, g: &Guardrails) -> Result<(), Refusal> {
    if g.allow_unix_sockets {
        Ok(())
    } else {
        Err(refuse(Rule::UnixSocketsDisabled, path))
    }
}

/// A resolver's answer for one name, judged address by address with [`check_ip`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judged {
    pub allowed: Vec<IpAddr>,
    pub dropped: Vec<Refusal>,
}

/// Judges every address a DNS answer gave (pier's own resolver, `--resolve-hostnames pier`): the same
/// rules as any Backend address, operator CIDRs and embedded IPv4 included. The translator serves only
/// `allowed`; the resolver stage counts `dropped` by rule for its metrics, with this same function.
pub fn judge_answers(addresses: &[IpAddr], g: &Guardrails) -> Judged {
    let mut out = Judged::default();
    for ip in addresses {
        match check_ip(*ip, g) {
            Ok(()) => out.allowed.push(*ip),
            Err(refusal) => out.dropped.push(refusal),
        }
    }
    out
}

/// Parses an IP the way Envoy Gateway's schema allows (dotted quad or IPv6), for its `ip` endpoints.
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse::<Ipv4Addr>()
        .map(IpAddr::V4)
        .ok()
        .or_else(|| s.parse::<Ipv6Addr>().map(IpAddr::V6).ok())
}
