//! Session persistence (GEP-1619) judged: what a rule's or a Backend's `sessionPersistence` asks for, as
//! Envoy's stateful session filter can give it (`ir::Session`), or why it cannot.
//!
//! Envoy keeps a session with a cookie or a header that encodes the endpoint's address; a token naming
//! an endpoint that is gone is ignored (non-strict mode) and a new one is issued, which is the fallback
//! GEP-1619 asks for. What Envoy cannot express is refused, never approximated:
//!
//! - `idleTimeout` (v1.0–v1.6; removed upstream in #4771): Envoy tracks no idleness;
//! - `absoluteTimeout` on a `Session` cookie: Envoy's only expiry is the cookie's `Max-Age`, which makes
//!   it a permanent cookie;
//! - `absoluteTimeout` on a header session: a header has no expiry Envoy enforces;
//! - a `Permanent` cookie without `absoluteTimeout` (upstream's own validation requires it).
//!
//! Precedence: a rule's own `sessionPersistence` wins over its Backend's (GEP-1619: route rule
//! configuration MUST override backend-level configuration), and the route's status says so.

use crate::api::session::{LifetimeType, SessionPersistence, SessionType};
use crate::ir;

/// The cookie path when none is given (GEP-1619: implementations MUST default it to `/`).
const DEFAULT_PATH: &str = "/";

/// `sp` (found at `field`) as Envoy serves it; `default_name` names a cookie that has none (GEP-1619:
/// a unique name SHOULD be generated).
pub fn judge(sp: &SessionPersistence, field: &str, default_name: &str) -> Result<ir::Session, String> {
    if sp.idle_timeout.is_some() {
        return Err(format!(
            "{field}.idleTimeout: Envoy's stateful sessions have no idle timeout (and Gateway API removed the field); remove it"
        ));
    }
    let ty = sp.type_.unwrap_or(SessionType::Cookie);
    let both = |a: &str, b: &str| format!("{field}: set {a} or {b}, not both");
    match ty {
        SessionType::Header => {
            if sp.cookie.is_some() || sp.cookie_config.is_some() {
                return Err(format!("{field}: cookie settings on a Header session"));
            }
            if sp.absolute_timeout.is_some() {
                return Err(format!(
                    "{field}.absoluteTimeout: a header session has no expiry Envoy can enforce; remove it or use a Permanent cookie"
                ));
            }
            let name = match (&sp.header, &sp.session_name) {
                (Some(_), Some(_)) => return Err(both("header.name", "sessionName")),
                (Some(h), None) => h.name.clone(),
                (None, Some(n)) => n.clone(),
                (None, None) => return Err(format!("{field}.header.name: must be set for a Header session")),
            };
            Ok(ir::Session::Header {
                name: header_name(&name, field)?,
            })
        }
        SessionType::Cookie => {
            if sp.header.is_some() {
                return Err(format!("{field}.header: header settings on a Cookie session"));
            }
            let cookie = sp.cookie.clone().unwrap_or_default();
            let name = match (&cookie.name, &sp.session_name) {
                (Some(_), Some(_)) => return Err(both("cookie.name", "sessionName")),
                (Some(n), None) | (None, Some(n)) => n.clone(),
                (None, None) => default_name.to_string(),
            };
            let lifetime = match (
                &cookie.lifetime_type,
                sp.cookie_config.as_ref().and_then(|c| c.lifetime_type.as_ref()),
            ) {
                (Some(_), Some(_)) => return Err(both("cookie.lifetimeType", "cookieConfig.lifetimeType")),
                (Some(l), None) | (None, Some(l)) => *l,
                (None, None) => LifetimeType::Session,
            };
            let ttl = timeout(sp, field)?;
            let ttl_seconds = match (lifetime, ttl) {
                (LifetimeType::Permanent, Some(s)) => Some(s),
                (LifetimeType::Permanent, None) => {
                    return Err(format!(
                        "{field}.absoluteTimeout: must be set for a Permanent cookie (it becomes the cookie's Max-Age)"
                    ));
                }
                (LifetimeType::Session, Some(_)) => {
                    return Err(format!(
                        "{field}.absoluteTimeout: a Session cookie with an absolute timeout needs the proxy to track its expiry, and Envoy's only expiry is Max-Age, which would make it a Permanent cookie; set lifetimeType: Permanent, or remove the timeout"
                    ));
                }
                (LifetimeType::Session, None) => None,
            };
            let path = cookie.path.unwrap_or_else(|| DEFAULT_PATH.to_string());
            if !path.starts_with('/') || path.contains(';') || path.chars().any(char::is_control) {
                return Err(format!(
                    "{field}.cookie.path: {path:?} is not a cookie path (starts with /, no ';')"
                ));
            }
            Ok(ir::Session::Cookie {
                name: cookie_name(&name, field)?,
                path,
                ttl_seconds,
            })
        }
    }
}

/// `absoluteTimeout` in whole seconds (Max-Age counts seconds); at least one.
fn timeout(sp: &SessionPersistence, field: &str) -> Result<Option<u64>, String> {
    let Some(t) = &sp.absolute_timeout else { return Ok(None) };
    let ms = crate::gateway::duration::duration_ms(t).map_err(|e| format!("{field}.absoluteTimeout: {e}"))?;
    if ms == 0 || ms % 1000 != 0 {
        return Err(format!(
            "{field}.absoluteTimeout: {t} is not a whole number of seconds, which is what a cookie's Max-Age counts"
        ));
    }
    Ok(Some(ms / 1000))
}

/// An RFC 6265 cookie name: a token.
fn cookie_name(name: &str, field: &str) -> Result<String, String> {
    token(name).map_err(|c| format!("{field}: cookie name {name:?} has {c:?}, which a cookie name may not"))
}

/// An HTTP header name: a token, sent lowercase.
fn header_name(name: &str, field: &str) -> Result<String, String> {
    token(name)
        .map(|n| n.to_ascii_lowercase())
        .map_err(|c| format!("{field}: header name {name:?} has {c:?}, which a header name may not"))
}

fn token(s: &str) -> Result<String, char> {
    const SEPARATORS: &str = "()<>@,;:\\\"/[]?={} \t";
    if s.is_empty() {
        return Err(' ');
    }
    match s
        .chars()
        .find(|c| !c.is_ascii() || c.is_ascii_control() || SEPARATORS.contains(*c))
    {
        Some(c) => Err(c),
        None => Ok(s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::session::{CookieConfig, HeaderConfig, LegacyCookieConfig};

    fn cookie(lifetime: Option<LifetimeType>, timeout: Option<&str>) -> SessionPersistence {
        SessionPersistence {
            absolute_timeout: timeout.map(str::to_string),
            cookie: Some(CookieConfig {
                name: Some("sid".into()),
                path: None,
                lifetime_type: lifetime,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn cookies_are_session_cookies_at_slash_unless_permanent_with_a_timeout() {
        assert_eq!(
            judge(&cookie(None, None), "f", "d"),
            Ok(ir::Session::Cookie {
                name: "sid".into(),
                path: "/".into(),
                ttl_seconds: None
            })
        );
        let permanent = judge(&cookie(Some(LifetimeType::Permanent), Some("1h")), "f", "d").unwrap();
        assert!(matches!(
            permanent,
            ir::Session::Cookie {
                ttl_seconds: Some(3600),
                ..
            }
        ));
        assert!(judge(&cookie(Some(LifetimeType::Permanent), None), "f", "d").is_err());
        assert!(
            judge(&cookie(None, Some("10m")), "f", "d")
                .unwrap_err()
                .contains("Max-Age")
        );
        assert!(judge(&cookie(Some(LifetimeType::Permanent), Some("1500ms")), "f", "d").is_err());
    }

    #[test]
    fn the_v16_shape_reads_and_what_envoy_cannot_do_is_refused() {
        let legacy = SessionPersistence {
            session_name: Some("Legacy".into()),
            absolute_timeout: Some("30s".into()),
            cookie_config: Some(LegacyCookieConfig {
                lifetime_type: Some(LifetimeType::Permanent),
            }),
            ..Default::default()
        };
        assert!(matches!(
            judge(&legacy, "f", "d"),
            Ok(ir::Session::Cookie {
                ttl_seconds: Some(30),
                ..
            })
        ));
        let idle = SessionPersistence {
            idle_timeout: Some("5m".into()),
            ..Default::default()
        };
        assert!(judge(&idle, "f", "d").unwrap_err().contains("idleTimeout"));
        let header = SessionPersistence {
            type_: Some(SessionType::Header),
            header: Some(HeaderConfig {
                name: "X-Session".into(),
            }),
            ..Default::default()
        };
        assert_eq!(
            judge(&header, "f", "d"),
            Ok(ir::Session::Header {
                name: "x-session".into()
            })
        );
        let timed = SessionPersistence {
            absolute_timeout: Some("1h".into()),
            ..header
        };
        assert!(judge(&timed, "f", "d").is_err());
        let unnamed = SessionPersistence::default();
        assert!(
            matches!(judge(&unnamed, "f", "pier-session-x"), Ok(ir::Session::Cookie { name, .. }) if name == "pier-session-x")
        );
    }
}

/// One weighted share of a rule, as far as sessions go: which Backend (if it resolved) and its session.
pub struct Share<'a> {
    pub origin: Option<&'a ir::Origin>,
    pub session: Option<&'a ir::Session>,
    pub weight: u32,
}

/// A rule's session, and what its route's status should say about the choice.
#[derive(Debug, Default, PartialEq)]
pub struct Settled {
    pub session: Option<ir::Session>,
    pub notes: Vec<String>,
}

/// The rule's own session (judged) wins; else the session of the one Backend it forwards to. Envoy picks
/// the backend of a split by weight before it reads the session, so a session cannot hold across one: a
/// rule that asks for that is refused (`Err`), and Backend sessions in a split are not applied (noted).
pub fn settle(own: Option<ir::Session>, shares: &[Share<'_>]) -> Result<Settled, String> {
    let forwarded: Vec<&Share<'_>> = shares.iter().filter(|s| s.weight > 0).collect();
    let describe = |o: &ir::Origin| format!("{} {}/{}", o.kind, o.namespace, o.name);
    let mut out = Settled::default();
    match (own, forwarded.as_slice()) {
        (Some(_), [_, _, ..]) => Err(format!(
            "sessionPersistence: the rule splits its traffic over {} backendRefs, and Envoy picks the backend by weight before it reads the session, so a session could not stay on its endpoint; use one backendRef",
            forwarded.len()
        )),
        (Some(session), one) => {
            if let [
                Share {
                    origin: Some(o),
                    session: Some(_),
                    ..
                },
            ] = one
            {
                out.notes.push(format!(
                    "the rule's sessionPersistence takes precedence over {}'s (GEP-1619)",
                    describe(o)
                ));
            }
            out.session = Some(session);
            Ok(out)
        }
        (None, [only]) => {
            out.session = only.session.cloned();
            Ok(out)
        }
        (None, many) => {
            for s in many.iter().filter(|s| s.session.is_some()) {
                if let Some(o) = s.origin {
                    out.notes.push(format!(
                        "sessionPersistence of {} is not applied: the rule splits its traffic over {} backendRefs, and Envoy picks the backend by weight before it reads the session",
                        describe(o),
                        many.len()
                    ));
                }
            }
            Ok(out)
        }
    }
}
