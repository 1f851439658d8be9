//! The conversion bodies HTTPRoute and GRPCRoute share. The gateway-api crate generates a distinct type
//! for each place a schema appears (a rule's filters, a backendRef's filters, each route kind's parent
//! and backend references), so each conversion is a macro expanded where the caller has aliased that
//! place's type names: one body to review, no hand-copied variants that can drift apart.

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
pub(super) use filter_conversion;
