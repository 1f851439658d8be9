//! [`Lookup`] over `hickory-resolver`: the servers of `--dns-resolver` when given, else those of the
//! host's `/etc/resolv.conf` — never its search list, `ndots` or hosts file (see the module above).

use std::net::IpAddr;
use std::time::Duration;

use futures::future::BoxFuture;
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;

use super::{Lookup, Outcome};
use crate::ir::{DnsSettings, LookupFamily};

/// How long one server has to answer one query, and how many tries a lookup gets: a lookup ends
/// within a few seconds, so a dead server delays the names behind it only that long.
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
const ATTEMPTS: usize = 2;

pub struct Hickory {
    resolver: TokioResolver,
    /// How long an answer with no address may be used when the server gave no negative TTL.
    negative_ttl: Duration,
}

/// Why pier cannot build its DNS resolver.
#[derive(Debug, thiserror::Error)]
pub enum ResolverError {
    #[error("reading the host's DNS configuration (/etc/resolv.conf): {0}")]
    SystemConf(String),
    #[error("no DNS server configured (give --dns-resolver IP:PORT)")]
    NoServer,
    #[error("building the DNS resolver: {0}")]
    Build(String),
}

/// A resolver asking `dns.resolvers`, or the host's servers when there are none; `negative_ttl` as
/// above (the operator's `--dns-min-ttl`).
pub fn build(dns: &DnsSettings, negative_ttl: Duration) -> Result<Hickory, ResolverError> {
    let servers = if dns.resolvers.is_empty() {
        let (config, _) =
            hickory_resolver::system_conf::read_system_conf().map_err(|e| ResolverError::SystemConf(e.to_string()))?;
        let (_domain, _search, servers) = config.into_parts();
        servers
    } else {
        dns.resolvers
            .iter()
            .map(|addr| {
                let mut server = NameServerConfig::udp_and_tcp(addr.ip());
                for c in &mut server.connections {
                    c.port = addr.port();
                }
                server
            })
            .collect()
    };
    if servers.is_empty() {
        return Err(ResolverError::NoServer);
    }
    // No domain, no search list: a name is only ever asked as itself.
    let config = ResolverConfig::from_parts(None, Vec::new(), servers);
    let mut builder = TokioResolver::builder_with_config(config, TokioRuntimeProvider::default());
    let opts = builder.options_mut();
    opts.ndots = 0;
    opts.use_hosts_file = ResolveHosts::Never;
    opts.timeout = QUERY_TIMEOUT;
    opts.attempts = ATTEMPTS;
    // The stage schedules lookups by TTL itself; a cache here would answer them from memory.
    opts.cache_size = 0;
    opts.ip_strategy = strategy(dns.lookup_family);
    let resolver = builder.build().map_err(|e| ResolverError::Build(e.to_string()))?;
    Ok(Hickory { resolver, negative_ttl })
}

/// The families to ask for, as `--dns-lookup-family` says for Envoy.
fn strategy(family: LookupFamily) -> LookupIpStrategy {
    match family {
        LookupFamily::V4Only => LookupIpStrategy::Ipv4Only,
        LookupFamily::V6Only => LookupIpStrategy::Ipv6Only,
        LookupFamily::V4Preferred => LookupIpStrategy::Ipv4thenIpv6,
        LookupFamily::Auto => LookupIpStrategy::Ipv6thenIpv4,
        LookupFamily::All => LookupIpStrategy::Ipv4AndIpv6,
    }
}

impl Lookup for Hickory {
    fn lookup(&self, name: &str) -> BoxFuture<'_, Outcome> {
        // The trailing dot makes the name absolute.
        let fqdn = format!("{}.", name.trim_end_matches('.'));
        Box::pin(async move {
            match self.resolver.lookup_ip(fqdn.as_str()).await {
                Ok(found) => {
                    let mut addresses: Vec<IpAddr> = found.iter().collect();
                    addresses.sort();
                    addresses.dedup();
                    let ttl = found.valid_until().saturating_duration_since(std::time::Instant::now());
                    Outcome::Answer { addresses, ttl }
                }
                Err(e) => self.failure(e),
            }
        })
    }
}

impl Hickory {
    /// NXDOMAIN and NODATA are answers (the name has no address); anything else is a failed lookup.
    fn failure(&self, e: NetError) -> Outcome {
        if let NetError::Dns(DnsError::NoRecordsFound(none)) = &e
            && matches!(none.response_code, ResponseCode::NXDomain | ResponseCode::NoError)
        {
            let ttl = none
                .negative_ttl
                .map_or(self.negative_ttl, |s| Duration::from_secs(s.into()));
            return Outcome::Answer {
                addresses: Vec::new(),
                ttl,
            };
        }
        Outcome::Failed(e.to_string())
    }
}
