//! The dynamic forward proxy (Envoy Gateway `DynamicResolver`): a cluster that connects wherever the
//! request's authority says (built in `clusters`), and the `envoy.filters.http.dynamic_forward_proxy`
//! filter that resolves the authority into the DNS cache the cluster reads. Both must carry exactly the
//! same cache config — Envoy keys caches by name and rejects one name with two configs — so both take
//! it from [`dns_cache_config`]. The filter runs only where a route reaches a DFP cluster.

use super::super::duration_ms;
use super::super::items::ClusterLookup;
use super::super::pb::{cluster, dfp_common, dfp_filter, ext, hcm};
use crate::ir;
use crate::ir::names;

pub(in crate::envoy) fn http_filter(cache: dfp_common::DnsCacheConfig) -> hcm::HttpFilter {
    let config = dfp_filter::FilterConfig {
        implementation_specifier: Some(dfp_filter::filter_config::ImplementationSpecifier::DnsCacheConfig(
            cache,
        )),
        ..Default::default()
    };
    super::http_filter(ext::DFP_FILTER, config)
}

/// The DNS cache of the first DFP cluster among `reached` (the clusters a route action names, in order).
pub(in crate::envoy) fn reached<'a>(
    reached: impl IntoIterator<Item = &'a str>,
    clusters: &dyn ClusterLookup,
) -> Option<Box<dfp_common::DnsCacheConfig>> {
    reached
        .into_iter()
        .find_map(|name| match &*clusters.cluster(name)?.discovery {
            ir::Discovery::DynamicForwardProxy { dns, .. } => Some(Box::new(dns_cache_config(dns))),
            _ => None,
        })
}

/// The DNS cache shared by a dynamic-forward-proxy cluster and the HTTP filter that fills it: both must
/// carry exactly this config (Envoy keys caches by name and rejects one name with two configs).
pub(in crate::envoy) fn dns_cache_config(dns: &ir::DnsSettings) -> dfp_common::DnsCacheConfig {
    dfp_common::DnsCacheConfig {
        name: names::dns_cache(lookup_family_label(dns.lookup_family), dns.refresh_rate_ms),
        dns_lookup_family: cluster_lookup_family(dns.lookup_family) as i32,
        dns_refresh_rate: Some(duration_ms(dns.refresh_rate_ms)),
        typed_dns_resolver_config: Some(crate::envoy::clusters::dns_resolver(dns)),
        ..Default::default()
    }
}

fn lookup_family_label(family: ir::LookupFamily) -> &'static str {
    match family {
        ir::LookupFamily::Auto => "auto",
        ir::LookupFamily::V4Only => "v4-only",
        ir::LookupFamily::V6Only => "v6-only",
        ir::LookupFamily::V4Preferred => "v4-preferred",
        ir::LookupFamily::All => "all",
    }
}

fn cluster_lookup_family(family: ir::LookupFamily) -> cluster::cluster::DnsLookupFamily {
    use cluster::cluster::DnsLookupFamily as F;
    match family {
        ir::LookupFamily::Auto => F::Auto,
        ir::LookupFamily::V4Only => F::V4Only,
        ir::LookupFamily::V6Only => F::V6Only,
        ir::LookupFamily::V4Preferred => F::V4Preferred,
        ir::LookupFamily::All => F::All,
    }
}
