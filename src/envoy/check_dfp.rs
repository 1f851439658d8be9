//! The dynamic-forward-proxy part of `check`. A DFP cluster connects wherever the request's authority
//! says, so where routes reach one: the connection manager runs the DFP filter with the cluster's DNS
//! cache (or requests fail), the RBAC filter runs before it, and every such route carries the per-route
//! authority guard (or any client can make Envoy connect to loopback, cloud metadata or in-cluster
//! names). Neither filter sits where no route needs it.

use std::collections::{BTreeMap, BTreeSet};

use super::super::pb::{cluster, dfp_cluster, dfp_filter, ext, hcm, rbac, rbac_filter, route};
use super::super::{Resources, routes};
use super::{CheckError, unpack};

/// The DFP clusters of one resource set.
pub(super) struct DfpClusters<'a> {
    /// DNS cache each DFP cluster reads (empty when it names none).
    caches: BTreeMap<&'a str, String>,
    /// DFP clusters and the aggregate clusters with a DFP member: a route to any of them needs the guard.
    reach: BTreeSet<&'a str>,
}

impl<'a> DfpClusters<'a> {
    pub(super) fn of(res: &'a Resources) -> Self {
        let caches: BTreeMap<&str, String> = res.clusters.iter().filter_map(dfp_cache).collect();
        let mut reach: BTreeSet<&str> = caches.keys().copied().collect();
        for c in &res.clusters {
            let Some(custom) = custom_type(c).filter(|t| t.name == ext::AGGREGATE_CLUSTER) else {
                continue;
            };
            let members = custom
                .typed_config
                .as_ref()
                .and_then(unpack::<super::super::pb::aggregate_cluster::ClusterConfig>)
                .map(|cfg| cfg.clusters)
                .unwrap_or_default();
            if members.iter().any(|m| caches.contains_key(m.as_str())) {
                reach.insert(&c.name);
            }
        }
        Self { caches, reach }
    }
}

fn custom_type(c: &cluster::Cluster) -> Option<&cluster::cluster::CustomClusterType> {
    match &c.cluster_discovery_type {
        Some(cluster::cluster::ClusterDiscoveryType::ClusterType(t)) => Some(t),
        _ => None,
    }
}

fn dfp_cache(c: &cluster::Cluster) -> Option<(&str, String)> {
    let custom = custom_type(c).filter(|t| t.name == ext::DFP_CLUSTER)?;
    let config = custom
        .typed_config
        .as_ref()
        .and_then(unpack::<dfp_cluster::ClusterConfig>);
    let cache = match config.and_then(|c| c.cluster_implementation_specifier) {
        Some(dfp_cluster::cluster_config::ClusterImplementationSpecifier::DnsCacheConfig(cache)) => cache.name,
        _ => String::new(),
    };
    Some((c.name.as_str(), cache))
}

/// The HTTP filters of one connection manager against the DFP clusters its routes reach.
pub(super) fn check_http_filters(
    owner: String,
    manager: &hcm::HttpConnectionManager,
    rc: &route::RouteConfiguration,
    dfp: &DfpClusters<'_>,
    errors: &mut Vec<CheckError>,
) {
    let reached: Vec<&str> = routes::referenced_clusters(rc).into_iter().map(|r| r.cluster).collect();
    let position = |name: &str| manager.http_filters.iter().position(|f| f.name == name);
    let (rbac, dfp_filter) = (position(ext::RBAC_FILTER), position(ext::DFP_FILTER));
    let guarding = match (rbac, dfp_filter) {
        (Some(r), Some(d)) => r < d,
        (r, _) => r.is_some(),
    };
    match (reached.iter().find(|c| dfp.reach.contains(*c)), rbac) {
        (Some(cluster), _) if !guarding => errors.push(CheckError::MissingRbacFilter {
            owner: owner.clone(),
            cluster: cluster.to_string(),
        }),
        (None, Some(_)) => errors.push(CheckError::UnneededRbacFilter { owner: owner.clone() }),
        _ => {}
    }

    let needed: BTreeSet<&str> = reached.into_iter().filter(|c| dfp.caches.contains_key(c)).collect();
    match (dfp_filter.map(|i| &manager.http_filters[i]), needed.first()) {
        (None, Some(cluster)) => errors.push(CheckError::MissingDfpFilter {
            owner,
            cluster: cluster.to_string(),
        }),
        (Some(_), None) => errors.push(CheckError::UnneededDfpFilter { owner }),
        (Some(f), Some(_)) => {
            let filter_cache = dfp_filter_cache(f);
            for cluster in needed {
                let cluster_cache = &dfp.caches[cluster];
                if *cluster_cache != filter_cache {
                    errors.push(CheckError::DnsCacheMismatch {
                        owner: owner.clone(),
                        filter: filter_cache.clone(),
                        cluster: cluster.to_string(),
                        cluster_cache: cluster_cache.clone(),
                    });
                }
            }
        }
        (None, None) => {}
    }
}

/// Every route reaching a DFP cluster (directly or through an aggregate) carries a per-route RBAC config
/// that denies something: the authority guard.
pub(super) fn check_guarded_routes(
    rc: &route::RouteConfiguration,
    dfp: &DfpClusters<'_>,
    errors: &mut Vec<CheckError>,
) {
    for (vh, r) in routes::all_routes(rc) {
        let Some(action) = &r.action else { continue };
        let Some(cluster) = routes::action_clusters(action)
            .into_iter()
            .find(|c| dfp.reach.contains(c))
        else {
            continue;
        };
        if !has_deny_rules(r) {
            errors.push(CheckError::UnguardedDfpRoute {
                route_config: rc.name.clone(),
                vhost: vh.name.clone(),
                route: r.name.clone(),
                cluster: cluster.to_string(),
            });
        }
    }
}

fn has_deny_rules(r: &route::Route) -> bool {
    let per_route = r
        .typed_per_filter_config
        .get(ext::RBAC_FILTER)
        .and_then(unpack::<rbac_filter::RbacPerRoute>);
    let rules = per_route.and_then(|p| p.rbac).and_then(|f| f.rules);
    rules.is_some_and(|rules| rules.action == rbac::rbac::Action::Deny as i32 && !rules.policies.is_empty())
}

fn dfp_filter_cache(f: &hcm::HttpFilter) -> String {
    let Some(hcm::http_filter::ConfigType::TypedConfig(any)) = &f.config_type else {
        return String::new();
    };
    match unpack::<dfp_filter::FilterConfig>(any).and_then(|c| c.implementation_specifier) {
        Some(dfp_filter::filter_config::ImplementationSpecifier::DnsCacheConfig(cache)) => cache.name,
        _ => String::new(),
    }
}
