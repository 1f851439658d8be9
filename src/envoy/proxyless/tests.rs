use super::*;
use crate::envoy::pb::route::route::Action;
use crate::envoy::pb::route::route_action::ClusterSpecifier;
use crate::envoy::pb::route::route_match::PathSpecifier;

/// A GRPCRoute entry with a header match, forwarding to `shares`.
fn forward(name: &str, path: ir::PathMatch, shares: &[(Option<&str>, u32)]) -> ir::Route {
    let mut r = crate::ir::build::route(name, path, crate::ir::build::to(shares));
    r.grpc = true;
    r.headers = vec![ir::HeaderMatch {
        name: "x-tenant".into(),
        value: ir::ValueMatch::Exact("a".into()),
    }];
    r
}

#[test]
fn the_api_listener_takes_its_routes_over_ads_and_ends_in_the_router() {
    let l = listener("echo.example:8080");
    assert_eq!(l.name, "echo.example:8080");
    assert!(l.address.is_none() && l.filter_chains.is_empty());
    let any = l.api_listener.unwrap().api_listener.unwrap();
    let hcm: hcm::HttpConnectionManager = prost::Message::decode(any.value.as_slice()).unwrap();
    let Some(hcm::http_connection_manager::RouteSpecifier::Rds(rds)) = hcm.route_specifier else {
        panic!("routes come from RDS")
    };
    assert_eq!(rds.route_config_name, "echo.example:8080");
    assert!(rds.config_source.unwrap().config_source_specifier.is_some());
    assert_eq!(hcm.http_filters.last().unwrap().name, ext::ROUTER);
}

#[test]
fn routes_keep_matches_and_weights_and_refuse_what_grpc_would_ignore() {
    let split = forward(
        "a",
        ir::PathMatch::Prefix("/echo.Echo".into()),
        &[(Some("c1"), 3), (None, 1), (Some("c0"), 0)],
    );
    let mut modified = forward("b", ir::PathMatch::Exact("/echo.Echo/Say".into()), &[(Some("c2"), 1)]);
    modified.filters.request_headers.set.push(("x-a".into(), "1".into()));
    let regex = forward("c", ir::PathMatch::Regex("/[^/]+/Say".into()), &[(Some("c3"), 1)]);
    let tls = forward("d", ir::PathMatch::Exact("/echo.Echo/Tls".into()), &[(Some("c4"), 1)]);
    let out = routes([&split, &modified, &regex, &tls], &|c| c != "c4");
    assert_eq!(
        out.clusters,
        ["c1", UNAVAILABLE, "c3"],
        "zero-weight shares, refused routes and clusters gRPC cannot be given are not reached"
    );
    assert_eq!(out.refused.len(), 1);
    assert!(out.refused[0].1.contains("RequestHeaderModifier"), "{:?}", out.refused);

    let m = out.routes[0].r#match.as_ref().unwrap();
    assert_eq!(m.path_specifier, Some(PathSpecifier::Prefix("/echo.Echo/".into())));
    assert_eq!(m.headers[0].name, "x-tenant");
    let Some(Action::Route(ra)) = &out.routes[0].action else {
        panic!()
    };
    let Some(ClusterSpecifier::WeightedClusters(w)) = &ra.cluster_specifier else {
        panic!()
    };
    let names: Vec<_> = w
        .clusters
        .iter()
        .map(|c| (c.name.as_str(), c.weight.unwrap().value))
        .collect();
    assert_eq!(names, [("c1", 3), (UNAVAILABLE, 1)]);

    let to = |i: usize| match &out.routes[i].action {
        Some(Action::Route(ra)) => ra.cluster_specifier.clone(),
        other => panic!("only route actions (tonic-xds rejects any other): {other:?}"),
    };
    assert_eq!(
        to(1),
        Some(ClusterSpecifier::Cluster(UNAVAILABLE.into())),
        "fails closed"
    );
    assert_eq!(
        to(3),
        Some(ClusterSpecifier::Cluster(UNAVAILABLE.into())),
        "a refused cluster too"
    );
    assert_eq!(
        out.routes[1].r#match.as_ref().unwrap().path_specifier,
        Some(PathSpecifier::Path("/echo.Echo/Say".into())),
        "the refused route keeps its match, so calls cannot fall through to a later route"
    );
    assert!(matches!(
        out.routes[2].r#match.as_ref().unwrap().path_specifier,
        Some(PathSpecifier::SafeRegex(_))
    ));
}

#[test]
fn the_virtual_host_answers_the_target_with_and_without_its_port() {
    let rc = route_config("echo.example:8080", "echo.example", vec![]);
    assert_eq!(rc.virtual_hosts[0].domains, ["echo.example", "echo.example:8080"]);
}
