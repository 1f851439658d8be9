//! LDS: one `Listener` per bound port. Plain HTTP is one filter chain; HTTPS is one filter chain per
//! Gateway listener, selected by SNI (the TLS inspector reads it), each terminating TLS with its own
//! certificates. Every chain runs an HttpConnectionManager that fetches its routes by RDS over ADS.

use std::collections::BTreeMap;

use super::features::{self, Used};
use super::pb::{ext, hcm, listener, tls_inspector};
use super::{ads, socket_address, tls};
use crate::ir;
use crate::ir::names;

/// `used`: what the routes of each route configuration (by name) use, which decides the HTTP filters of
/// the connection manager serving it.
pub(super) fn build(l: &ir::Listener, used: &BTreeMap<String, Used>) -> listener::Listener {
    let stat_prefix = stat_prefix(&l.name);
    let (filter_chains, listener_filters) = match &l.kind {
        ir::ListenerKind::Http { route_config } => {
            let hcm = http_connection_manager(&stat_prefix, &route_config.name, used);
            (
                vec![listener::FilterChain {
                    filters: vec![hcm],
                    ..Default::default()
                }],
                vec![],
            )
        }
        ir::ListenerKind::Https { chains } => {
            let chains = chains
                .iter()
                .map(|c| listener::FilterChain {
                    name: names::filter_chain(&c.listener_name),
                    // Empty server names match any SNI (and none): the default chain.
                    filter_chain_match: Some(listener::FilterChainMatch {
                        server_names: c.server_names.clone(),
                        ..Default::default()
                    }),
                    filters: vec![http_connection_manager(&stat_prefix, &c.route_config.name, used)],
                    transport_socket: Some(tls::downstream(&c.certificates, c.client_validation.as_ref())),
                    ..Default::default()
                })
                .collect();
            // Filter chains match on SNI only once the TLS inspector has read the ClientHello.
            let inspector = listener::ListenerFilter {
                name: ext::TLS_INSPECTOR.to_string(),
                config_type: Some(listener::listener_filter::ConfigType::TypedConfig(
                    envoy_types::util::pack_any(tls_inspector::TlsInspector::default()),
                )),
                ..Default::default()
            };
            (chains, vec![inspector])
        }
    };
    listener::Listener {
        name: l.name.clone(),
        address: Some(socket_address(&l.address, l.port)),
        filter_chains,
        listener_filters,
        ..Default::default()
    }
}

fn http_connection_manager(
    stat_prefix: &str,
    route_config_name: &str,
    used: &BTreeMap<String, Used>,
) -> listener::Filter {
    let http_filters = features::http_filters(used.get(route_config_name).unwrap_or(&Used::default()));
    let manager = hcm::HttpConnectionManager {
        stat_prefix: stat_prefix.to_string(),
        route_specifier: Some(hcm::http_connection_manager::RouteSpecifier::Rds(hcm::Rds {
            config_source: Some(ads()),
            route_config_name: route_config_name.to_string(),
        })),
        http_filters,
        // Gateway API hostnames never carry a port, but a Host header may (`example.com:8080`);
        // without this a request to a non-default port would match no virtual host.
        strip_port_mode: Some(hcm::http_connection_manager::StripPortMode::StripAnyHostPort(true)),
        // WebSocket upgrades pass through to upstreams that accept them (Service appProtocol
        // `kubernetes.io/ws`, Envoy Gateway ws/wss); Envoy refuses every upgrade unless listed here.
        upgrade_configs: vec![hcm::http_connection_manager::UpgradeConfig {
            upgrade_type: "websocket".to_string(),
            ..Default::default()
        }],
        ..Default::default()
    };
    listener::Filter {
        name: ext::HTTP_CONNECTION_MANAGER.to_string(),
        config_type: Some(listener::filter::ConfigType::TypedConfig(envoy_types::util::pack_any(
            manager,
        ))),
    }
}

/// Envoy splits stat names on `.`, and Prometheus exports keep only `[A-Za-z0-9_]`-ish names: the listener
/// name `ns/gw/443` becomes `ns_gw_443`.
fn stat_prefix(listener_name: &str) -> String {
    listener_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_prefix_has_no_separators() {
        assert_eq!(stat_prefix("default/gw/443"), "default_gw_443");
        assert_eq!(stat_prefix("a.b:c"), "a_b_c");
    }
}
