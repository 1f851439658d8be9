use std::collections::HashMap;

use super::super::pb::{endpoint, ext, hcm, listener, protobuf, rbac, rbac_filter};
use super::super::{build, fixture};
use super::facts::unpack;
use super::*;
use crate::ir;
use crate::ir::names;

fn unpack_hcm(f: &listener::Filter) -> Option<hcm::HttpConnectionManager> {
    match &f.config_type {
        Some(listener::filter::ConfigType::TypedConfig(any)) => unpack(any),
        _ => None,
    }
}

fn resources() -> Resources {
    build(&fixture::gateway())
}

fn resources_from(edit: impl FnOnce(&mut ir::GatewayIr)) -> Resources {
    let mut gw = fixture::gateway();
    edit(&mut gw);
    build(&gw)
}

fn errors(res: &Resources) -> Vec<String> {
    check(res)
        .err()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn only_error(res: &Resources) -> String {
    let errors = errors(res);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors.into_iter().next().unwrap()
}

/// Decodes, edits and re-packs the HttpConnectionManager of filter chain `chain` of listener `listener`.
fn edit_hcm(res: &mut Resources, listener: &str, chain: usize, edit: impl FnOnce(&mut hcm::HttpConnectionManager)) {
    let l = res.listeners.iter_mut().find(|l| l.name == listener).unwrap();
    let filter = &mut l.filter_chains[chain].filters[0];
    let mut manager = unpack_hcm(filter).unwrap();
    edit(&mut manager);
    filter.config_type = Some(listener::filter::ConfigType::TypedConfig(envoy_types::util::pack_any(
        manager,
    )));
}

fn https_chain(name: &str, server_names: &[&str], certificates: &[&str]) -> ir::TlsChain {
    ir::TlsChain {
        listener_name: name.into(),
        server_names: server_names.iter().map(|s| s.to_string()).collect(),
        certificates: certificates.iter().map(|s| s.to_string()).collect(),
        client_validation: None,
        route_config: ir::RouteConfig {
            name: format!("default/gw/443/{name}"),
            virtual_hosts: vec![],
        },
    }
}

fn https_chains(gw: &mut ir::GatewayIr) -> &mut Vec<ir::TlsChain> {
    match &mut gw.listeners[1].kind {
        ir::ListenerKind::Https { chains } => chains,
        _ => unreachable!("fixture listener 1 is HTTPS"),
    }
}

#[test]
fn fixture_passes() {
    assert_eq!(check(&resources()), Ok(()));
}

#[test]
fn names_are_unique_per_type() {
    let mut res = resources();
    res.clusters.push(res.clusters[0].clone());
    res.secrets.push(res.secrets[0].clone());
    res.secrets.push(res.secrets[0].clone());
    let errors = errors(&res);
    assert_eq!(
        errors,
        vec![
            format!("cluster {:?} is defined more than once", res.clusters[0].name),
            format!("secret {:?} is defined more than once", res.secrets[0].name),
        ]
    );
}

#[test]
fn invalid_backend_cluster_must_not_exist() {
    let mut res = resources();
    let mut reserved = res.clusters[0].clone();
    reserved.name = names::INVALID_BACKEND_CLUSTER.into();
    res.clusters.push(reserved);
    assert!(only_error(&res).contains("reserved for invalid backendRefs"));
}

#[test]
fn routed_clusters_exist() {
    let mut res = resources();
    res.clusters.retain(|c| c.name != fixture::API);
    assert_eq!(
        only_error(&res),
        format!(
            "route config {} vhost http/* route r/api: cluster \"{}\" does not exist",
            fixture::HTTP_ROUTES,
            fixture::API
        )
    );
}

#[test]
fn eds_clusters_and_load_assignments_pair_up() {
    let mut res = resources();
    let cla = res.endpoints.pop().unwrap();
    assert_eq!(
        only_error(&res),
        format!(
            "EDS cluster {0}: ClusterLoadAssignment \"{0}\" does not exist",
            fixture::WEB
        )
    );
    res.endpoints.push(cla.clone());
    res.endpoints.push(endpoint::ClusterLoadAssignment {
        cluster_name: "stray".into(),
        ..cla
    });
    assert_eq!(
        only_error(&res),
        "ClusterLoadAssignment \"stray\" belongs to no EDS cluster"
    );
}

#[test]
fn referenced_secrets_exist_with_the_right_kind() {
    let mut res = resources();
    res.secrets.retain(|s| s.name != fixture::CLIENT_CERT);
    assert_eq!(
        only_error(&res),
        format!(
            "cluster {}: secret \"{}\" does not exist",
            fixture::API,
            fixture::CLIENT_CERT
        )
    );

    let res = resources_from(|gw| {
        let Some(ir::Cluster { tls: Some(tls), .. }) = gw.clusters.get_mut(fixture::API) else {
            unreachable!()
        };
        std::sync::Arc::make_mut(tls).trust = ir::Trust::Sds(fixture::GW_CERT.into());
    });
    assert_eq!(
        only_error(&res),
        format!(
            "cluster {}: secret \"{}\" is not a validation context secret",
            fixture::API,
            fixture::GW_CERT
        )
    );

    let mut res = resources();
    res.secrets.retain(|s| s.name != fixture::GW_CERT);
    assert_eq!(
        only_error(&res),
        format!(
            "listener default/gw/443 filter chain https: secret \"{}\" does not exist",
            fixture::GW_CERT
        )
    );
}

#[test]
fn listener_route_configs_exist() {
    let mut res = resources();
    res.routes.retain(|r| r.name != fixture::HTTPS_ROUTES);
    assert_eq!(
        only_error(&res),
        format!(
            "listener default/gw/443 filter chain https: route config \"{}\" does not exist",
            fixture::HTTPS_ROUTES
        )
    );
}

#[test]
fn domains_are_unique_within_a_route_config() {
    let mut res = resources();
    let rc = res.routes.iter_mut().find(|r| r.name == fixture::HTTPS_ROUTES).unwrap();
    let mut dup = rc.virtual_hosts[0].clone();
    dup.name = "other".into();
    dup.domains = vec!["EXAMPLE.com".into()];
    rc.virtual_hosts.push(dup);
    assert_eq!(
        only_error(&res),
        format!(
            "route config {}: domain \"EXAMPLE.com\" is in vhost https/example.com and vhost other",
            fixture::HTTPS_ROUTES
        )
    );
}

#[test]
fn dfp_filter_present_iff_needed() {
    let mut res = resources();
    let mut dfp = None;
    edit_hcm(&mut res, "default/gw/80", 0, |m| {
        let i = m.http_filters.iter().position(|f| f.name == ext::DFP_FILTER);
        dfp = Some(
            m.http_filters
                .remove(i.expect("the fixture's HTTP routes reach the DFP cluster")),
        );
    });
    let dfp = dfp.unwrap();
    assert_eq!(
        only_error(&res),
        format!(
            "listener default/gw/80: routes reach dynamic-forward-proxy cluster {} but the DFP HTTP filter is missing",
            fixture::DYN
        )
    );

    let mut res = resources();
    edit_hcm(&mut res, "default/gw/443", 0, |m| m.http_filters.insert(0, dfp));
    assert_eq!(
        only_error(&res),
        "listener default/gw/443 filter chain https: DFP HTTP filter present but no route reaches a \
         dynamic-forward-proxy cluster"
    );
}

#[test]
fn dfp_filter_and_clusters_share_the_dns_cache() {
    let res = resources_from(|gw| {
        let mut other = gw.clusters[fixture::DYN].clone();
        other.name = "eg-backend/default/dyn6/dynamic".into();
        other.discovery = std::sync::Arc::new(ir::Discovery::DynamicForwardProxy {
            dns: ir::DnsSettings {
                refresh_rate_ms: 1000,
                respect_ttl: false,
                lookup_family: ir::LookupFamily::V6Only,
                resolvers: Vec::new(),
            },
            deny_authorities: vec!["^localhost$".into()],
            allow_authorities: None,
        });
        gw.clusters.insert(other.name.to_string(), other);
        let ir::ListenerKind::Http { route_config } = &mut gw.listeners[0].kind else {
            unreachable!()
        };
        route_config.virtual_hosts[0].routes[1].action = ir::RouteAction::Forward(vec![
            ir::WeightedBackend {
                cluster: Some(fixture::DYN.into()),
                weight: 1,
                filters: Default::default(),
            },
            ir::WeightedBackend {
                cluster: Some("eg-backend/default/dyn6/dynamic".into()),
                weight: 1,
                filters: Default::default(),
            },
        ]);
    });
    assert_eq!(
        only_error(&res),
        "listener default/gw/80: DFP HTTP filter fills DNS cache \"pier-dfp-v4-preferred-30000ms\" but cluster \
         eg-backend/default/dyn6/dynamic reads \"pier-dfp-v6-only-1000ms\""
    );
}

#[test]
fn filter_chains_are_distinct_and_have_certificates() {
    let res = resources_from(|gw| {
        let chains = https_chains(gw);
        chains.push(https_chain("again", &["example.com"], &[fixture::GW_CERT]));
        chains.push(https_chain("bare", &[], &[]));
    });
    let errors = errors(&res);
    assert!(
        errors.contains(
            &"listener default/gw/443: filter chains \"https\" and \"again\" match the same server names".into()
        ),
        "{errors:#?}"
    );
    assert!(
        errors.contains(&"listener default/gw/443 filter chain bare: TLS without a certificate".into()),
        "{errors:#?}"
    );
}

/// The dynamic forward proxy's guards: the RBAC filter and the authority guard, wherever DFP is reached.
mod dfp_guards;

/// The checker kept current by changes, against a fresh check.
mod incremental;
