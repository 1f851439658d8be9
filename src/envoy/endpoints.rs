//! EDS: one `ClusterLoadAssignment` per EDS cluster, named after it, plus the one-host load assignment
//! inline in DNS clusters. Endpoints are grouped into `LocalityLbEndpoints` by (priority, zone): Envoy
//! fails over between priorities and weighs localities, and it rejects the same locality twice at one
//! priority, so each (priority, zone) pair must be exactly one group.

use std::collections::BTreeMap;

use super::pb::{core, endpoint};
use super::socket_address;
use crate::ir;

/// The CLA of an EDS cluster. An empty endpoint list still yields a CLA: the cluster then exists with no
/// hosts and Envoy answers 503 "no healthy upstream", instead of waiting for endpoints that never come.
pub(super) fn load_assignment(cluster_name: &str, endpoints: &[ir::Endpoint]) -> endpoint::ClusterLoadAssignment {
    let mut groups: BTreeMap<(u32, Option<&str>), Vec<endpoint::LbEndpoint>> = BTreeMap::new();
    for ep in endpoints {
        groups
            .entry((ep.priority, ep.zone.as_deref()))
            .or_default()
            .push(lb_endpoint(address(&ep.address), ep.hostname.as_deref()));
    }
    endpoint::ClusterLoadAssignment {
        cluster_name: cluster_name.to_string(),
        endpoints: groups
            .into_iter()
            .map(|((priority, zone), lb_endpoints)| endpoint::LocalityLbEndpoints {
                locality: zone.map(|z| core::Locality {
                    zone: z.to_string(),
                    ..Default::default()
                }),
                lb_endpoints,
                priority,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The hosts of a DNS cluster, `hostname:port` each, which Envoy resolves itself; one group per priority
/// (fallback targets fail over like fallback endpoints).
pub(super) fn dns_load_assignment(cluster_name: &str, targets: &[ir::DnsTarget]) -> endpoint::ClusterLoadAssignment {
    let mut groups: BTreeMap<u32, Vec<endpoint::LbEndpoint>> = BTreeMap::new();
    for t in targets {
        groups
            .entry(t.priority)
            .or_default()
            .push(lb_endpoint(socket_address(&t.hostname, t.port), None));
    }
    endpoint::ClusterLoadAssignment {
        cluster_name: cluster_name.to_string(),
        endpoints: groups
            .into_iter()
            .map(|(priority, lb_endpoints)| endpoint::LocalityLbEndpoints {
                lb_endpoints,
                priority,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn lb_endpoint(address: core::Address, hostname: Option<&str>) -> endpoint::LbEndpoint {
    endpoint::LbEndpoint {
        host_identifier: Some(endpoint::lb_endpoint::HostIdentifier::Endpoint(endpoint::Endpoint {
            address: Some(address),
            hostname: hostname.unwrap_or_default().to_string(),
            ..Default::default()
        })),
        ..Default::default()
    }
}

fn address(a: &ir::EndpointAddress) -> core::Address {
    match a {
        ir::EndpointAddress::Ip(ip, port) => socket_address(&ip.to_string(), *port),
        ir::EndpointAddress::Unix(path) => core::Address {
            address: Some(core::address::Address::Pipe(core::Pipe {
                path: path.clone(),
                mode: 0,
            })),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(ip: &str, priority: u32, zone: Option<&str>) -> ir::Endpoint {
        ir::Endpoint {
            address: ir::EndpointAddress::Ip(ip.parse().unwrap(), 8080),
            priority,
            hostname: None,
            zone: zone.map(str::to_string),
        }
    }

    #[test]
    fn groups_by_priority_then_zone() {
        let cla = load_assignment(
            "c",
            &[
                ep("10.0.0.2", 1, None),
                ep("10.0.0.1", 0, Some("b")),
                ep("10.0.0.3", 0, Some("a")),
                ep("10.0.0.4", 0, Some("a")),
            ],
        );
        let shape: Vec<_> = cla
            .endpoints
            .iter()
            .map(|l| {
                (
                    l.priority,
                    l.locality.as_ref().map(|x| x.zone.clone()),
                    l.lb_endpoints.len(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![(0, Some("a".into()), 2), (0, Some("b".into()), 1), (1, None, 1)]
        );
    }

    #[test]
    fn no_endpoints_still_gives_a_load_assignment() {
        let cla = load_assignment("c", &[]);
        assert_eq!(cla.cluster_name, "c");
        assert!(cla.endpoints.is_empty());
    }
}
