//! `--resolve-hostnames` and the bounds of pier's own resolver (`runtime::resolve`).

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::FlagError;
use crate::options::{HostnameResolution, ResolveMode};

/// Who resolves hostname Backends; shared by `pier serve` and `pier translate`.
#[derive(Debug, Clone, Args)]
pub struct ResolveArgs {
    /// Who resolves ExternalHostname / FQDN Backends. `envoy`: Envoy does (STRICT_DNS); pier checks the
    /// name only, so a name whose DNS answer is a denied address (DNS rebinding) reaches it. `pier`: pier
    /// resolves them, drops every answer the destination guardrails refuse, and serves the rest as EDS
    /// (TLS still verifies the hostname). See docs/security.md.
    #[arg(long, env = "PIER_RESOLVE_HOSTNAMES", value_enum, default_value_t = Mode::Envoy)]
    pub resolve_hostnames: Mode,
    /// With `--resolve-hostnames pier`: a name is looked up again no sooner than this after an answer,
    /// whatever its TTL (e.g. 5s, 500ms).
    #[arg(long, env = "PIER_DNS_MIN_TTL", value_name = "DURATION", default_value = "5s", value_parser = duration)]
    pub dns_min_ttl: Duration,
    /// ... and no later than this, whatever its TTL.
    #[arg(long, env = "PIER_DNS_MAX_TTL", value_name = "DURATION", default_value = "300s", value_parser = duration)]
    pub dns_max_ttl: Duration,
    /// ... and when lookups of a name fail, its last answer is served for this long after the first
    /// failure; then the name has no endpoints (and its Backend's status says so).
    #[arg(long, env = "PIER_DNS_STALE_FOR", value_name = "DURATION", default_value = "300s", value_parser = duration)]
    pub dns_stale_for: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Envoy,
    Pier,
}

impl ResolveArgs {
    pub fn resolution(&self) -> Result<HostnameResolution, FlagError> {
        if self.dns_min_ttl > self.dns_max_ttl {
            return Err(FlagError::TtlOrder {
                min: self.dns_min_ttl,
                max: self.dns_max_ttl,
            });
        }
        if self.dns_min_ttl.is_zero() {
            return Err(FlagError::ZeroMinTtl);
        }
        Ok(HostnameResolution {
            mode: match self.resolve_hostnames {
                Mode::Envoy => ResolveMode::Envoy,
                Mode::Pier => ResolveMode::Pier,
            },
            min_ttl: self.dns_min_ttl,
            max_ttl: self.dns_max_ttl,
            stale_for: self.dns_stale_for,
        })
    }
}

/// A duration as Gateway API writes them (`5s`, `500ms`, `1h30m`).
fn duration(s: &str) -> Result<Duration, String> {
    crate::gateway::duration::duration_ms(s).map(Duration::from_millis)
}
