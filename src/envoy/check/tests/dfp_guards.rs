use super::*;

fn http_filter_names(res: &Resources, listener: &str) -> Vec<String> {
    let l = res.listeners.iter().find(|l| l.name == listener).unwrap();
    let manager = unpack_hcm(&l.filter_chains[0].filters[0]).unwrap();
    manager.http_filters.into_iter().map(|f| f.name).collect()
}

/// The `typed_per_filter_config` of route `name` in route config `rc`.
fn per_filter<'a>(res: &'a mut Resources, rc: &str, name: &str) -> &'a mut HashMap<String, protobuf::Any> {
    let rc = res.routes.iter_mut().find(|r| r.name == rc).unwrap();
    let mut routes = rc.virtual_hosts.iter_mut().flat_map(|vh| &mut vh.routes);
    &mut routes.find(|r| r.name == name).unwrap().typed_per_filter_config
}

#[test]
fn rbac_filter_runs_before_dfp_exactly_where_routes_reach_it() {
    let res = resources();
    let filters = [ext::RBAC_FILTER, ext::DFP_FILTER, ext::ROUTER];
    assert_eq!(http_filter_names(&res, "default/gw/80"), filters);
    assert_eq!(http_filter_names(&res, "default/gw/443"), [ext::ROUTER]);
    let missing = format!(
        "listener default/gw/80: routes reach dynamic-forward-proxy cluster {} but no RBAC filter runs before \
         the DFP filter to guard the request authority",
        fixture::DYN
    );

    let mut res = resources();
    let mut rbac = None;
    edit_hcm(&mut res, "default/gw/80", 0, |m| rbac = Some(m.http_filters.remove(0)));
    assert_eq!(only_error(&res), missing);
    let rbac = rbac.unwrap();

    edit_hcm(&mut res, "default/gw/80", 0, |m| m.http_filters.insert(1, rbac.clone()));
    assert_eq!(only_error(&res), missing, "after the DFP filter it guards nothing");

    let mut res = resources();
    edit_hcm(&mut res, "default/gw/443", 0, |m| m.http_filters.insert(0, rbac));
    assert_eq!(
        only_error(&res),
        "listener default/gw/443 filter chain https: RBAC filter present but no route reaches a \
         dynamic-forward-proxy cluster"
    );
}

#[test]
fn dfp_routes_carry_the_authority_guard() {
    // The fixture's guard: the deny regexes in one policy, the allow-list as "none of these matches".
    let mut res = resources();
    let any = &per_filter(&mut res, fixture::HTTP_ROUTES, "r/dyn")[ext::RBAC_FILTER];
    let rules = unpack::<rbac_filter::RbacPerRoute>(any)
        .and_then(|p| p.rbac?.rules)
        .unwrap();
    assert_eq!(rules.action, rbac::rbac::Action::Deny as i32);
    let deny = crate::gateway::policy::authority_deny_regexes(&Default::default());
    assert_eq!(rules.policies["destination-guardrails"].permissions.len(), deny.len());
    use rbac::permission::Rule;
    let Some(Rule::AndRules(set)) = &rules.policies["hostname-not-allowed"].permissions[0].rule else {
        panic!("{rules:?}")
    };
    assert!(matches!(
        set.rules[..],
        [rbac::Permission {
            rule: Some(Rule::NotRule(_))
        }]
    ));
    assert!(per_filter(&mut res, fixture::HTTP_ROUTES, "r/web").is_empty());

    let unguarded = format!(
        "route config {} vhost http/* route r/dyn: reaches dynamic-forward-proxy cluster {} without a per-route \
         RBAC guard on the request authority",
        fixture::HTTP_ROUTES,
        fixture::DYN
    );
    per_filter(&mut res, fixture::HTTP_ROUTES, "r/dyn").clear();
    assert_eq!(only_error(&res), unguarded);

    let mut res = resources();
    let rules = rbac::Rbac {
        action: rbac::rbac::Action::Deny as i32,
        ..Default::default()
    };
    let rbac = rbac_filter::Rbac {
        rules: Some(rules),
        ..Default::default()
    };
    let empty = envoy_types::util::pack_any(rbac_filter::RbacPerRoute { rbac: Some(rbac) });
    per_filter(&mut res, fixture::HTTP_ROUTES, "r/dyn").insert(ext::RBAC_FILTER.into(), empty);
    assert_eq!(only_error(&res), unguarded, "a DENY without policies guards nothing");
}

#[test]
fn dfp_behind_an_aggregate_is_guarded_too() {
    const FAILOVER: &str = "failover/dyn";
    let mut res = resources_from(|gw| {
        let mut aggregate = gw.clusters[fixture::WEB].clone();
        aggregate.name = FAILOVER.into();
        aggregate.discovery = std::sync::Arc::new(ir::Discovery::Aggregate {
            clusters: vec![fixture::DYN.into(), fixture::WEB.into()],
        });
        gw.clusters.insert(FAILOVER.into(), aggregate);
        let to_failover = ir::WeightedBackend {
            cluster: Some(FAILOVER.into()),
            weight: 1,
            filters: Default::default(),
        };
        https_chains(gw)[0].route_config.virtual_hosts[0].routes[0].action =
            ir::RouteAction::Forward(vec![to_failover]);
    });
    assert_eq!(check(&res), Ok(()));
    assert_eq!(
        http_filter_names(&res, "default/gw/443"),
        [ext::RBAC_FILTER, ext::ROUTER]
    );
    per_filter(&mut res, fixture::HTTPS_ROUTES, "r/web").clear();
    assert_eq!(
        only_error(&res),
        format!(
            "route config {} vhost https/example.com route r/web: reaches dynamic-forward-proxy cluster {FAILOVER} \
             without a per-route RBAC guard on the request authority",
            fixture::HTTPS_ROUTES
        )
    );
}
