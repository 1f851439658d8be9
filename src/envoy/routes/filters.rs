//! What HTTPRoute rule filters become on an Envoy route: header changes (`request_headers_to_add` /
//! `_remove`, `response_headers_to_add` / `_remove`, on the route or on one weighted cluster for a
//! backendRef's own filters), the URL rewrite of a forwarded request (`host_rewrite_literal`,
//! `prefix_rewrite` / `regex_rewrite`) and the redirect answer (`RedirectAction`).
//!
//! A weighted cluster's header changes are applied before the route's (Envoy's order for
//! `ClusterWeight.request_headers_to_add`), so where both set one header the rule's value wins.

use crate::envoy::pb::matcher::{RegexMatchAndSubstitute, RegexMatcher};
use crate::envoy::pb::{core, route};
use crate::ir;

/// Sets the header changes of `filters` on `r`.
pub(super) fn apply_headers(r: &mut route::Route, filters: &ir::RouteFilters) {
    r.request_headers_to_add = headers_to_add(&filters.request_headers);
    r.request_headers_to_remove = filters.request_headers.remove.clone();
    r.response_headers_to_add = headers_to_add(&filters.response_headers);
    r.response_headers_to_remove = filters.response_headers.remove.clone();
}

/// Sets one backendRef's own header changes on its weighted-cluster entry.
pub(super) fn apply_backend_headers(c: &mut route::weighted_cluster::ClusterWeight, f: &ir::BackendFilters) {
    c.request_headers_to_add = headers_to_add(&f.request_headers);
    c.request_headers_to_remove = f.request_headers.remove.clone();
    c.response_headers_to_add = headers_to_add(&f.response_headers);
    c.response_headers_to_remove = f.response_headers.remove.clone();
}

/// `add` appends to an existing value (`APPEND_IF_EXISTS_OR_ADD`), `set` replaces it
/// (`OVERWRITE_IF_EXISTS_OR_ADD`).
fn headers_to_add(m: &ir::HeaderModifier) -> Vec<core::HeaderValueOption> {
    use core::header_value_option::HeaderAppendAction;
    let option = |(name, value): &(String, String), action: HeaderAppendAction| core::HeaderValueOption {
        header: Some(core::HeaderValue {
            key: name.clone(),
            value: value.clone(),
            ..Default::default()
        }),
        append_action: action as i32,
        ..Default::default()
    };
    m.add
        .iter()
        .map(|h| option(h, HeaderAppendAction::AppendIfExistsOrAdd))
        .chain(
            m.set
                .iter()
                .map(|h| option(h, HeaderAppendAction::OverwriteIfExistsOrAdd)),
        )
        .collect()
}

/// The URL rewrite of a forwarded request.
pub(super) fn apply_rewrite(action: &mut route::RouteAction, rewrite: &ir::Rewrite) {
    use route::route_action::HostRewriteSpecifier;
    if let Some(host) = &rewrite.hostname {
        action.host_rewrite_specifier = Some(HostRewriteSpecifier::HostRewriteLiteral(host.clone()));
    }
    match rewrite.path.as_ref().map(path_rewrite) {
        Some(PathChange::Prefix(p)) => action.prefix_rewrite = p,
        Some(PathChange::Regex(r)) => action.regex_rewrite = Some(r),
        None => {}
    }
}

/// The redirect answer, on a listener at `at`. Gateway API (`HTTPRequestRedirectFilter.port`): the port
/// is the one given, else (`gateway::filters` fills it in) the scheme's well-known port, else the
/// listener's; and it "SHOULD NOT" appear in `Location` when it is the well-known port of the redirect's
/// scheme (http 80, https 443). Envoy writes any `port_redirect` it is given, and otherwise keeps the
/// request's authority, whose port the connection manager has already stripped
/// (`strip_any_host_port`, `listeners`): so a well-known port is left unset, any other is set.
pub(super) fn redirect(r: &ir::Redirect, at: super::Listening) -> route::route::Action {
    use route::redirect_action::{PathRewriteSpecifier, RedirectResponseCode, SchemeRewriteSpecifier};
    let code = match r.status {
        301 => RedirectResponseCode::MovedPermanently,
        303 => RedirectResponseCode::SeeOther,
        307 => RedirectResponseCode::TemporaryRedirect,
        308 => RedirectResponseCode::PermanentRedirect,
        _ => RedirectResponseCode::Found,
    };
    let path = r.path.as_ref().map(|p| match p {
        ir::PathRewrite::Full(full) => PathRewriteSpecifier::PathRedirect(full.clone()),
        prefix => match path_rewrite(prefix) {
            PathChange::Prefix(p) => PathRewriteSpecifier::PrefixRewrite(p),
            PathChange::Regex(re) => PathRewriteSpecifier::RegexRewrite(re),
        },
    });
    route::route::Action::Redirect(route::RedirectAction {
        scheme_rewrite_specifier: r.scheme.clone().map(SchemeRewriteSpecifier::SchemeRedirect),
        host_redirect: r.hostname.clone().unwrap_or_default(),
        port_redirect: redirect_port(r, at),
        path_rewrite_specifier: path,
        response_code: code as i32,
        ..Default::default()
    })
}

fn redirect_port(r: &ir::Redirect, at: super::Listening) -> u32 {
    let port = r.port.unwrap_or(at.port);
    let https = match r.scheme.as_deref() {
        Some(scheme) => scheme == "https",
        None => at.https,
    };
    let well_known = if https { 443 } else { 80 };
    if port == well_known { 0 } else { u32::from(port) }
}

#[derive(Debug, PartialEq)]
enum PathChange {
    Prefix(String),
    Regex(RegexMatchAndSubstitute),
}

/// A path change in Envoy terms (the query string is never touched). Matched prefixes are element-wise
/// and compared without trailing slashes (as `matching::path_specifier` builds them), and Gateway API
/// treats `/xyz/` as `/xyz` as the replacement of a prefix. `prefix_rewrite` replaces the matched
/// characters only, so it is right only when both sides are non-empty after trimming: `/foo` → `/xyz`
/// turns `/foo/bar` into `/xyz/bar`. Otherwise it would produce `//bar` (`/foo` → `/`) or `/xyzbar`
/// (prefix `/` → `/xyz`), so a regex rewrite is used instead, as Envoy Gateway does for the first case.
fn path_rewrite(p: &ir::PathRewrite) -> PathChange {
    let regex = |pattern: String, substitution: String| {
        PathChange::Regex(RegexMatchAndSubstitute {
            pattern: Some(RegexMatcher {
                regex: pattern,
                ..Default::default()
            }),
            substitution,
        })
    };
    match p {
        ir::PathRewrite::Full(full) => regex("^/.*$".into(), substitution(full)),
        ir::PathRewrite::Prefix { matched, replacement } => {
            let matched = matched.trim_end_matches('/');
            let replacement = replacement.trim_end_matches('/');
            if replacement.is_empty() {
                // `/foo`, `/foo/` and `/foo/bar` become `/`, `/` and `/bar`.
                regex(format!("^{}/*", regex::escape(matched)), "/".into())
            } else if matched.is_empty() {
                // Prefix `/` matches every path: `/bar` becomes `/xyz/bar`.
                regex("^/".into(), format!("{}/", substitution(replacement)))
            } else {
                PathChange::Prefix(replacement.to_string())
            }
        }
    }
}

/// A literal as an RE2 substitution (a backslash would start a capture group reference).
fn substitution(s: &str) -> String {
    s.replace('\\', "\\\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(matched: &str, replacement: &str) -> PathChange {
        path_rewrite(&ir::PathRewrite::Prefix {
            matched: matched.into(),
            replacement: replacement.into(),
        })
    }

    fn re(p: &PathChange) -> (&str, &str) {
        match p {
            PathChange::Regex(r) => (r.pattern.as_ref().unwrap().regex.as_str(), r.substitution.as_str()),
            other => panic!("regex expected, got {other:?}"),
        }
    }

    #[test]
    fn prefix_replacement_never_doubles_or_loses_a_slash() {
        assert_eq!(prefix("/foo", "/xyz"), PathChange::Prefix("/xyz".into()));
        assert_eq!(prefix("/foo/", "/xyz/"), PathChange::Prefix("/xyz".into()));
        assert_eq!(re(&prefix("/foo", "/")), ("^/foo/*", "/"));
        assert_eq!(re(&prefix("/foo", "")), ("^/foo/*", "/"));
        assert_eq!(re(&prefix("/a.b", "/")), (r"^/a\.b/*", "/"));
        assert_eq!(re(&prefix("/", "/xyz")), ("^/", "/xyz/"));
        assert_eq!(re(&prefix("/", "/")), ("^/*", "/"));
        assert_eq!(
            re(&path_rewrite(&ir::PathRewrite::Full("/new".into()))),
            ("^/.*$", "/new")
        );
    }

    #[test]
    fn redirect_ports_follow_gateway_api() {
        let port = |scheme: Option<&str>, port: Option<u16>, listener: u16, https: bool| {
            let r = ir::Redirect {
                scheme: scheme.map(String::from),
                hostname: None,
                port,
                path: None,
                status: 302,
            };
            redirect_port(&r, super::super::Listening { port: listener, https })
        };
        // Neither given: the listener's port, left out when it is the listener scheme's own.
        assert_eq!(port(None, None, 80, false), 0);
        assert_eq!(port(None, None, 8080, false), 8080);
        assert_eq!(port(None, None, 443, true), 0);
        // Scheme given: `gateway::filters` has filled in its port; left out of Location.
        assert_eq!(port(Some("https"), Some(443), 8080, false), 0);
        assert_eq!(port(Some("http"), Some(80), 443, true), 0);
        // Port given: kept unless it is the well-known port of the (request's) scheme.
        assert_eq!(port(None, Some(443), 443, true), 0);
        assert_eq!(port(None, Some(80), 443, true), 80);
        assert_eq!(port(Some("https"), Some(8443), 80, false), 8443);
    }

    #[test]
    fn redirect_codes_and_parts() {
        let r = ir::Redirect {
            scheme: Some("https".into()),
            hostname: Some("example.com".into()),
            port: Some(8443),
            path: Some(ir::PathRewrite::Full("/x".into())),
            status: 301,
        };
        let at = super::super::Listening { port: 80, https: false };
        let route::route::Action::Redirect(a) = redirect(&r, at) else {
            panic!("redirect expected")
        };
        assert_eq!(a.response_code, 0, "MOVED_PERMANENTLY");
        assert_eq!((a.host_redirect.as_str(), a.port_redirect), ("example.com", 8443));
        assert_eq!(
            a.path_rewrite_specifier,
            Some(route::redirect_action::PathRewriteSpecifier::PathRedirect("/x".into()))
        );
    }
}
