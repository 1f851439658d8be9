//! HTTPRoute rule filters, timeouts, retry and name → `ir::RouteFilters`, redirects and mirrors.
//!
//! Served: `RequestHeaderModifier`, `ResponseHeaderModifier`, `RequestRedirect`, `URLRewrite`,
//! `RequestMirror` (`mirror`; several per rule), `CORS` (`cors`), per-backendRef filters (`backend`), and
//! the rule's `timeouts` and `retry` (`timing`).
//!
//! Refused, in two ways:
//! - A rule the Gateway API forbids, or that pier cannot serve as written, is dropped whole (serving it
//!   without that part would modify traffic differently than written) and the route says so with
//!   `PartiallyInvalid` (`Accepted=False/UnsupportedValue` if no rule is left): `RequestRedirect`
//!   together with `URLRewrite`, a `ReplacePrefixMatch` path without a `PathPrefix` match, the same core
//!   filter twice, a header modifier on `Host` (or a pseudo-header), which Envoy cannot modify, invalid
//!   values (a mirror fraction above 1, a CORS origin that is not one, a malformed duration,
//!   `backendRequest` longer than `request`), and a redirect, rewrite, mirror or CORS filter on one of
//!   several backendRefs.
//! - A filter that must not be skipped fails closed: the rule stays, and every request it matches gets
//!   HTTP 500. `ExtensionRef`: "If a reference to a custom filter type cannot be resolved, the filter MUST
//!   NOT be skipped. Instead, requests that would have been processed by that filter MUST receive a HTTP
//!   error response" (`HTTPRouteFilter`); pier resolves no extension kind, so the route gets
//!   `ResolvedRefs=False/InvalidKind` (the reason Gateway API gives for "a reference to an unknown or
//!   unsupported Group and/or Kind") and stays `Accepted`. A filter `type` pier does not know (the parser
//!   sets it aside, `model::HttpRouteExtras`): "Unknown values here must result in the implementation
//!   setting the Accepted Condition for the Route to `status: False`, with a Reason of
//!   `UnsupportedValue`" — pier sets that reason, on `PartiallyInvalid` when other rules are served, and
//!   answers 500 rather than let the rule's requests fall through to another route.
//!
//! A redirect rule answers the redirect and never forwards, so its backendRefs, mirrors, timeouts and
//! retry are not used (the mirrors are not even resolved: nothing of them reaches Envoy or status). A
//! redirect with `scheme` and no `port` goes to the scheme's well-known port (80, 443), as
//! `HTTPRequestRedirectFilter.port` requires.

pub mod backend;
pub mod cors;
pub mod mirror;
#[cfg(test)]
mod tests;
pub mod timing;

use crate::model::HttpRouteRetry as HttpRouteRulesRetry;
use gateway_api::apis::standard::httproutes::{
    HttpRouteRules, HttpRouteRulesFilters, HttpRouteRulesFiltersRequestRedirectPathType as RedirectPathType,
    HttpRouteRulesFiltersRequestRedirectScheme as Scheme, HttpRouteRulesFiltersType as FilterType,
    HttpRouteRulesFiltersUrlRewritePathType as RewritePathType, HttpRouteRulesMatchesPathType as PathType,
};

use super::conditions::RouteReason;
use crate::ir;

/// A path change before it meets a match: a prefix replacement needs the match's prefix.
#[derive(Debug, Clone, PartialEq)]
enum PathModifier {
    Full(String),
    Prefix(String),
}

/// The filters (and timeouts, retry, name) of one rule, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleFilters {
    request_headers: ir::HeaderModifier,
    response_headers: ir::HeaderModifier,
    rewrite: Option<(Option<String>, Option<PathModifier>)>,
    redirect: Option<(ir::Redirect, Option<PathModifier>)>,
    /// Mirrors as written; `gateway::routes` resolves their backendRefs.
    pub mirrors: Vec<mirror::MirrorSpec>,
    cors: Option<ir::Cors>,
    timeouts: ir::Timeouts,
    retry: Option<ir::Retry>,
    name: Option<String>,
    /// Header changes per backendRef, in backendRef order.
    pub per_backend: Vec<ir::BackendFilters>,
    /// Why the rule must answer 500 instead (a filter that must not be skipped), with the condition
    /// reason to report it under.
    pub fail_closed: Option<(RouteReason, String)>,
}

impl RuleFilters {
    /// Whether the rule answers with a redirect (and so never uses its backendRefs).
    pub fn redirects(&self) -> bool {
        self.redirect.is_some()
    }

    /// The filters of the route entry of one match, and the redirect replacing its action, if any.
    /// `mirrors` are this rule's mirrors that resolved.
    pub fn for_match(&self, path: &ir::PathMatch, mirrors: &[ir::Mirror]) -> (ir::RouteFilters, Option<ir::Redirect>) {
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
            mirrors: mirrors.to_vec(),
            cors: self.cors.clone(),
            timeouts: self.timeouts,
            retry: self.retry.clone(),
            rule_name: self.name.clone(),
        };
        let redirect = self.redirect.as_ref().map(|(r, p)| ir::Redirect {
            path: p.as_ref().and_then(resolve),
            ..r.clone()
        });
        (filters, redirect)
    }
}

/// The rule's filters, timeouts, retry (`model::HttpRouteExtras`) and name, or why the rule cannot be
/// served. `unknown` are filter types the parser did not know (set aside from the rule).
pub fn parse(
    rule: &HttpRouteRules,
    retry: Option<&HttpRouteRulesRetry>,
    unknown: &[String],
) -> Result<RuleFilters, String> {
    let backends = backend::split(rule)?;
    let mut out = RuleFilters {
        per_backend: backends.per_backend,
        timeouts: timing::timeouts(rule.timeouts.as_ref())?,
        retry: timing::retry(retry)?,
        name: rule.name.clone(),
        ..Default::default()
    };
    let mut seen: Vec<&FilterType> = Vec::new();
    for f in rule.filters.iter().flatten().chain(&backends.lifted) {
        if seen.contains(&&f.r#type) && !matches!(f.r#type, FilterType::ExtensionRef | FilterType::RequestMirror) {
            return Err(format!("filter {} is given more than once", name(&f.r#type)));
        }
        seen.push(&f.r#type);
        apply(f, &mut out)?;
    }
    if let Some(t) = unknown.first() {
        let why = format!("filter type {t} is not supported; the rule answers 500");
        out.fail_closed = Some((super::conditions::RouteReason::UnsupportedValue, why));
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

/// The request and response header changes of a header-modifier filter (the other one `None`).
pub(super) fn header_modifiers(
    f: &HttpRouteRulesFilters,
) -> Result<(Option<ir::HeaderModifier>, Option<ir::HeaderModifier>), String> {
    let missing = |field: &str| format!("filter {} has no {field}", name(&f.r#type));
    match f.r#type {
        FilterType::RequestHeaderModifier => {
            let m = f
                .request_header_modifier
                .as_ref()
                .ok_or_else(|| missing("requestHeaderModifier"))?;
            let h = headers(
                m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                m.remove.iter().flatten(),
            )?;
            Ok((Some(h), None))
        }
        FilterType::ResponseHeaderModifier => {
            let m = f
                .response_header_modifier
                .as_ref()
                .ok_or_else(|| missing("responseHeaderModifier"))?;
            let h = headers(
                m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                m.remove.iter().flatten(),
            )?;
            Ok((None, Some(h)))
        }
        _ => Ok((None, None)),
    }
}

fn apply(f: &HttpRouteRulesFilters, out: &mut RuleFilters) -> Result<(), String> {
    let missing = |field: &str| format!("filter {} has no {field}", name(&f.r#type));
    match f.r#type {
        FilterType::RequestHeaderModifier | FilterType::ResponseHeaderModifier => {
            let (request, response) = header_modifiers(f)?;
            if let Some(m) = request {
                out.request_headers = m;
            }
            if let Some(m) = response {
                out.response_headers = m;
            }
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
            // `HTTPRequestRedirectFilter.port`: "If redirect scheme is not-empty, the redirect port MUST
            // be the well-known port associated with the redirect scheme" (the request's port otherwise).
            let (scheme, well_known) = match r.scheme {
                Some(Scheme::Http) => (Some("http".to_string()), Some(80)),
                Some(Scheme::Https) => (Some("https".to_string()), Some(443)),
                None => (None, None),
            };
            let redirect = ir::Redirect {
                scheme,
                hostname: r.hostname.clone(),
                port: port.or(well_known),
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
        FilterType::RequestMirror => {
            let m = f.request_mirror.as_ref().ok_or_else(|| missing("requestMirror"))?;
            out.mirrors.push(mirror::parse(m)?);
        }
        FilterType::Cors => {
            let c = f.cors.as_ref().ok_or_else(|| missing("cors"))?;
            out.cors = Some(cors::parse(c)?);
        }
        FilterType::ExtensionRef => {
            let e = f.extension_ref.as_ref().ok_or_else(|| missing("extensionRef"))?;
            if out.fail_closed.is_none() {
                let why = format!(
                    "filter ExtensionRef {}/{} {:?}: pier implements no extension filters; the rule answers 500",
                    e.group, e.kind, e.name
                );
                out.fail_closed = Some((super::conditions::RouteReason::InvalidKind, why));
            }
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
