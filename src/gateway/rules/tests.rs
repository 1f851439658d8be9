//! Unit tests of `gateway::rules`: match entries and regex refusals.

use super::*;

fn parse(yaml: &str) -> spec::Match {
    spec::http::route_match(&serde_saphyr::from_str(yaml).unwrap())
}

#[test]
fn first_entry_per_equivalent_name_wins() {
    let m = parse(
        "{path: {type: RegularExpression, value: '/v[0-9]+'}, method: PATCH,
          headers: [{name: X-Env, value: a}, {name: x-env, value: b}, {name: X-Re, type: RegularExpression, value: 'x.*'}],
          queryParams: [{name: q, value: '1'}, {name: q, value: '2'}, {name: Q, value: '3'}]}",
    );
    let r = route_for_match("r".into(), &m, ir::RouteAction::DirectResponse { status: 500 });
    assert_eq!(r.path, ir::PathMatch::Regex("/v[0-9]+".into()));
    assert_eq!(r.method.as_deref(), Some("PATCH"));
    let headers: Vec<(&str, &ir::ValueMatch)> = r.headers.iter().map(|h| (h.name.as_str(), &h.value)).collect();
    assert_eq!(
        headers,
        vec![
            ("x-env", &ir::ValueMatch::Exact("a".into())),
            ("x-re", &ir::ValueMatch::Regex("x.*".into()))
        ]
    );
    let query: Vec<(&str, &ir::ValueMatch)> = r.query_params.iter().map(|q| (q.name.as_str(), &q.value)).collect();
    assert_eq!(
        query,
        vec![
            ("q", &ir::ValueMatch::Exact("1".into())),
            ("Q", &ir::ValueMatch::Exact("3".into()))
        ],
        "query parameter names are exact"
    );
}

#[test]
fn default_match_is_prefix_root() {
    let r = route_for_match(
        "r".into(),
        &parse("{}"),
        ir::RouteAction::DirectResponse { status: 500 },
    );
    assert_eq!(r.path, ir::PathMatch::Prefix("/".into()));
    assert!(r.headers.is_empty() && r.query_params.is_empty() && r.method.is_none());
}

#[test]
fn invalid_regular_expressions_drop_the_rule() {
    let rule = |m: &str| spec::Rule {
        matches: vec![parse(m)],
        ..Default::default()
    };
    for (m, what) in [
        ("{path: {type: RegularExpression, value: '/(unclosed'}}", "path"),
        (
            "{headers: [{name: x, type: RegularExpression, value: '[z-a]'}]}",
            "header",
        ),
        (
            "{queryParams: [{name: q, type: RegularExpression, value: '*x'}]}",
            "query parameter",
        ),
    ] {
        let why = unsupported(&rule(m)).unwrap_or_else(|| panic!("{m} should be refused"));
        assert!(why.starts_with(what) && why.contains("not valid"), "{why}");
    }
    assert_eq!(
        unsupported(&rule("{path: {type: RegularExpression, value: '/v[0-9]+/.*'}}")),
        None
    );
}
