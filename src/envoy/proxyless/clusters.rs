//! A proxyless client's clusters and load assignments: EDS, LOGICAL_DNS or aggregate clusters with
//! round robin, and load assignments whose every locality has a priority and a weight — or a refusal
//! that says why a cluster cannot be offered at all.
//!
//! gRPC validates more strictly than Envoy (gRFCs A27, A29, A37): STRICT_DNS, a transport socket it
//! cannot honour or a sparse priority list NACK the whole response, and a field it silently ignores
//! (connection-level circuit breakers, consecutive-5xx ejection) would promise what it does not do. So a
//! cluster is built from the fields gRPC honours only, and anything else refuses the cluster: it is not
//! served, and the routes that name it fail their calls with UNAVAILABLE (a name a SotW CDS response
//! lacks does not exist for gRPC) rather than reach the backend some other way.

use std::collections::BTreeMap;

use super::super::pb::{aggregate_cluster, cluster, core, endpoint, ext};
use super::super::{ads, socket_address, u32_value};
use crate::ir;

/// The cluster a proxyless client gets for `c`, or why it gets none.
pub fn cluster(name: &str, c: &ir::Cluster) -> Result<cluster::Cluster, String> {
    if let Some(why) = refusal(c) {
        return Err(why);
    }
    use cluster::cluster::{ClusterDiscoveryType, DiscoveryType, LbPolicy};
    let mut out = cluster::Cluster {
        name: name.to_string(),
        lb_policy: LbPolicy::RoundRobin as i32,
        circuit_breakers: c.circuit_breaker.as_ref().map(|cb| cluster::CircuitBreakers {
            thresholds: vec![cluster::circuit_breakers::Thresholds {
                max_requests: cb.max_requests.map(u32_value),
                ..Default::default()
            }],
            ..Default::default()
        }),
        transport_socket: c.tls.as_deref().and_then(super::tls::transport_socket),
        ..Default::default()
    };
    match &*c.discovery {
        ir::Discovery::Eds { .. } => {
            out.cluster_discovery_type = Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32));
            out.eds_cluster_config = Some(cluster::cluster::EdsClusterConfig {
                eds_config: Some(ads()),
                service_name: name.to_string(),
            });
        }
        ir::Discovery::Dns { targets, .. } => {
            let t = &targets[0];
            out.cluster_discovery_type = Some(ClusterDiscoveryType::Type(DiscoveryType::LogicalDns as i32));
            out.load_assignment = Some(endpoint::ClusterLoadAssignment {
                cluster_name: name.to_string(),
                endpoints: vec![locality(
                    0,
                    None,
                    vec![lb_endpoint(socket_address(&t.hostname, t.port))],
                )],
                ..Default::default()
            });
        }
        ir::Discovery::Aggregate { clusters } => {
            let config = aggregate_cluster::ClusterConfig {
                clusters: clusters.clone(),
            };
            out.cluster_discovery_type = Some(ClusterDiscoveryType::ClusterType(cluster::cluster::CustomClusterType {
                name: ext::AGGREGATE_CLUSTER.to_string(),
                typed_config: Some(envoy_types::util::pack_any(config)),
            }));
            out.lb_policy = LbPolicy::ClusterProvided as i32;
            out.circuit_breakers = None;
        }
        ir::Discovery::DynamicForwardProxy { .. } => unreachable!("refused above"),
    }
    Ok(out)
}

/// What a client that cannot verify cluster `name`'s backend (its bootstrap lacks the certificate
/// provider, `super::tls`) is given under that name: an EDS cluster whose load assignment is
/// [`unavailable`]'s, so its calls fail at once instead of reaching the backend unverified.
pub fn fallback(name: &str) -> cluster::Cluster {
    let (mut c, _) = unavailable();
    c.name = name.to_string();
    c
}

/// The cluster every call gRPC must fail goes to (`super::UNAVAILABLE`): EDS, and its load assignment
/// has no endpoint.
pub fn unavailable() -> (cluster::Cluster, endpoint::ClusterLoadAssignment) {
    use cluster::cluster::{ClusterDiscoveryType, DiscoveryType, LbPolicy};
    let name = super::UNAVAILABLE.to_string();
    let c = cluster::Cluster {
        name: name.clone(),
        lb_policy: LbPolicy::RoundRobin as i32,
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        eds_cluster_config: Some(cluster::cluster::EdsClusterConfig {
            eds_config: Some(ads()),
            service_name: name.clone(),
        }),
        ..Default::default()
    };
    let cla = endpoint::ClusterLoadAssignment {
        cluster_name: name,
        ..Default::default()
    };
    (c, cla)
}

/// Why a proxyless client cannot be given `c`, if it cannot.
pub fn refusal(c: &ir::Cluster) -> Option<String> {
    if let Some(why) = c.tls.as_deref().and_then(super::tls::refusal) {
        return Some(why.to_string());
    }
    match &*c.discovery {
        ir::Discovery::DynamicForwardProxy { .. } => {
            return Some("a dynamic resolver: gRPC clients have no dynamic forward proxy".to_string());
        }
        ir::Discovery::Dns { targets, .. } if targets.len() != 1 => {
            return Some(format!(
                "{} hostnames: a gRPC client's LOGICAL_DNS cluster resolves exactly one",
                targets.len()
            ));
        }
        _ => {}
    }
    if let Some(cb) = &c.circuit_breaker
        && (cb.max_connections.is_some() || cb.max_pending_requests.is_some() || cb.max_retries.is_some())
    {
        return Some(
            "connection-pool limits other than maxRequests: gRPC clients enforce max_requests only (gRFC A32)"
                .to_string(),
        );
    }
    if c.outlier_detection.is_some() {
        return Some(
            "outlier detection by consecutive 5xx: gRPC clients eject by success rate and failure percentage \
             only (gRFC A50)"
                .to_string(),
        );
    }
    None
}

/// The load assignment of an EDS cluster for gRPC: localities by (priority, zone), priorities renumbered
/// densely from 0 (gRPC rejects a gap), each locality weighted by its number of endpoints (gRPC skips
/// a locality without a weight; by count, every endpoint gets an equal share, as in Envoy). Endpoints on
/// Unix sockets are left out: gRPC accepts IP socket addresses only.
pub fn load_assignment(name: &str, endpoints: &[ir::Endpoint]) -> endpoint::ClusterLoadAssignment {
    let mut groups: BTreeMap<(u32, Option<&str>), Vec<endpoint::LbEndpoint>> = BTreeMap::new();
    for ep in endpoints {
        if let ir::EndpointAddress::Ip(ip, port) = &ep.address {
            groups
                .entry((ep.priority, ep.zone.as_deref()))
                .or_default()
                .push(lb_endpoint(socket_address(&ip.to_string(), *port)));
        }
    }
    let priorities: BTreeMap<u32, u32> = groups
        .keys()
        .map(|(p, _)| *p)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .zip(0..)
        .collect();
    endpoint::ClusterLoadAssignment {
        cluster_name: name.to_string(),
        endpoints: groups
            .into_iter()
            .map(|((priority, zone), eps)| locality(priorities[&priority], zone, eps))
            .collect(),
        ..Default::default()
    }
}

fn locality(
    priority: u32,
    zone: Option<&str>,
    lb_endpoints: Vec<endpoint::LbEndpoint>,
) -> endpoint::LocalityLbEndpoints {
    endpoint::LocalityLbEndpoints {
        locality: Some(core::Locality {
            zone: zone.unwrap_or_default().to_string(),
            ..Default::default()
        }),
        load_balancing_weight: Some(u32_value(u32::try_from(lb_endpoints.len()).unwrap_or(u32::MAX))),
        lb_endpoints,
        priority,
        ..Default::default()
    }
}

fn lb_endpoint(address: core::Address) -> endpoint::LbEndpoint {
    endpoint::LbEndpoint {
        host_identifier: Some(endpoint::lb_endpoint::HostIdentifier::Endpoint(endpoint::Endpoint {
            address: Some(address),
            ..Default::default()
        })),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::build::{self as b, ep, ip};

    fn eds() -> ir::Cluster {
        let discovery = ir::Discovery::Eds { endpoints: vec![] };
        b::cluster("c", discovery, ir::UpstreamProtocol::H2c, None)
    }

    #[test]
    fn localities_are_weighted_and_priorities_dense() {
        let cla = load_assignment(
            "c",
            &[
                ep(ip("10.0.0.1", 50051), 1, Some("a"), None),
                ep(ip("10.0.0.2", 50051), 1, Some("a"), None),
                ep(ip("10.0.0.3", 50051), 1, Some("b"), None),
                ep(ir::EndpointAddress::Unix("/s".into()), 0, None, None),
            ],
        );
        let shape: Vec<_> = cla
            .endpoints
            .iter()
            .map(|l| (l.priority, l.load_balancing_weight.unwrap().value, l.lb_endpoints.len()))
            .collect();
        assert_eq!(
            shape,
            [(0, 2, 2), (0, 1, 1)],
            "the Unix endpoint is left out, priority 1 becomes 0"
        );
    }

    #[test]
    fn what_grpc_cannot_honour_is_refused_not_sent() {
        assert!(cluster("c", &eds()).is_ok());
        let mut tls = eds();
        tls.tls = Some(std::sync::Arc::new(b::verified_tls("ca/configmap/ns/ca", "c.example")));
        let verified = cluster("c", &tls).unwrap();
        assert_eq!(verified.transport_socket.unwrap().name, ext::TLS_TRANSPORT_SOCKET);
        std::sync::Arc::make_mut(tls.tls.as_mut().unwrap()).client_certificate = Some("cert/ns/client".into());
        assert!(cluster("c", &tls).unwrap_err().contains("private key"));
        tls.tls = Some(std::sync::Arc::new(b::verified_tls("ca/configmap/ns/ca", "c.example")));
        std::sync::Arc::make_mut(tls.tls.as_mut().unwrap()).trust = ir::Trust::InsecureSkipVerify;
        assert!(cluster("c", &tls).unwrap_err().contains("A29"));
        let mut pool = eds();
        pool.circuit_breaker = Some(ir::CircuitBreaker {
            max_requests: Some(5),
            ..Default::default()
        });
        let built = cluster("c", &pool).unwrap();
        assert_eq!(
            built.circuit_breakers.unwrap().thresholds[0]
                .max_requests
                .unwrap()
                .value,
            5
        );
        pool.circuit_breaker.as_mut().unwrap().max_connections = Some(1);
        assert!(cluster("c", &pool).unwrap_err().contains("A32"));
        let mut dns = eds();
        dns.discovery = std::sync::Arc::new(ir::Discovery::Dns {
            targets: vec![b::dns_target("a.example", 443, 0), b::dns_target("b.example", 443, 0)],
            dns: b::dns(1000, ir::LookupFamily::Auto),
        });
        assert!(cluster("c", &dns).unwrap_err().contains("exactly one"));
        dns.discovery = std::sync::Arc::new(b::one_host("a.example"));
        let logical = cluster("c", &dns).unwrap();
        assert_eq!(
            logical.cluster_discovery_type,
            Some(cluster::cluster::ClusterDiscoveryType::Type(
                cluster::cluster::DiscoveryType::LogicalDns as i32
            ))
        );
    }
}
