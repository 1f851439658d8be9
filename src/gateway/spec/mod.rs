//! pier's own typed form of a route, the one attachment and rule translation read: an HTTPRoute
//! (`http`, with what the parser set aside beside it) and a GRPCRoute (`grpc`) both become a
//! [`RouteSpec`].
//!
//! Why a form of its own: the `gateway-api` crate generates one Rust type per place a schema appears
//! (a header modifier on a rule and on a backendRef are different types, and GRPCRoute's are different
//! again), so code written against those types is written four times or converted through JSON. Here
//! each generated type is destructured once, field by field — a field added upstream is a compile error
//! in `http` or `grpc`, never a setting silently dropped — into one type per concept. The form keeps
//! what was written (strings, optional payloads) and decides nothing: validation and defaults stay in
//! `rules` and `filters`, so a filter whose `type` names a payload that is missing still reaches them
//! and is refused with the same message whichever route kind carried it.
//!
//! A GRPCRoute's method matches become path matches here (`grpc`), and each match keeps the service and
//! method lengths GRPCRoute precedence ranks by ([`Match::grpc_rank`]).

mod convert;
pub mod grpc;
pub mod http;

use std::cmp::Ordering;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::consts::{KIND_GRPCROUTE, KIND_HTTPROUTE};
use crate::model::{HttpRouteRetry, Meta, Name, ObjectKey};

/// The route kinds pier attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    Http,
    Grpc,
}

impl RouteKind {
    pub fn name(self) -> &'static str {
        match self {
            RouteKind::Http => KIND_HTTPROUTE,
            RouteKind::Grpc => KIND_GRPCROUTE,
        }
    }

    /// Prefix of Envoy route names (`ir::names::route`).
    pub fn prefix(self) -> &'static str {
        match self {
            RouteKind::Http => "httproute",
            RouteKind::Grpc => "grpcroute",
        }
    }
}

/// One route of either kind.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteSpec {
    pub kind: RouteKind,
    pub key: ObjectKey,
    pub generation: i64,
    /// Where the route stands among all routes of both kinds.
    pub order: Arc<RouteOrder>,
    pub parent_refs: Vec<ParentRef>,
    pub hostnames: Vec<String>,
    pub rules: Vec<Rule>,
}

impl RouteSpec {
    pub fn generation(&self) -> i64 {
        self.generation
    }
}

/// A route's place in Gateway API precedence across both kinds: the older route first (one without
/// `creationTimestamp`, typical in files, counts as newer than any that has one), then
/// `{namespace}/{name}` of its metadata (`order::older_first`), then HTTPRoute before GRPCRoute, then
/// its key — a total order, so it can key maps and break every tie the same way in every translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteOrder {
    created: Option<Time>,
    namespace: Option<Name>,
    name: Option<Name>,
    kind: RouteKind,
    key: ObjectKey,
}

impl RouteOrder {
    pub fn new(metadata: &Meta, kind: RouteKind, key: &ObjectKey) -> Self {
        Self {
            created: metadata.creation_timestamp.clone(),
            namespace: metadata.namespace.clone(),
            name: metadata.name.clone(),
            kind,
            key: key.clone(),
        }
    }
}

impl Ord for RouteOrder {
    fn cmp(&self, other: &Self) -> Ordering {
        crate::gateway::order::older_first(self.created.as_ref(), other.created.as_ref())
            .then_with(|| self.namespace.cmp(&other.namespace))
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.kind.cmp(&other.kind))
            .then_with(|| self.key.cmp(&other.key))
    }
}

impl PartialOrd for RouteOrder {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    pub name: Option<String>,
    /// As written; none means one default match (every request).
    pub matches: Vec<Match>,
    pub filters: Vec<Filter>,
    pub backend_refs: Vec<BackendRef>,
    pub timeouts: Option<Timeouts>,
    /// The experimental `retry` (kept by the parser beside the standard type).
    pub retry: Option<HttpRouteRetry>,
    /// Filter types the parser did not know (set aside from the rule): the rule fails closed.
    pub unknown_filters: Vec<String>,
    /// Experimental rule fields pier does not serve: the rule is refused.
    pub unsupported_fields: Vec<String>,
    /// `sessionPersistence` (GEP-1619), as written.
    pub session_persistence: Option<crate::api::session::SessionPersistence>,
    /// Why the rule cannot be served, found while reading it (a GRPCRoute method match that has no
    /// path form).
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Match {
    pub path: Option<PathMatch>,
    pub headers: Vec<ValueMatch>,
    pub query_params: Vec<ValueMatch>,
    /// An HTTP method (`GET`, ...).
    pub method: Option<String>,
    /// GRPCRoute: characters of the matched service and method, the first two GRPCRoute precedence
    /// criteria after hostnames.
    pub grpc_rank: Option<(usize, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Exact,
    PathPrefix,
    RegularExpression,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMatch {
    /// `None`: Gateway API's default, `PathPrefix`.
    pub kind: Option<PathKind>,
    /// `None`: Gateway API's default, `/`.
    pub value: Option<String>,
}

/// A header or query parameter match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueMatch {
    pub name: String,
    pub value: String,
    pub regex: bool,
}

/// A reference to a backend (`backendRefs[]`, a mirror's `backendRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub port: Option<i32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BackendRef {
    pub target: Ref,
    pub weight: Option<i32>,
    pub filters: Vec<Filter>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts {
    pub request: Option<String>,
    pub backend_request: Option<String>,
}

/// One filter: its type, and the payload of that type if it was written.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    RequestHeaderModifier(Option<HeaderModifier>),
    ResponseHeaderModifier(Option<HeaderModifier>),
    RequestRedirect(Option<Redirect>),
    UrlRewrite(Option<Rewrite>),
    RequestMirror(Option<Mirror>),
    Cors(Option<Cors>),
    ExtensionRef(Option<ExtensionRef>),
}

impl Filter {
    /// The filter type as Gateway API spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Filter::RequestHeaderModifier(_) => "RequestHeaderModifier",
            Filter::ResponseHeaderModifier(_) => "ResponseHeaderModifier",
            Filter::RequestRedirect(_) => "RequestRedirect",
            Filter::UrlRewrite(_) => "URLRewrite",
            Filter::RequestMirror(_) => "RequestMirror",
            Filter::Cors(_) => "CORS",
            Filter::ExtensionRef(_) => "ExtensionRef",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderModifier {
    pub add: Vec<(String, String)>,
    pub set: Vec<(String, String)>,
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub scheme: Option<Scheme>,
    pub hostname: Option<String>,
    pub path: Option<PathChange>,
    pub port: Option<i32>,
    pub status_code: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub hostname: Option<String>,
    pub path: Option<PathChange>,
}

/// A redirect's or rewrite's `path`: `ReplaceFullPath` or `ReplacePrefixMatch`, with both values as
/// written (only the one its type names is used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    pub prefix: bool,
    pub replace_full_path: Option<String>,
    pub replace_prefix_match: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    pub backend: Ref,
    pub percent: Option<i32>,
    /// `(numerator, denominator)`.
    pub fraction: Option<(i32, Option<i32>)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cors {
    pub allow_origins: Option<Vec<String>>,
    pub allow_methods: Option<Vec<String>>,
    pub allow_headers: Option<Vec<String>>,
    pub expose_headers: Option<Vec<String>>,
    pub allow_credentials: Option<bool>,
    pub max_age: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}
