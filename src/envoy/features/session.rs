//! Session persistence (GEP-1619): the `envoy.filters.http.stateful_session` filter in the connection
//! manager with no session state of its own (so it does nothing by default), and each route's cookie or
//! header session in its per-route config. Non-strict: a token naming an endpoint that is gone falls
//! back to the load balancer, and the answer carries a new token (GEP-1619's fallback).

use super::super::pb::{ext, hcm, http_types, protobuf, session_cookie, session_header, stateful_session};
use super::super::typed_extension as typed;
use crate::ir;

pub(in crate::envoy) fn http_filter() -> hcm::HttpFilter {
    super::http_filter(
        ext::STATEFUL_SESSION_FILTER,
        stateful_session::StatefulSession::default(),
    )
}

pub(in crate::envoy) fn per_route(s: &ir::Session) -> (String, protobuf::Any) {
    let state = match s {
        ir::Session::Cookie {
            name,
            path,
            ttl_seconds,
        } => typed(
            ext::SESSION_COOKIE,
            session_cookie::CookieBasedSessionState {
                cookie: Some(http_types::Cookie {
                    name: name.clone(),
                    // Zero: a session cookie, without Expires or Max-Age.
                    ttl: Some(protobuf::Duration {
                        seconds: ttl_seconds.map_or(0, |t| i64::try_from(t).unwrap_or(i64::MAX)),
                        nanos: 0,
                    }),
                    path: path.clone(),
                    ..Default::default()
                }),
            },
        ),
        ir::Session::Header { name } => typed(
            ext::SESSION_HEADER,
            session_header::HeaderBasedSessionState { name: name.clone() },
        ),
    };
    let per_route = stateful_session::StatefulSessionPerRoute {
        r#override: Some(stateful_session::stateful_session_per_route::Override::StatefulSession(
            stateful_session::StatefulSession {
                session_state: Some(state),
                strict: false,
                ..Default::default()
            },
        )),
    };
    (
        ext::STATEFUL_SESSION_FILTER.to_string(),
        envoy_types::util::pack_any(per_route),
    )
}
