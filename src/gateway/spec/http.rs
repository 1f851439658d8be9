//! HTTPRoute → [`RouteSpec`], destructuring every generated type. A rule's filters and a backendRef's
//! filters share one schema but are distinct generated types, so one conversion body
//! (`filter_conversion!`, in `convert`) is expanded twice, in modules that alias each context's type names.

use gateway_api::apis::standard::httproutes::{
    HttpRouteParentRefs, HttpRouteRules, HttpRouteRulesBackendRefs, HttpRouteRulesMatches,
    HttpRouteRulesMatchesHeaders, HttpRouteRulesMatchesHeadersType, HttpRouteRulesMatchesMethod as Method,
    HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType, HttpRouteRulesMatchesQueryParams,
    HttpRouteRulesMatchesQueryParamsType, HttpRouteRulesTimeouts, HttpRouteSpec,
};

use super::convert::{backend_ref_conversion, parent_ref_conversion};
use super::{Match, PathKind, PathMatch, RouteKind, RouteOrder, RouteSpec, Rule, Timeouts, ValueMatch};
use crate::model::{HttpRouteExtras, ObjectKey, RuleExtras, StoredRoute};

/// Rule-level filters (`rules[].filters`).
mod rule_filters {
    use gateway_api::apis::standard::httproutes::{
        HttpRouteRulesFilters as Filters, HttpRouteRulesFiltersCors as CorsT,
        HttpRouteRulesFiltersExtensionRef as Extension, HttpRouteRulesFiltersRequestHeaderModifier as ReqHdr,
        HttpRouteRulesFiltersRequestHeaderModifierAdd as ReqAdd,
        HttpRouteRulesFiltersRequestHeaderModifierSet as ReqSet, HttpRouteRulesFiltersRequestMirror as Mirror,
        HttpRouteRulesFiltersRequestMirrorBackendRef as MirrorRef,
        HttpRouteRulesFiltersRequestMirrorFraction as Fraction, HttpRouteRulesFiltersRequestRedirect as RedirectT,
        HttpRouteRulesFiltersRequestRedirectPath as RedirectPath,
        HttpRouteRulesFiltersRequestRedirectPathType as RedirectPathType,
        HttpRouteRulesFiltersRequestRedirectScheme as RedirectScheme,
        HttpRouteRulesFiltersResponseHeaderModifier as ResHdr,
        HttpRouteRulesFiltersResponseHeaderModifierAdd as ResAdd,
        HttpRouteRulesFiltersResponseHeaderModifierSet as ResSet, HttpRouteRulesFiltersType as Type,
        HttpRouteRulesFiltersUrlRewrite as RewriteT, HttpRouteRulesFiltersUrlRewritePath as RewritePath,
        HttpRouteRulesFiltersUrlRewritePathType as RewritePathType,
    };

    use super::super::convert::{filter_conversion, header_modifier, mirror};

    filter_conversion!();
}

/// backendRef-level filters (`rules[].backendRefs[].filters`).
mod backend_filters {
    use gateway_api::apis::standard::httproutes::{
        HttpRouteRulesBackendRefsFilters as Filters, HttpRouteRulesBackendRefsFiltersCors as CorsT,
        HttpRouteRulesBackendRefsFiltersExtensionRef as Extension,
        HttpRouteRulesBackendRefsFiltersRequestHeaderModifier as ReqHdr,
        HttpRouteRulesBackendRefsFiltersRequestHeaderModifierAdd as ReqAdd,
        HttpRouteRulesBackendRefsFiltersRequestHeaderModifierSet as ReqSet,
        HttpRouteRulesBackendRefsFiltersRequestMirror as Mirror,
        HttpRouteRulesBackendRefsFiltersRequestMirrorBackendRef as MirrorRef,
        HttpRouteRulesBackendRefsFiltersRequestMirrorFraction as Fraction,
        HttpRouteRulesBackendRefsFiltersRequestRedirect as RedirectT,
        HttpRouteRulesBackendRefsFiltersRequestRedirectPath as RedirectPath,
        HttpRouteRulesBackendRefsFiltersRequestRedirectPathType as RedirectPathType,
        HttpRouteRulesBackendRefsFiltersRequestRedirectScheme as RedirectScheme,
        HttpRouteRulesBackendRefsFiltersResponseHeaderModifier as ResHdr,
        HttpRouteRulesBackendRefsFiltersResponseHeaderModifierAdd as ResAdd,
        HttpRouteRulesBackendRefsFiltersResponseHeaderModifierSet as ResSet,
        HttpRouteRulesBackendRefsFiltersType as Type, HttpRouteRulesBackendRefsFiltersUrlRewrite as RewriteT,
        HttpRouteRulesBackendRefsFiltersUrlRewritePath as RewritePath,
        HttpRouteRulesBackendRefsFiltersUrlRewritePathType as RewritePathType,
    };

    use super::super::convert::{filter_conversion, header_modifier, mirror};

    filter_conversion!();
}

/// The form of an HTTPRoute; `extras` is what the parser kept beside it (`model::HttpRouteExtras`).
pub fn route(key: &ObjectKey, route: &StoredRoute, extras: Option<&HttpRouteExtras>) -> RouteSpec {
    let StoredRoute {
        metadata,
        spec: HttpRouteSpec {
            hostnames,
            parent_refs,
            rules,
        },
    } = route;
    let extras = |i: usize| extras.and_then(|e| e.rules.get(i)).cloned().unwrap_or_default();
    RouteSpec {
        kind: RouteKind::Http,
        key: key.clone(),
        generation: metadata.generation.unwrap_or(0),
        order: std::sync::Arc::new(RouteOrder::new(metadata, RouteKind::Http, key)),
        parent_refs: parent_refs.iter().flatten().map(parent_ref).collect(),
        hostnames: hostnames.clone().unwrap_or_default(),
        rules: rules
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| rule(r, extras(i)))
            .collect(),
    }
}

parent_ref_conversion!(HttpRouteParentRefs);

/// The form of one rule, with what the parser kept beside it.
pub fn rule(r: &HttpRouteRules, extras: RuleExtras) -> Rule {
    let HttpRouteRules {
        backend_refs,
        filters,
        matches,
        name,
        timeouts,
    } = r;
    let RuleExtras {
        retry,
        unknown_filters,
        unsupported_fields,
        session_persistence,
    } = extras;
    Rule {
        name: name.clone(),
        matches: matches.iter().flatten().map(route_match).collect(),
        filters: filters.iter().flatten().map(rule_filters::filter).collect(),
        backend_refs: backend_refs.iter().flatten().map(backend_ref).collect(),
        timeouts: timeouts.as_ref().map(
            |HttpRouteRulesTimeouts {
                 backend_request,
                 request,
             }| Timeouts {
                request: request.clone(),
                backend_request: backend_request.clone(),
            },
        ),
        retry,
        unknown_filters,
        unsupported_fields,
        session_persistence,
        error: None,
    }
}

backend_ref_conversion!(HttpRouteRulesBackendRefs);

pub fn route_match(m: &HttpRouteRulesMatches) -> Match {
    let HttpRouteRulesMatches {
        headers,
        method,
        path,
        query_params,
    } = m;
    Match {
        path: path
            .as_ref()
            .map(|HttpRouteRulesMatchesPath { r#type, value }| PathMatch {
                kind: r#type.as_ref().map(|t| match t {
                    HttpRouteRulesMatchesPathType::Exact => PathKind::Exact,
                    HttpRouteRulesMatchesPathType::PathPrefix => PathKind::PathPrefix,
                    HttpRouteRulesMatchesPathType::RegularExpression => PathKind::RegularExpression,
                }),
                value: value.clone(),
            }),
        headers: headers
            .iter()
            .flatten()
            .map(|HttpRouteRulesMatchesHeaders { name, r#type, value }| ValueMatch {
                name: name.clone(),
                value: value.clone(),
                regex: *r#type == Some(HttpRouteRulesMatchesHeadersType::RegularExpression),
            })
            .collect(),
        query_params: query_params
            .iter()
            .flatten()
            .map(|HttpRouteRulesMatchesQueryParams { name, r#type, value }| ValueMatch {
                name: name.clone(),
                value: value.clone(),
                regex: *r#type == Some(HttpRouteRulesMatchesQueryParamsType::RegularExpression),
            })
            .collect(),
        method: method.as_ref().map(|m| method_name(m).to_string()),
        grpc_rank: None,
    }
}

fn method_name(m: &Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
    }
}
