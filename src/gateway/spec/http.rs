//! HTTPRoute → [`RouteSpec`], destructuring every generated type. A rule's filters and a backendRef's
//! filters share one schema but are distinct generated types, so one conversion body
//! (`filter_conversion!`) is expanded twice, in modules that alias each context's type names.

use gateway_api::apis::standard::httproutes::{
    HttpRoute, HttpRouteParentRefs, HttpRouteRules, HttpRouteRulesBackendRefs, HttpRouteRulesMatches,
    HttpRouteRulesMatchesHeaders, HttpRouteRulesMatchesHeadersType, HttpRouteRulesMatchesMethod as Method,
    HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType, HttpRouteRulesMatchesQueryParams,
    HttpRouteRulesMatchesQueryParamsType, HttpRouteRulesTimeouts, HttpRouteSpec,
};

use super::{Match, PathKind, PathMatch, RouteKind, RouteOrder, RouteSpec, Rule, Timeouts, ValueMatch};
use crate::model::{HttpRouteExtras, ObjectKey, RuleExtras};

/// The header modifier `$m` of type `$T` (items `$Add`, `$Set`) as a [`super::HeaderModifier`].
macro_rules! header_modifier {
    ($m:expr, $T:ident, $Add:ident, $Set:ident) => {{
        let $T { add, set, remove } = $m;
        super::super::HeaderModifier {
            add: add
                .iter()
                .flatten()
                .map(|$Add { name, value }| (name.clone(), value.clone()))
                .collect(),
            set: set
                .iter()
                .flatten()
                .map(|$Set { name, value }| (name.clone(), value.clone()))
                .collect(),
            remove: remove.clone().unwrap_or_default(),
        }
    }};
}
pub(super) use header_modifier;

/// The mirror `$m` of type `$T` (backendRef `$B`, fraction `$F`) as a [`super::Mirror`].
macro_rules! mirror {
    ($m:expr, $T:ident, $B:ident, $F:ident) => {{
        let $T {
            backend_ref,
            fraction,
            percent,
        } = $m;
        let $B {
            group,
            kind,
            name,
            namespace,
            port,
        } = backend_ref;
        super::super::Mirror {
            backend: super::super::Ref {
                group: group.clone(),
                kind: kind.clone(),
                namespace: namespace.clone(),
                name: name.clone(),
                port: *port,
            },
            percent: *percent,
            fraction: fraction
                .as_ref()
                .map(|$F { denominator, numerator }| (*numerator, *denominator)),
        }
    }};
}
pub(super) use mirror;

/// `fn parent_ref(&$T) -> ParentRef`: HTTPRoute and GRPCRoute parentRefs have the same fields.
macro_rules! parent_ref_conversion {
    ($T:ident) => {
        fn parent_ref(p: &$T) -> super::ParentRef {
            let $T {
                group,
                kind,
                name,
                namespace,
                port,
                section_name,
            } = p;
            super::ParentRef {
                group: group.clone(),
                kind: kind.clone(),
                namespace: namespace.clone(),
                name: name.clone(),
                section_name: section_name.clone(),
                port: *port,
            }
        }
    };
}
pub(super) use parent_ref_conversion;

/// `fn backend_ref(&$T) -> BackendRef`, its filters read by the calling module's `backend_filters::filter`.
macro_rules! backend_ref_conversion {
    ($T:ident) => {
        fn backend_ref(b: &$T) -> super::BackendRef {
            let $T {
                filters,
                group,
                kind,
                name,
                namespace,
                port,
                weight,
            } = b;
            super::BackendRef {
                target: super::Ref {
                    group: group.clone(),
                    kind: kind.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    port: *port,
                },
                weight: *weight,
                filters: filters.iter().flatten().map(backend_filters::filter).collect(),
            }
        }
    };
}
pub(super) use backend_ref_conversion;

/// `fn filter(&Filters) -> Filter` over the type names the calling module aliases.
macro_rules! filter_conversion {
    () => {
        use super::super::{Cors, ExtensionRef, Filter, PathChange, Redirect, Rewrite, Scheme as S};

        pub(super) fn filter(f: &Filters) -> Filter {
            let Filters {
                cors,
                extension_ref,
                request_header_modifier,
                request_mirror,
                request_redirect,
                response_header_modifier,
                r#type,
                url_rewrite,
            } = f;
            match r#type {
                Type::RequestHeaderModifier => Filter::RequestHeaderModifier(
                    request_header_modifier
                        .as_ref()
                        .map(|m| header_modifier!(m, ReqHdr, ReqAdd, ReqSet)),
                ),
                Type::ResponseHeaderModifier => Filter::ResponseHeaderModifier(
                    response_header_modifier
                        .as_ref()
                        .map(|m| header_modifier!(m, ResHdr, ResAdd, ResSet)),
                ),
                Type::RequestMirror => Filter::RequestMirror(
                    request_mirror
                        .as_ref()
                        .map(|m| mirror!(m, Mirror, MirrorRef, Fraction)),
                ),
                Type::RequestRedirect => Filter::RequestRedirect(request_redirect.as_ref().map(redirect)),
                Type::UrlRewrite => Filter::UrlRewrite(url_rewrite.as_ref().map(rewrite)),
                Type::Cors => Filter::Cors(cors.as_ref().map(cors_policy)),
                Type::ExtensionRef => Filter::ExtensionRef(extension_ref.as_ref().map(
                    |Extension { group, kind, name }| ExtensionRef {
                        group: group.clone(),
                        kind: kind.clone(),
                        name: name.clone(),
                    },
                )),
            }
        }

        fn redirect(r: &RedirectT) -> Redirect {
            let RedirectT {
                hostname,
                path,
                port,
                scheme,
                status_code,
            } = r;
            Redirect {
                scheme: scheme.as_ref().map(|s| match s {
                    RedirectScheme::Http => S::Http,
                    RedirectScheme::Https => S::Https,
                }),
                hostname: hostname.clone(),
                path: path.as_ref().map(
                    |RedirectPath {
                         replace_full_path,
                         replace_prefix_match,
                         r#type,
                     }| PathChange {
                        prefix: *r#type == RedirectPathType::ReplacePrefixMatch,
                        replace_full_path: replace_full_path.clone(),
                        replace_prefix_match: replace_prefix_match.clone(),
                    },
                ),
                port: *port,
                status_code: *status_code,
            }
        }

        fn rewrite(r: &RewriteT) -> Rewrite {
            let RewriteT { hostname, path } = r;
            Rewrite {
                hostname: hostname.clone(),
                path: path.as_ref().map(
                    |RewritePath {
                         replace_full_path,
                         replace_prefix_match,
                         r#type,
                     }| PathChange {
                        prefix: *r#type == RewritePathType::ReplacePrefixMatch,
                        replace_full_path: replace_full_path.clone(),
                        replace_prefix_match: replace_prefix_match.clone(),
                    },
                ),
            }
        }

        fn cors_policy(c: &CorsT) -> Cors {
            let CorsT {
                allow_credentials,
                allow_headers,
                allow_methods,
                allow_origins,
                expose_headers,
                max_age,
            } = c;
            Cors {
                allow_origins: allow_origins.clone(),
                allow_methods: allow_methods.clone(),
                allow_headers: allow_headers.clone(),
                expose_headers: expose_headers.clone(),
                allow_credentials: *allow_credentials,
                max_age: *max_age,
            }
        }
    };
}

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

    filter_conversion!();
}

/// The form of an HTTPRoute; `extras` is what the parser kept beside it (`model::HttpRouteExtras`).
pub fn route(key: &ObjectKey, route: &HttpRoute, extras: Option<&HttpRouteExtras>) -> RouteSpec {
    let HttpRoute {
        metadata,
        spec: HttpRouteSpec {
            hostnames,
            parent_refs,
            rules,
        },
        status: _,
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
