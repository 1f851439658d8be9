//! Operator options for the translator. Only operators set these (flags / environment), never
//! namespace users: they widen or narrow what a Backend may reach.

use std::time::Duration;

use ipnet::{IpNet, Ipv6Net};

use crate::ir::{DnsSettings, LookupFamily};

/// The controllerName pier answers to by default.
pub const DEFAULT_CONTROLLER_NAME: &str = "pier.dev/gateway-controller";
/// Debian/Ubuntu location of the system CA bundle; Envoy reads it (pier never does).
pub const DEFAULT_SYSTEM_CA_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// GatewayClasses whose `spec.controllerName` equals this are pier's.
    pub controller_name: String,
    /// Address Envoy listeners bind to.
    pub listener_address: String,
    /// DNS defaults for STRICT_DNS and dynamic-forward-proxy clusters.
    pub dns: DnsSettings,
    /// File Envoy reads for `wellKnownCACertificates: System`.
    pub system_ca_path: String,
    /// Upstream connect timeout.
    pub connect_timeout_ms: u64,
    pub guardrails: Guardrails,
    /// Who resolves hostname Backends, and pier's resolver's bounds.
    pub resolution: HostnameResolution,
}

/// Who resolves the hostnames of ExternalHostname / FQDN Backends (`--resolve-hostnames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolveMode {
    /// Envoy does (STRICT_DNS clusters): pier checks the *name*, and Envoy connects to whatever DNS
    /// answers, so a public name answering with a denied address (DNS rebinding) reaches it.
    #[default]
    Envoy,
    /// pier does (`runtime::resolve`): every answer is judged by the address policy, denied ones are
    /// dropped, and the rest are served to Envoy as EDS endpoints.
    Pier,
}

/// `--resolve-hostnames` and the bounds of pier's resolver. The translator reads only `mode`; the
/// durations are the resolver stage's (a lookup's TTL is clamped to `min_ttl..=max_ttl` before the name
/// is looked up again; a failing name keeps its last answer for `stale_for`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostnameResolution {
    pub mode: ResolveMode,
    pub min_ttl: Duration,
    pub max_ttl: Duration,
    pub stale_for: Duration,
}

impl Default for HostnameResolution {
    fn default() -> Self {
        Self {
            mode: ResolveMode::Envoy,
            min_ttl: Duration::from_secs(5),
            max_ttl: Duration::from_secs(300),
            stale_for: Duration::from_secs(300),
        }
    }
}

/// Destination guardrails. Defaults refuse every address class a namespace user should never reach
/// through a shared proxy (see `gateway::policy`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Guardrails {
    /// Extra CIDRs refused on top of the built-in rules (e.g. the cluster's Pod and Service ranges).
    /// IPv4 CIDRs also catch the IPv4 addresses IPv6 forms carry (`gateway::policy::embedded_ipv4`).
    pub denied_cidrs: Vec<IpNet>,
    /// The operator's NAT64 prefixes (beyond `64:ff9b::/96` and `64:ff9b:1::/48`, always judged): the
    /// IPv4 address an address under one carries is judged by the IPv4 rules.
    pub nat64_prefixes: Vec<Ipv6Net>,
    /// Cluster domains whose names are refused, beyond `cluster.local` (always refused).
    pub cluster_domains: Vec<String>,
    /// Suffixes (`payments.svc.cluster.local`) under which the cluster-internal name rules are lifted:
    /// the operator lets Backends name those in-cluster Services (migrating Envoy Gateway users need
    /// it). Empty by default; only the operator sets it, never a namespace user. Lowercase, no dots at
    /// either end (`cli` normalises and validates it).
    pub cluster_local_suffixes: Vec<String>,
    /// When set, external hostnames must equal one of these or, for `*.example.com` entries, end with
    /// `.example.com`. `None` allows any hostname that passes the built-in rules.
    pub allowed_hostnames: Option<Vec<String>>,
    /// Allow loopback destinations (development and tests only).
    pub allow_loopback: bool,
    /// Allow Envoy Gateway `unix` endpoints.
    pub allow_unix_sockets: bool,
    /// Allow Envoy Gateway `DynamicResolver` Backends (an open forward proxy for whoever writes the route).
    pub enable_dynamic_resolver: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            controller_name: DEFAULT_CONTROLLER_NAME.to_string(),
            listener_address: "0.0.0.0".to_string(),
            dns: DnsSettings {
                refresh_rate_ms: 30_000,
                respect_ttl: true,
                lookup_family: LookupFamily::V4Preferred,
                resolvers: Vec::new(),
            },
            system_ca_path: DEFAULT_SYSTEM_CA_PATH.to_string(),
            connect_timeout_ms: 10_000,
            guardrails: Guardrails::default(),
            resolution: HostnameResolution::default(),
        }
    }
}
