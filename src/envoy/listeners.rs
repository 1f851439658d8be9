//! LDS: one `Listener` per bound port. Plain HTTP is one filter chain; HTTPS is one filter chain per
//! Gateway listener, selected by SNI (the TLS inspector reads it), each terminating TLS with its own
//! certificates. Every chain runs an HttpConnectionManager that fetches its routes by RDS over ADS.

use super::pb::{cors_filter, dfp_common, dfp_filter, ext, hcm, listener, rbac_filter, router, tls_inspector};
use super::{ads, socket_address, tls};
use crate::ir;
use crate::ir::names;

/// Answers "does this route configuration send traffic to a dynamic-forward-proxy cluster, and with
/// which DNS cache?" for a route configuration name.
pub(super) type DfpLookup<'a> = dyn Fn(&str) -> Option<dfp_common::DnsCacheConfig> + 'a;

/// Answers "does a route of this route configuration carry the per-route authority guard?".
pub(super) type GuardLookup<'a> = dyn Fn(&str) -> bool + 'a;

/// What the connection managers need to know about their route configurations.
pub(super) struct Lookups<'a> {
    pub dfp: &'a DfpLookup<'a>,
    pub guarded: &'a GuardLookup<'a>,
    /// Does a route of this route configuration carry a CORS policy?
    pub cors: &'a GuardLookup<'a>,
}

pub(super) fn build(l: &ir::Listener, lookups: &Lookups<'_>) -> listener::Listener {
    let stat_prefix = stat_prefix(&l.name);
    let (filter_chains, listener_filters) = match &l.kind {
        ir::ListenerKind::Http { route_config } => {
            let hcm = http_connection_manager(&stat_prefix, &route_config.name, lookups);
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
                    filters: vec![http_connection_manager(&stat_prefix, &c.route_config.name, lookups)],
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

fn http_connection_manager(stat_prefix: &str, route_config_name: &str, lookups: &Lookups<'_>) -> listener::Filter {
    let mut http_filters = Vec::new();
    // CORS first: a preflight is answered (and an actual request's response decorated) by the proxy,
    // whatever later filters decide. The listener-wide config is empty; each route's policy is in its
    // per-route config (`routes::policy::cors`), and routes without one are untouched. Only where a route
    // has a policy.
    if (lookups.cors)(route_config_name) {
        http_filters.push(http_filter(ext::CORS_FILTER, cors_filter::Cors::default()));
    }
    // A dynamic forward proxy connects wherever the request's authority says; the RBAC filter enforces the
    // destination guardrails on that authority (403), before the DFP filter so a refused name is never
    // even resolved. Its rules are per route (`routes::authority_guard`) so that only routes forwarding
    // to a DFP cluster are guarded, and ordinary routes reached by IP or any name keep working: this
    // listener-wide config has no `rules`, which Envoy reads as "no enforcement".
    if (lookups.guarded)(route_config_name) {
        http_filters.push(http_filter(ext::RBAC_FILTER, rbac_filter::Rbac::default()));
    }
    // The DFP filter resolves the request's host into the DNS cache the DFP cluster then reads; it must
    // run before the router and share the cluster's cache config. Only where a route needs it: on other
    // traffic it would be dead weight in every request.
    if let Some(cache) = (lookups.dfp)(route_config_name) {
        let config = dfp_filter::FilterConfig {
            implementation_specifier: Some(dfp_filter::filter_config::ImplementationSpecifier::DnsCacheConfig(
                cache,
            )),
            ..Default::default()
        };
        http_filters.push(http_filter(ext::DFP_FILTER, config));
    }
    http_filters.push(http_filter(ext::ROUTER, router::Router::default()));
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

fn http_filter<M: prost::Message + prost::Name>(name: &str, config: M) -> hcm::HttpFilter {
    hcm::HttpFilter {
        name: name.to_string(),
        config_type: Some(hcm::http_filter::ConfigType::TypedConfig(envoy_types::util::pack_any(
            config,
        ))),
        ..Default::default()
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
