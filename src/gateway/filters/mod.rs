//! HTTPRoute rule filters → `ir::RouteFilters` and redirects.
//!
//! Implemented: `RequestHeaderModifier`, `ResponseHeaderModifier`, `RequestRedirect` and `URLRewrite`.
//! A rule with any other filter (`RequestMirror`, `CORS`, `ExtensionRef`) is dropped whole, as is a rule
//! the Gateway API forbids: `RequestRedirect` together with `URLRewrite`, a `ReplacePrefixMatch` path
//! without a `PathPrefix` match, the same core filter twice, or a header modifier on `Host` (or a
//! pseudo-header), which Envoy cannot modify. A redirect rule answers the redirect and never forwards,
//! so its backendRefs are not used.

use gateway_api::apis::standard::httproutes::{
    HttpRouteRules, HttpRouteRulesFilters, HttpRouteRulesFiltersRequestRedirectPathType as RedirectPathType,
    HttpRouteRulesFiltersRequestRedirectScheme as Scheme, HttpRouteRulesFiltersType as FilterType,
    HttpRouteRulesFiltersUrlRewritePathType as RewritePathType, HttpRouteRulesMatchesPathType as PathType,
};

use crate::ir;

/// A path change before it meets a match: a prefix replacement needs the match's prefix.
#[derive(Debug, Clone, PartialEq)]
enum PathModifier {
    Full(String),
    Prefix(String),
}

/// The filters of one rule, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleFilters {
    request_headers: ir::HeaderModifier,
    response_headers: ir::HeaderModifier,
    rewrite: Option<(Option<String>, Option<PathModifier>)>,
    redirect: Option<(ir::Redirect, Option<PathModifier>)>,
}

impl RuleFilters {
    /// Whether the rule answers with a redirect (and so never uses its backendRefs).
    pub fn redirects(&self) -> bool {
        self.redirect.is_some()
    }

    /// The filters of the route entry of one match, and the redirect replacing its action, if any.
    pub fn for_match(&self, path: &ir::PathMatch) -> (ir::RouteFilters, Option<ir::Redirect>) {
        let resolve = |p: &PathModifier| match (p, path) {
            (PathModifier::Full(full), _) => Some(ir::PathRewrite::Full(full.clone())),
            (PathModifier::Prefix(replacement), ir::PathMatch::Prefix(matched)) => Some(ir::PathRewrite::Prefix {
                matched: matched.clone(),
                replacement: replacement.clone(),
            }),
            // Refused by `parse`.
            (PathModifier::Prefix(_), _) => None,
        };
        let filters = ir::RouteFilters {
            request_headers: self.request_headers.clone(),
            response_headers: self.response_headers.clone(),
            rewrite: self.rewrite.as_ref().map(|(hostname, p)| ir::Rewrite {
                hostname: hostname.clone(),
                path: p.as_ref().and_then(resolve),
            }),
        };
        let redirect = self.redirect.as_ref().map(|(r, p)| ir::Redirect {
            path: p.as_ref().and_then(resolve),
            ..r.clone()
        });
        (filters, redirect)
    }
}

/// The rule's filters, or why the rule cannot be served.
pub fn parse(rule: &HttpRouteRules) -> Result<RuleFilters, String> {
    let mut out = RuleFilters::default();
    let mut seen: Vec<&FilterType> = Vec::new();
    for f in rule.filters.iter().flatten() {
        if seen.contains(&&f.r#type) && !matches!(f.r#type, FilterType::ExtensionRef | FilterType::RequestMirror) {
            return Err(format!("filter {} is given more than once", name(&f.r#type)));
        }
        seen.push(&f.r#type);
        apply(f, &mut out)?;
    }
    if out.redirect.is_some() && out.rewrite.is_some() {
        return Err("RequestRedirect and URLRewrite filters are mutually exclusive".into());
    }
    let prefix_replace = matches!(&out.rewrite, Some((_, Some(PathModifier::Prefix(_)))))
        || matches!(&out.redirect, Some((_, Some(PathModifier::Prefix(_)))));
    if prefix_replace {
        // No matches means the default PathPrefix `/`; a match without a path is PathPrefix `/` too.
        let all_prefix = rule.matches.iter().flatten().all(|m| {
            m.path
                .as_ref()
                .and_then(|p| p.r#type.clone())
                .unwrap_or(PathType::PathPrefix)
                == PathType::PathPrefix
        });
        if !all_prefix {
            return Err("path type ReplacePrefixMatch requires a PathPrefix match".into());
        }
    }
    Ok(out)
}

fn apply(f: &HttpRouteRulesFilters, out: &mut RuleFilters) -> Result<(), String> {
    let missing = |field: &str| format!("filter {} has no {field}", name(&f.r#type));
    match f.r#type {
        FilterType::RequestHeaderModifier => {
            let m = f
                .request_header_modifier
                .as_ref()
                .ok_or_else(|| missing("requestHeaderModifier"))?;
            out.request_headers = headers(
                m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                m.remove.iter().flatten(),
            )?;
        }
        FilterType::ResponseHeaderModifier => {
            let m = f
                .response_header_modifier
                .as_ref()
                .ok_or_else(|| missing("responseHeaderModifier"))?;
            out.response_headers = headers(
                m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                m.remove.iter().flatten(),
            )?;
        }
        FilterType::RequestRedirect => {
            let r = f.request_redirect.as_ref().ok_or_else(|| missing("requestRedirect"))?;
            let status = match r.status_code.unwrap_or(302) {
                s @ (301 | 302 | 303 | 307 | 308) => s as u16,
                s => return Err(format!("redirect statusCode {s} is not one of 301, 302, 303, 307, 308")),
            };
            let port = match r.port {
                None => None,
                Some(p) => Some(
                    u16::try_from(p)
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| format!("redirect port {p} is out of range"))?,
                ),
            };
            let path = match &r.path {
                None => None,
                Some(p) => Some(path_modifier(
                    p.r#type == RedirectPathType::ReplacePrefixMatch,
                    p.replace_full_path.as_deref(),
                    p.replace_prefix_match.as_deref(),
                )?),
            };
            let redirect = ir::Redirect {
                scheme: r.scheme.as_ref().map(|s| match s {
                    Scheme::Http => "http".to_string(),
                    Scheme::Https => "https".to_string(),
                }),
                hostname: r.hostname.clone(),
                port,
                path: None,
                status,
            };
            out.redirect = Some((redirect, path));
        }
        FilterType::UrlRewrite => {
            let r = f.url_rewrite.as_ref().ok_or_else(|| missing("urlRewrite"))?;
            let path = match &r.path {
                None => None,
                Some(p) => Some(path_modifier(
                    p.r#type == RewritePathType::ReplacePrefixMatch,
                    p.replace_full_path.as_deref(),
                    p.replace_prefix_match.as_deref(),
                )?),
            };
            out.rewrite = Some((r.hostname.clone(), path));
        }
        FilterType::ExtensionRef => return Err("ExtensionRef filters are not supported".into()),
        FilterType::RequestMirror | FilterType::Cors => {
            return Err(format!("filter {} is not implemented yet", name(&f.r#type)));
        }
    }
    Ok(())
}

fn path_modifier(prefix: bool, full: Option<&str>, replace_prefix: Option<&str>) -> Result<PathModifier, String> {
    let value = if prefix { replace_prefix } else { full };
    let what = if prefix {
        "ReplacePrefixMatch needs replacePrefixMatch"
    } else {
        "ReplaceFullPath needs replaceFullPath"
    };
    let value = value.ok_or_else(|| format!("path type {what}"))?;
    let empty_prefix = prefix && value.is_empty();
    if !(value.starts_with('/') || empty_prefix) {
        return Err(format!("path {value:?} must start with '/'"));
    }
    Ok(if prefix {
        PathModifier::Prefix(value.to_string())
    } else {
        PathModifier::Full(value.to_string())
    })
}

/// A header modifier; Envoy refuses to touch `host` and pseudo-headers, so such a modifier is refused.
fn headers<'a>(
    add: impl Iterator<Item = (&'a String, &'a String)>,
    set: impl Iterator<Item = (&'a String, &'a String)>,
    remove: impl Iterator<Item = &'a String>,
) -> Result<ir::HeaderModifier, String> {
    let check = |name: &String| {
        if name.is_empty() || name.starts_with(':') || name.eq_ignore_ascii_case("host") {
            Err(format!("header {name:?} cannot be modified"))
        } else {
            Ok(name.clone())
        }
    };
    let pairs = |it: &mut dyn Iterator<Item = (&'a String, &'a String)>| -> Result<Vec<(String, String)>, String> {
        it.map(|(n, v)| Ok((check(n)?, v.clone()))).collect()
    };
    Ok(ir::HeaderModifier {
        add: pairs(&mut { add })?,
        set: pairs(&mut { set })?,
        remove: remove.map(check).collect::<Result<_, _>>()?,
    })
}

fn name(t: &FilterType) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{t:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(yaml: &str) -> HttpRouteRules {
        serde_yaml::from_str(yaml).unwrap()
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
            ("{filters: [{type: CORS, cors: {}}]}", "CORS is not implemented"),
            (
                "{filters: [{type: ExtensionRef, extensionRef: {group: x, kind: Y, name: z}}]}",
                "not supported",
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
        let (filters, redirect) = f.for_match(&ir::PathMatch::Prefix("/old".into()));
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
}
