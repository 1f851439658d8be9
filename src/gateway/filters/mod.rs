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

use super::conditions::RouteReason;
use super::spec::{self, Filter, PathKind};
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
    /// Session persistence, once `gateway::rules` settled the rule's own against its Backend's.
    pub session: Option<ir::Session>,
}

impl RuleFilters {
    /// Whether the rule answers with a redirect (and so never uses its backendRefs).
    pub fn redirects(&self) -> bool {
        self.redirect.is_some()
    }

    /// For a rule whose backend answers with long-lived event streams (MCP over streamable HTTP): with
    /// no `timeouts` written, the route timeout is disabled rather than left at Envoy's 15 s default,
    /// which would cut every server-sent event stream after 15 s. Idle streams are still ended by the
    /// listener's stream idle timeout; timeouts the rule writes are kept as written.
    pub fn no_default_deadline(&mut self) {
        if self.timeouts == ir::Timeouts::default() {
            self.timeouts.request_ms = Some(0);
        }
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
            session: self.session.clone(),
        };
        let redirect = self.redirect.as_ref().map(|(r, p)| ir::Redirect {
            path: p.as_ref().and_then(resolve),
            ..r.clone()
        });
        (filters, redirect)
    }
}

/// The rule's filters, timeouts, retry and name, or why the rule cannot be served. Filter types the
/// parser did not know (`spec::Rule::unknown_filters`) make the rule fail closed.
pub fn parse(rule: &spec::Rule) -> Result<RuleFilters, String> {
    let backends = backend::split(rule)?;
    let mut out = RuleFilters {
        per_backend: backends.per_backend,
        timeouts: timing::timeouts(rule.timeouts.as_ref())?,
        retry: timing::retry(rule.retry.as_ref())?,
        name: rule.name.clone(),
        ..Default::default()
    };
    let mut seen: Vec<&'static str> = Vec::new();
    for f in rule.filters.iter().chain(&backends.lifted) {
        let repeatable = matches!(f, Filter::ExtensionRef(_) | Filter::RequestMirror(_));
        if seen.contains(&f.type_name()) && !repeatable {
            return Err(format!("filter {} is given more than once", f.type_name()));
        }
        seen.push(f.type_name());
        apply(f, &mut out)?;
    }
    if let Some(t) = rule.unknown_filters.first() {
        let why = format!("filter type {t} is not supported; the rule answers 500");
        out.fail_closed = Some((RouteReason::UnsupportedValue, why));
    }
    if out.redirect.is_some() && out.rewrite.is_some() {
        return Err("RequestRedirect and URLRewrite filters are mutually exclusive".into());
    }
    let prefix_replace = matches!(&out.rewrite, Some((_, Some(PathModifier::Prefix(_)))))
        || matches!(&out.redirect, Some((_, Some(PathModifier::Prefix(_)))));
    // No matches means the default PathPrefix `/`; a match without a path is PathPrefix `/` too.
    let all_prefix = rule
        .matches
        .iter()
        .all(|m| m.path.as_ref().and_then(|p| p.kind).unwrap_or(PathKind::PathPrefix) == PathKind::PathPrefix);
    if prefix_replace && !all_prefix {
        return Err("path type ReplacePrefixMatch requires a PathPrefix match".into());
    }
    Ok(out)
}

/// The request and response header changes of a header-modifier filter (the other one `None`).
pub(super) fn header_modifiers(f: &Filter) -> Result<(Option<ir::HeaderModifier>, Option<ir::HeaderModifier>), String> {
    match f {
        Filter::RequestHeaderModifier(m) => Ok((Some(headers(payload(f, m, "requestHeaderModifier")?)?), None)),
        Filter::ResponseHeaderModifier(m) => Ok((None, Some(headers(payload(f, m, "responseHeaderModifier")?)?))),
        _ => Ok((None, None)),
    }
}

/// A filter's payload, which its `type` requires.
fn payload<'a, T>(f: &Filter, p: &'a Option<T>, field: &str) -> Result<&'a T, String> {
    p.as_ref()
        .ok_or_else(|| format!("filter {} has no {field}", f.type_name()))
}

fn apply(f: &Filter, out: &mut RuleFilters) -> Result<(), String> {
    match f {
        Filter::RequestHeaderModifier(_) | Filter::ResponseHeaderModifier(_) => {
            let (request, response) = header_modifiers(f)?;
            if let Some(m) = request {
                out.request_headers = m;
            }
            if let Some(m) = response {
                out.response_headers = m;
            }
        }
        Filter::RequestRedirect(r) => out.redirect = Some(redirect(payload(f, r, "requestRedirect")?)?),
        Filter::UrlRewrite(r) => {
            let spec::Rewrite { hostname, path } = payload(f, r, "urlRewrite")?;
            out.rewrite = Some((hostname.clone(), path.as_ref().map(path_modifier).transpose()?));
        }
        Filter::RequestMirror(m) => out.mirrors.push(mirror::parse(payload(f, m, "requestMirror")?)?),
        Filter::Cors(c) => out.cors = Some(cors::parse(payload(f, c, "cors")?)?),
        Filter::ExtensionRef(e) => {
            let e = payload(f, e, "extensionRef")?;
            if out.fail_closed.is_none() {
                let why = format!(
                    "filter ExtensionRef {}/{} {:?}: pier implements no extension filters; the rule answers 500",
                    e.group, e.kind, e.name
                );
                out.fail_closed = Some((RouteReason::InvalidKind, why));
            }
        }
    }
    Ok(())
}

/// `RequestRedirect`: status 301, 302 (default), 303, 307 or 308; a port in range; with a `scheme` and no
/// `port`, the scheme's well-known port — `HTTPRequestRedirectFilter.port`: "If redirect scheme is
/// not-empty, the redirect port MUST be the well-known port associated with the redirect scheme" (the
/// request's port otherwise).
fn redirect(r: &spec::Redirect) -> Result<(ir::Redirect, Option<PathModifier>), String> {
    let spec::Redirect {
        scheme,
        hostname,
        path,
        port,
        status_code,
    } = r;
    let status = match status_code.unwrap_or(302) {
        s @ (301 | 302 | 303 | 307 | 308) => s as u16,
        s => return Err(format!("redirect statusCode {s} is not one of 301, 302, 303, 307, 308")),
    };
    let port = port
        .map(|p| {
            u16::try_from(p)
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("redirect port {p} is out of range"))
        })
        .transpose()?;
    let path = path.as_ref().map(path_modifier).transpose()?;
    let (scheme, well_known) = match scheme {
        Some(spec::Scheme::Http) => (Some("http".to_string()), Some(80)),
        Some(spec::Scheme::Https) => (Some("https".to_string()), Some(443)),
        None => (None, None),
    };
    let redirect = ir::Redirect {
        scheme,
        hostname: hostname.clone(),
        port: port.or(well_known),
        path: None,
        status,
    };
    Ok((redirect, path))
}

fn path_modifier(p: &spec::PathChange) -> Result<PathModifier, String> {
    let spec::PathChange {
        prefix,
        replace_full_path,
        replace_prefix_match,
    } = p;
    let (value, what) = if *prefix {
        (replace_prefix_match, "ReplacePrefixMatch needs replacePrefixMatch")
    } else {
        (replace_full_path, "ReplaceFullPath needs replaceFullPath")
    };
    let value = value.as_deref().ok_or_else(|| format!("path type {what}"))?;
    let empty_prefix = *prefix && value.is_empty();
    if !(value.starts_with('/') || empty_prefix) {
        return Err(format!("path {value:?} must start with '/'"));
    }
    Ok(if *prefix {
        PathModifier::Prefix(value.to_string())
    } else {
        PathModifier::Full(value.to_string())
    })
}

/// A header modifier; Envoy refuses to touch `host` and pseudo-headers, so such a modifier is refused.
/// Names and values are held to Gateway API's schema (a token of at most 256 characters; a value of at
/// most 4096 bytes), which files skip: Envoy refuses a name outside the token set or a value with NUL,
/// CR or LF, and would refuse the whole shared route configuration over it.
fn headers(m: &spec::HeaderModifier) -> Result<ir::HeaderModifier, String> {
    let spec::HeaderModifier { add, set, remove } = m;
    let check = |name: &String| {
        if name.is_empty() || name.starts_with(':') || name.eq_ignore_ascii_case("host") {
            Err(format!("header {name:?} cannot be modified"))
        } else if name.len() > 256 || !name.bytes().all(is_token_byte) {
            let shown: String = name.chars().take(64).collect();
            Err(format!(
                "header name {shown:?} is not an HTTP token of at most 256 characters"
            ))
        } else {
            Ok(name.clone())
        }
    };
    let value = |name: &str, v: &String| {
        if v.len() > 4096 || v.bytes().any(|b| matches!(b, 0 | b'\r' | b'\n')) {
            Err(format!(
                "header {name:?}: a value must be at most 4096 bytes, without NUL, CR or LF"
            ))
        } else {
            Ok(v.clone())
        }
    };
    let pairs = |list: &[(String, String)]| -> Result<Vec<(String, String)>, String> {
        list.iter().map(|(n, v)| Ok((check(n)?, value(n, v)?))).collect()
    };
    Ok(ir::HeaderModifier {
        add: pairs(add)?,
        set: pairs(set)?,
        remove: remove.iter().map(check).collect::<Result<_, _>>()?,
    })
}

/// RFC 9110 `tchar`: the bytes of a header name.
pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
