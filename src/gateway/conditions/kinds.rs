//! The condition vocabularies, one per object kind pier writes status for, plus the shared vocabularies
//! of helpers used by several kinds. Every name is upstream Gateway API's unless marked "pier".

use super::{CommonTypes, labels, widen};

labels! {
    pub enum ClassType { Accepted }
    pub enum ClassReason { Accepted, InvalidParameters }

    pub enum GatewayType { Accepted, Programmed, ResolvedRefs }
    pub enum GatewayReason {
        Accepted,
        Programmed,
        ResolvedRefs,
        InvalidParameters,
        ListenersNotValid,
        Invalid,
        UnsupportedAddress,
        AddressNotAssigned,
        AddressNotUsable,
        RefNotPermitted,
        InvalidClientCertificateRef,
    }

    pub enum ListenerType { Accepted, ResolvedRefs, Conflicted, Programmed }
    pub enum ListenerReason {
        Accepted,
        ResolvedRefs,
        Programmed,
        NoConflicts,
        Invalid,
        UnsupportedProtocol,
        InvalidCertificateRef,
        InvalidRouteKinds,
        HostnameConflict,
        ProtocolConflict,
        RefNotPermitted,
        NoValidCACertificate,
        InvalidCACertificateRef,
        /// Gateway `spec.tls.frontend`: a CA reference of a kind pier cannot read.
        InvalidCACertificateKind,
    }

    /// HTTPRoute and GRPCRoute.
    pub enum RouteType {
        Accepted,
        ResolvedRefs,
        PartiallyInvalid,
        /// pier: whether proxyless gRPC clients of the parent Gateway are served this GRPCRoute, at
        /// which `xds:///HOST:PORT` targets, and what they are refused (`envoy::proxyless`). An
        /// implementation's own condition type, so domain-prefixed as Gateway API asks.
        ProxylessGrpc = "pier.dev/ProxylessGRPC",
    }
    pub enum RouteReason {
        Accepted,
        ResolvedRefs,
        NotAllowedByListeners,
        NoMatchingListenerHostname,
        NoMatchingParent,
        UnsupportedValue,
        HostnameConflict,
        BackendNotFound,
        InvalidKind,
        RefNotPermitted,
        /// pier: the backendRef's target (a Backend) exists but is not accepted; the message repeats why.
        InvalidBackend,
        UnsupportedProtocol,
        /// pier: a proxy rejected the configuration built from this object, which pier quarantined
        /// (`runtime::contain`); the message quotes Envoy.
        RejectedByProxy,
    }

    /// BackendTLSPolicy.
    pub enum PolicyType { Accepted, ResolvedRefs }
    pub enum PolicyReason {
        Accepted,
        ResolvedRefs,
        Conflicted,
        Invalid,
        TargetNotFound,
        NoValidCACertificate,
        InvalidCACertificateRef,
        InvalidKind,
        /// pier: a proxy rejected the configuration built from this object, which pier quarantined
        /// (`runtime::contain`); the message quotes Envoy.
        RejectedByProxy,
    }

    /// XBackend, the standard-group Backend, and Envoy Gateway's Backend. Upstream defines only the
    /// `Accepted` type for them; the reasons beyond upstream's are pier's.
    pub enum BackendType {
        Accepted,
        ResolvedRefs,
        /// pier: set on a `Backend` written in the draft `spec.destination` shape, and on an XBackend or
        /// GEP-4488 Backend whose port is the v1.6.0 `spec.port.port`.
        Deprecated,
        /// pier: with `--resolve-hostnames pier`, where the Backend's hostnames resolved and which
        /// answers the guardrails dropped.
        Resolved,
    }
    pub enum BackendReason {
        Accepted,
        ResolvedRefs,
        Invalid,
        UnsupportedValue,
        /// pier: a destination guardrail refused the address or hostname; the message names the rule.
        DestinationNotAllowed,
        /// pier: a reference of the Backend (client certificate, selectorRef) did not resolve.
        UnresolvedRefs,
        /// pier: the Backend uses the draft `spec.destination` shape.
        DraftShape,
        /// pier: the Backend's port is the v1.6.0 `spec.port.port`, not the v1.7 `spec.port.number`.
        PortPortShape,
        /// pier (`Resolved`): every hostname resolved and some answer is allowed.
        Resolved,
        /// pier (`Resolved`): a lookup failed; the name's last answer is served for a bounded time.
        ServingStaleAnswer,
        /// pier (`Resolved`): the answers were all refused by the guardrails, or there were none.
        NoAllowedAddress,
        /// pier (`Resolved`): lookups fail and no earlier answer is left to serve.
        LookupFailed,
        /// pier (`Resolved`): the hostname has not been looked up yet.
        NotResolvedYet,
        RefNotPermitted,
        BackendNotFound,
        InvalidKind,
        NoValidCACertificate,
        InvalidCACertificateRef,
        InvalidClientCertificateRef,
        /// pier: a proxy rejected the configuration built from this object, which pier quarantined
        /// (`runtime::contain`); the message quotes Envoy.
        RejectedByProxy,
    }

    /// Where a shared helper's problem lands on the object that holds the reference.
    pub enum SharedType { Accepted, ResolvedRefs }
    /// Trust bundles and server validation (`gateway::tls`), shared by policies and Backends.
    pub enum TlsReason { Invalid, NoValidCACertificate, InvalidKind, InvalidCACertificateRef }
    /// A Service's endpoints (`gateway::backends::endpoints`), shared by routes and Backends.
    pub enum EndpointsReason { BackendNotFound, InvalidKind }
}

macro_rules! common_types {
    ($($ty:ident),+) => {$(
        impl CommonTypes for $ty {
            const ACCEPTED: Self = $ty::Accepted;
            const RESOLVED_REFS: Self = $ty::ResolvedRefs;
        }
    )+};
}
common_types!(
    GatewayType,
    ListenerType,
    RouteType,
    PolicyType,
    BackendType,
    SharedType
);

widen!(SharedType => PolicyType, BackendType, RouteType: [Accepted, ResolvedRefs]);
widen!(TlsReason => PolicyReason, BackendReason: [Invalid, NoValidCACertificate, InvalidKind, InvalidCACertificateRef]);
widen!(EndpointsReason => RouteReason, BackendReason: [BackendNotFound, InvalidKind]);

pub type ClassCondition = super::Condition<ClassType, ClassReason>;
pub type GatewayCondition = super::Condition<GatewayType, GatewayReason>;
pub type ListenerCondition = super::Condition<ListenerType, ListenerReason>;
pub type RouteCondition = super::Condition<RouteType, RouteReason>;
pub type PolicyCondition = super::Condition<PolicyType, PolicyReason>;
pub type BackendCondition = super::Condition<BackendType, BackendReason>;

pub type RouteProblem = super::Problem<RouteType, RouteReason>;
pub type PolicyProblem = super::Problem<PolicyType, PolicyReason>;
pub type BackendProblem = super::Problem<BackendType, BackendReason>;
pub type TlsProblem = super::Problem<SharedType, TlsReason>;
pub type EndpointsProblem = super::Problem<SharedType, EndpointsReason>;
