//! The `RouteMatch` of one route entry: path (exact, element-wise prefix, RE2 regex), headers (names
//! lowercased, exact or RE2 values), the method (as the `:method` pseudo-header) and query parameters.
//! Every condition is ANDed, as in a Gateway API `HTTPRouteMatch`.

use crate::envoy::pb::matcher::{RegexMatcher, StringMatcher, string_matcher::MatchPattern};
use crate::envoy::pb::route;
use crate::ir;

pub(super) fn route_match(r: &ir::Route) -> route::RouteMatch {
    use route::header_matcher::HeaderMatchSpecifier;
    use route::query_parameter_matcher::QueryParameterMatchSpecifier;
    let header = |name: &str, value: &ir::ValueMatch| route::HeaderMatcher {
        name: name.to_string(),
        header_match_specifier: Some(HeaderMatchSpecifier::StringMatch(string_match(value))),
        ..Default::default()
    };
    let method = r
        .method
        .as_ref()
        .map(|m| header(":method", &ir::ValueMatch::Exact(m.clone())));
    route::RouteMatch {
        path_specifier: Some(path_specifier(&r.path)),
        headers: r
            .headers
            .iter()
            .map(|h| header(&h.name, &h.value))
            .chain(method)
            .collect(),
        query_parameters: r
            .query_params
            .iter()
            .map(|q| route::QueryParameterMatcher {
                name: q.name.clone(),
                query_parameter_match_specifier: Some(QueryParameterMatchSpecifier::StringMatch(string_match(
                    &q.value,
                ))),
            })
            .collect(),
        ..Default::default()
    }
}

/// A whole-value string matcher: exact (case-sensitive) or an RE2 regex.
fn string_match(v: &ir::ValueMatch) -> StringMatcher {
    let pattern = match v {
        ir::ValueMatch::Exact(s) => MatchPattern::Exact(s.clone()),
        ir::ValueMatch::Regex(re) => MatchPattern::SafeRegex(re2(re)),
    };
    StringMatcher {
        match_pattern: Some(pattern),
        ..Default::default()
    }
}

/// A regex matcher on the Google RE2 engine, which must match the whole input. The engine is left
/// unset: RE2 is Envoy's default, and the explicit `google_re2` field is deprecated in the v3 API (a
/// deprecation warning at load, and a compile warning here).
fn re2(regex: &str) -> RegexMatcher {
    RegexMatcher {
        regex: regex.to_string(),
        ..Default::default()
    }
}

pub(super) fn path_specifier(path: &ir::PathMatch) -> route::route_match::PathSpecifier {
    use route::route_match::PathSpecifier;
    match path {
        ir::PathMatch::Exact(p) => PathSpecifier::Path(p.clone()),
        ir::PathMatch::Prefix(p) => {
            // `path_separated_prefix` is element-wise (`/abc` matches `/abc`, `/abc/`, `/abc/x`, not
            // `/abcd`) but must not end in `/` (pattern `^[^?#]+[^?#/]$`). A trailing slash adds nothing
            // element-wise (Gateway API: `/abc/` ≡ `/abc`), so it is trimmed; what is left of `/` (or
            // `//`) is every path, which is the plain prefix `/`.
            let trimmed = p.trim_end_matches('/');
            if trimmed.is_empty() {
                PathSpecifier::Prefix("/".to_string())
            } else {
                PathSpecifier::PathSeparatedPrefix(trimmed.to_string())
            }
        }
        ir::PathMatch::Regex(re) => PathSpecifier::SafeRegex(re2(re)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use route::route_match::PathSpecifier;

    #[test]
    fn prefixes_are_element_wise_without_trailing_slash() {
        let p = |s: &str| path_specifier(&ir::PathMatch::Prefix(s.to_string()));
        assert_eq!(p("/"), PathSpecifier::Prefix("/".into()));
        assert_eq!(p("//"), PathSpecifier::Prefix("/".into()));
        assert_eq!(p("/abc"), PathSpecifier::PathSeparatedPrefix("/abc".into()));
        assert_eq!(p("/abc/"), PathSpecifier::PathSeparatedPrefix("/abc".into()));
        assert_eq!(
            path_specifier(&ir::PathMatch::Exact("/abc/".into())),
            PathSpecifier::Path("/abc/".into()),
            "exact paths are taken verbatim"
        );
        assert_eq!(
            path_specifier(&ir::PathMatch::Regex("/v[0-9]+/.*".into())),
            PathSpecifier::SafeRegex(re2("/v[0-9]+/.*"))
        );
    }

    #[test]
    fn headers_method_and_query_are_anded() {
        let r = ir::Route {
            name: "r".into(),
            path: ir::PathMatch::Prefix("/".into()),
            headers: vec![
                ir::HeaderMatch {
                    name: "x-a".into(),
                    value: ir::ValueMatch::Exact("1".into()),
                },
                ir::HeaderMatch {
                    name: "x-b".into(),
                    value: ir::ValueMatch::Regex("v.*".into()),
                },
            ],
            query_params: vec![ir::QueryMatch {
                name: "q".into(),
                value: ir::ValueMatch::Exact("on".into()),
            }],
            method: Some("POST".into()),
            action: ir::RouteAction::DirectResponse { status: 500 },
            grpc: false,
            filters: Default::default(),
        };
        let m = route_match(&r);
        let names: Vec<&str> = m.headers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, vec!["x-a", "x-b", ":method"]);
        assert_eq!(m.query_parameters.len(), 1);
        assert_eq!(m.query_parameters[0].name, "q");
    }
}
