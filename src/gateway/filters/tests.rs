//! Rule filter parsing: refusals and per-match resolution.

use super::*;

fn rule(yaml: &str) -> spec::Rule {
    spec::http::rule(&serde_saphyr::from_str(yaml).unwrap(), Default::default())
}

#[test]
fn refusals() {
    for (yaml, why) in [
        (
            "{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}, {type: URLRewrite, urlRewrite: {hostname: a.example}}]}",
            "mutually exclusive",
        ),
        (
            "{matches: [{path: {type: Exact, value: /a}}], filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /b}}}]}",
            "requires a PathPrefix match",
        ),
        (
            "{filters: [{type: CORS, cors: {allowOrigins: [example.com]}}]}",
            "cors.allowOrigins",
        ),
        ("{timeouts: {request: 1s, backendRequest: 2s}}", "must not exceed"),
        (
            "{backendRefs: [{name: a, port: 80}, {name: b, port: 80, filters: [{type: URLRewrite, urlRewrite: {hostname: x}}]}]}",
            "single backendRef",
        ),
        (
            "{filters: [{type: URLRewrite, urlRewrite: {hostname: x}}], backendRefs: [{name: a, port: 80, filters: [{type: URLRewrite, urlRewrite: {hostname: y}}]}]}",
            "more than once",
        ),
        (
            "{filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: Host, value: x}]}}]}",
            "cannot be modified",
        ),
        (
            "{filters: [{type: RequestRedirect, requestRedirect: {statusCode: 304}}]}",
            "statusCode",
        ),
    ] {
        let err = parse(&rule(yaml)).expect_err(yaml);
        assert!(err.contains(why), "{yaml}: {err}");
    }
}

#[test]
fn prefix_replacement_takes_the_match_prefix() {
    let f = parse(&rule(
            "{filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}, statusCode: 301}}]}",
        ))
    .unwrap();
    assert!(f.redirects());
    let (filters, redirect) = f.for_match(&ir::PathMatch::Prefix("/old".into()), &[]);
    assert_eq!(filters, ir::RouteFilters::default());
    let redirect = redirect.unwrap();
    assert_eq!(redirect.status, 301);
    assert_eq!(
        redirect.path,
        Some(ir::PathRewrite::Prefix {
            matched: "/old".into(),
            replacement: "/new".into()
        })
    );
}

#[test]
fn fail_closed_filters_keep_the_rule() {
    let f = parse(&rule(
        "{filters: [{type: ExtensionRef, extensionRef: {group: example.com, kind: Auth, name: z}}]}",
    ))
    .unwrap();
    let (reason, why) = f.fail_closed.unwrap();
    assert_eq!(reason, RouteReason::InvalidKind);
    assert!(why.contains("example.com/Auth"), "{why}");
    let mut r = rule("{}");
    r.unknown_filters = vec!["ExternalAuth".into()];
    let f = parse(&r).unwrap();
    assert_eq!(f.fail_closed.unwrap().0, RouteReason::UnsupportedValue);
}

#[test]
fn redirect_scheme_without_port_takes_the_well_known_port() {
    for (yaml, port) in [
        ("{scheme: https}", Some(443)),
        ("{scheme: http}", Some(80)),
        ("{scheme: https, port: 8443}", Some(8443)),
        ("{hostname: a.example}", None),
    ] {
        let f = parse(&rule(&format!(
            "{{filters: [{{type: RequestRedirect, requestRedirect: {yaml}}}]}}"
        )))
        .unwrap();
        let (_, redirect) = f.for_match(&ir::PathMatch::Prefix("/".into()), &[]);
        assert_eq!(redirect.unwrap().port, port, "{yaml}");
    }
}

#[test]
fn timeouts_retry_and_name_reach_every_match() {
    let mut r = rule("{name: read, timeouts: {request: 10s, backendRequest: 500ms}}");
    r.retry = Some(serde_saphyr::from_str("{attempts: 2, codes: [503]}").unwrap());
    let f = parse(&r).unwrap();
    let (filters, _) = f.for_match(&ir::PathMatch::Prefix("/".into()), &[]);
    assert_eq!(filters.rule_name.as_deref(), Some("read"));
    assert_eq!(
        filters.timeouts,
        ir::Timeouts {
            request_ms: Some(10_000),
            backend_request_ms: Some(500)
        }
    );
    assert_eq!(filters.retry.unwrap().codes, vec![503]);
}
