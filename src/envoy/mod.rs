//! IR → Envoy protos. One builder file per xDS type, `features` for the HTTP features that span a
//! connection-manager filter and per-route config (CORS, the authority guard, the dynamic forward proxy),
//! resource names read from the IR (`ir::names`), `render` for
//! canonical proto3 JSON, `check` for referential integrity, `bootstrap` for validating a whole resource
//! set with `envoy --mode validate`. Builders decide *how* Envoy is configured; *what* is configured was
//! decided in `gateway/`. Nothing here reads the clock, the environment or files: the same IR always
//! gives the same protos.

pub mod ads_bootstrap;
pub mod bootstrap;
pub mod check;
mod clusters;
mod endpoints;
pub(crate) mod features;
pub mod fingerprint;
#[cfg(test)]
mod fixture;
pub mod grpc_bootstrap;
pub mod items;
mod listeners;
pub mod pb;
pub mod proxyless;
pub mod render;
pub(crate) mod routes;
mod secrets;
mod tls;

pub use check::{CheckError, check};

use std::collections::BTreeMap;

// `pb::tls` is spelled out: the `tls` module here is the transport-socket builder.
use pb::{cluster, core, endpoint, listener, protobuf, route};

use crate::ir;

/// Every Envoy resource one Gateway needs, each list sorted by resource name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    pub clusters: Vec<cluster::Cluster>,
    pub endpoints: Vec<endpoint::ClusterLoadAssignment>,
    pub listeners: Vec<listener::Listener>,
    pub routes: Vec<route::RouteConfiguration>,
    pub secrets: Vec<pb::tls::Secret>,
}

/// Translates one Gateway's IR into Envoy resources. Infallible: the IR is already valid by
/// construction; `check` verifies the result hangs together.
pub fn build(gw: &ir::GatewayIr) -> Resources {
    // The map key is the cluster name (the IR keeps it equal to `Cluster.name`); routes refer to it.
    let mut clusters: Vec<_> = gw.clusters.iter().map(|(name, c)| clusters::build(name, c)).collect();
    let mut endpoints: Vec<_> = gw
        .clusters
        .iter()
        .filter_map(|(name, c)| match &*c.discovery {
            ir::Discovery::Eds { endpoints } => Some(endpoints::load_assignment(name, endpoints)),
            _ => None,
        })
        .collect();
    let mut used: BTreeMap<String, features::Used> = BTreeMap::new();
    let mut routes: Vec<_> = gw
        .listeners
        .iter()
        .flat_map(|l| {
            let (port, https) = (l.port, matches!(l.kind, ir::ListenerKind::Https { .. }));
            let at = routes::Listening { port, https };
            match &l.kind {
                ir::ListenerKind::Http { route_config } => vec![(route_config, at)],
                ir::ListenerKind::Https { chains } => chains.iter().map(|c| (&c.route_config, at)).collect(),
            }
        })
        .map(|(rc, at)| {
            let (built, u) = routes::build(rc, &gw.clusters, at);
            used.insert(rc.name.clone(), u);
            built
        })
        .collect();
    let mut listeners: Vec<_> = gw.listeners.iter().map(|l| listeners::build(l, &used)).collect();
    let mut secrets: Vec<_> = gw.secrets.iter().map(|(name, s)| secrets::build(name, s)).collect();

    clusters.sort_by(|a, b| a.name.cmp(&b.name));
    endpoints.sort_by(|a, b| a.cluster_name.cmp(&b.cluster_name));
    listeners.sort_by(|a, b| a.name.cmp(&b.name));
    routes.sort_by(|a, b| a.name.cmp(&b.name));
    secrets.sort_by(|a, b| a.name.cmp(&b.name));
    Resources {
        clusters,
        endpoints,
        listeners,
        routes,
        secrets,
    }
}

/// Every dynamic reference (EDS, RDS, SDS) goes over the one ADS stream pier serves.
fn ads() -> core::ConfigSource {
    core::ConfigSource {
        config_source_specifier: Some(core::config_source::ConfigSourceSpecifier::Ads(
            core::AggregatedConfigSource {},
        )),
        resource_api_version: core::ApiVersion::V3 as i32,
        ..Default::default()
    }
}

/// An SDS reference to a secret pier serves over ADS.
fn sds(name: &str) -> pb::tls::SdsSecretConfig {
    pb::tls::SdsSecretConfig {
        name: name.to_string(),
        sds_config: Some(ads()),
    }
}

fn duration_ms(ms: u64) -> protobuf::Duration {
    protobuf::Duration {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        // < 1e9 by construction.
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

fn u32_value(value: u32) -> protobuf::UInt32Value {
    protobuf::UInt32Value { value }
}

/// A typed extension config, the shape of every pluggable Envoy component.
pub(crate) fn typed_extension<M: prost::Message + prost::Name>(name: &str, config: M) -> core::TypedExtensionConfig {
    core::TypedExtensionConfig {
        name: name.to_string(),
        typed_config: Some(envoy_types::util::pack_any(config)),
    }
}

/// `address:port` over TCP (IPv4, IPv6 or, for STRICT_DNS, a hostname).
fn socket_address(address: &str, port: u16) -> core::Address {
    core::Address {
        address: Some(core::address::Address::SocketAddress(core::SocketAddress {
            address: address.to_string(),
            port_specifier: Some(core::socket_address::PortSpecifier::PortValue(u32::from(port))),
            ..Default::default()
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_split_seconds_and_nanos() {
        assert_eq!(
            duration_ms(1500),
            protobuf::Duration {
                seconds: 1,
                nanos: 500_000_000
            }
        );
        assert_eq!(duration_ms(30_000), protobuf::Duration { seconds: 30, nanos: 0 });
    }
}
