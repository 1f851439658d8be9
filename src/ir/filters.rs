//! What an HTTPRoute rule adds around its action: header changes, rewrites and redirects, mirrors, CORS,
//! timeouts, retries, the rule name, and a backendRef's own header changes. Re-exported by `ir`.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// A route's [`RouteFilters`], boxed only when it has any. Most routes have none, and the empty set
/// inline made every route entry the engine keeps 500 bytes larger. Reads see the empty set through
/// `Deref`; a write through `DerefMut` makes it real.
#[derive(Clone, Default)]
pub struct Filters(Option<Box<RouteFilters>>);

static NO_FILTERS: RouteFilters = RouteFilters {
    request_headers: HeaderModifier::NONE,
    response_headers: HeaderModifier::NONE,
    rewrite: None,
    mirrors: Vec::new(),
    cors: None,
    timeouts: Timeouts {
        request_ms: None,
        backend_request_ms: None,
    },
    retry: None,
    rule_name: None,
    session: None,
};

impl Deref for Filters {
    type Target = RouteFilters;
    fn deref(&self) -> &RouteFilters {
        self.0.as_deref().unwrap_or(&NO_FILTERS)
    }
}

impl DerefMut for Filters {
    fn deref_mut(&mut self) -> &mut RouteFilters {
        self.0.get_or_insert_with(Default::default)
    }
}

impl From<RouteFilters> for Filters {
    fn from(f: RouteFilters) -> Self {
        Filters((f != NO_FILTERS).then(|| Box::new(f)))
    }
}

/// Equal when the filters are, boxed or not.
impl PartialEq for Filters {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Filters {}

impl fmt::Debug for Filters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// What a rule adds around its action: its filters, timeouts, retry policy and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteFilters {
    /// Changes to the request before it goes upstream.
    pub request_headers: HeaderModifier,
    /// Changes to the response before it goes back to the client.
    pub response_headers: HeaderModifier,
    /// URL rewrite of a forwarded request (ignored by other actions).
    pub rewrite: Option<Rewrite>,
    /// Copies of each forwarded request sent elsewhere, their responses ignored (`RequestMirror`).
    pub mirrors: Vec<Mirror>,
    /// Cross-origin policy answered by the proxy (`CORS`).
    pub cors: Option<Cors>,
    /// Rule `timeouts` (forwarded requests only).
    pub timeouts: Timeouts,
    /// Rule `retry` (forwarded requests only).
    pub retry: Option<Retry>,
    /// The rule's `name`, so an Envoy route can be traced back to the rule that made it.
    pub rule_name: Option<String>,
    /// Session persistence (GEP-1619): the rule's own, else its one Backend's.
    pub session: Option<Session>,
}

/// How a client is kept on the endpoint its session started on. A session whose endpoint is gone moves
/// to another and gets a new token (Envoy's non-strict mode), as GEP-1619 asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// A cookie the proxy sets; `ttl_seconds` makes it permanent (`Max-Age`), `None` a session cookie.
    Cookie {
        name: String,
        path: String,
        ttl_seconds: Option<u64>,
    },
    /// A response header the client must send back.
    Header { name: String },
}

/// One `RequestMirror`: a resolved cluster and the share of requests copied to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    pub cluster: super::Name,
    /// `None`: every request.
    pub fraction: Option<Fraction>,
}

/// `numerator / denominator` of requests; `0 < denominator`, `numerator <= denominator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fraction {
    pub numerator: u32,
    pub denominator: u32,
}

/// Gateway API `HTTPCORSFilter`, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cors {
    /// `*`, an exact origin (`https://a.example.com`), or one whose host has a left-hand `*`
    /// (`https://*.example.com`: any number of labels).
    pub allow_origins: Vec<String>,
    /// Methods, or just `*` (the proxy echoes the requested method).
    pub allow_methods: Vec<String>,
    /// Header names, or just `*` (the proxy echoes the requested headers).
    pub allow_headers: Vec<String>,
    pub expose_headers: Vec<String>,
    pub allow_credentials: bool,
    pub max_age_seconds: u32,
}

/// Gateway API `HTTPRouteTimeouts` in milliseconds; `Some(0)` disables that timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// The whole request, retries included.
    pub request_ms: Option<u64>,
    /// Each request to a backend (each try).
    pub backend_request_ms: Option<u64>,
}

/// Gateway API `HTTPRouteRetry`: connection failures and resets are always retried; `codes` adds
/// response status codes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retry {
    /// Retries after the first try; `None`: the proxy's default.
    pub attempts: Option<u32>,
    pub codes: Vec<u16>,
    /// Minimum wait before a retry.
    pub backoff_ms: Option<u64>,
}

/// Per-backendRef filters that stay per backend (a weighted cluster's own header changes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendFilters {
    pub request_headers: HeaderModifier,
    pub response_headers: HeaderModifier,
}

impl BackendFilters {
    pub fn is_empty(&self) -> bool {
        self.request_headers.is_empty() && self.response_headers.is_empty()
    }
}

/// Gateway API `HTTPHeaderFilter`: names as written (HTTP compares them case-insensitively).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderModifier {
    /// Appended to any existing value.
    pub add: Vec<(String, String)>,
    /// Replaces any existing value.
    pub set: Vec<(String, String)>,
    pub remove: Vec<String>,
}

impl HeaderModifier {
    const NONE: HeaderModifier = HeaderModifier {
        add: Vec::new(),
        set: Vec::new(),
        remove: Vec::new(),
    };

    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.set.is_empty() && self.remove.is_empty()
    }
}

/// Gateway API `HTTPURLRewriteFilter`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewrite {
    /// Replaces the Host / :authority sent upstream.
    pub hostname: Option<String>,
    pub path: Option<PathRewrite>,
}

/// How a rewrite or a redirect changes the path (the query string is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRewrite {
    /// The whole path becomes this value.
    Full(String),
    /// The element-wise prefix `matched` (the route's PathPrefix match) is replaced by `replacement`.
    Prefix { matched: String, replacement: String },
}

/// Gateway API `HTTPRequestRedirectFilter`: unset parts keep the request's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// `http` or `https`.
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub port: Option<u16>,
    pub path: Option<PathRewrite>,
    /// 301, 302, 303, 307 or 308.
    pub status: u16,
}
