//! Condition types and reasons, spelled once. Upstream Gateway API names are used wherever upstream
//! defines one; pier's own reasons (marked below) cover what upstream leaves open, such as a Backend
//! refused by a destination guardrail. Call sites use these constants, never string literals.
//!
//! Conditions carry no timestamp: the translator is pure, and the status writer adds
//! `lastTransitionTime` when a condition's status actually changes.

use serde::Serialize;

// Condition types.
pub const ACCEPTED: &str = "Accepted";
pub const RESOLVED_REFS: &str = "ResolvedRefs";
pub const PROGRAMMED: &str = "Programmed";
pub const CONFLICTED: &str = "Conflicted";
pub const PARTIALLY_INVALID: &str = "PartiallyInvalid";
/// pier: set on a `Backend` written in the draft `spec.destination` shape.
pub const DEPRECATED: &str = "Deprecated";

/// Reasons, by the object they appear on.
pub mod reason {
    // Shared positive reasons.
    pub const ACCEPTED: &str = "Accepted";
    pub const RESOLVED_REFS: &str = "ResolvedRefs";
    pub const PROGRAMMED: &str = "Programmed";
    pub const NO_CONFLICTS: &str = "NoConflicts";

    // GatewayClass / Gateway / listeners (upstream).
    pub const INVALID_PARAMETERS: &str = "InvalidParameters";
    pub const LISTENERS_NOT_VALID: &str = "ListenersNotValid";
    pub const INVALID: &str = "Invalid";
    pub const UNSUPPORTED_PROTOCOL: &str = "UnsupportedProtocol";
    pub const INVALID_CERTIFICATE_REF: &str = "InvalidCertificateRef";
    pub const INVALID_ROUTE_KINDS: &str = "InvalidRouteKinds";
    pub const INVALID_CLIENT_CERTIFICATE_REF: &str = "InvalidClientCertificateRef";
    pub const HOSTNAME_CONFLICT: &str = "HostnameConflict";
    pub const PROTOCOL_CONFLICT: &str = "ProtocolConflict";
    pub const UNSUPPORTED_ADDRESS: &str = "UnsupportedAddress";
    pub const ADDRESS_NOT_ASSIGNED: &str = "AddressNotAssigned";
    pub const ADDRESS_NOT_USABLE: &str = "AddressNotUsable";

    // Routes (upstream).
    pub const NOT_ALLOWED_BY_LISTENERS: &str = "NotAllowedByListeners";
    pub const NO_MATCHING_LISTENER_HOSTNAME: &str = "NoMatchingListenerHostname";
    pub const NO_MATCHING_PARENT: &str = "NoMatchingParent";
    pub const UNSUPPORTED_VALUE: &str = "UnsupportedValue";
    pub const BACKEND_NOT_FOUND: &str = "BackendNotFound";
    pub const INVALID_KIND: &str = "InvalidKind";
    pub const REF_NOT_PERMITTED: &str = "RefNotPermitted";
    /// pier: the backendRef's target (a Backend) exists but is not accepted; the message repeats why.
    pub const INVALID_BACKEND: &str = "InvalidBackend";

    // BackendTLSPolicy (upstream).
    pub const CONFLICTED: &str = "Conflicted";
    pub const TARGET_NOT_FOUND: &str = "TargetNotFound";
    pub const NO_VALID_CA_CERTIFICATE: &str = "NoValidCACertificate";
    pub const INVALID_CA_CERTIFICATE_REF: &str = "InvalidCACertificateRef";
    /// Gateway `spec.tls.frontend`: a CA reference of a kind pier cannot read.
    pub const INVALID_CA_CERTIFICATE_KIND: &str = "InvalidCACertificateKind";

    // Backend kinds (pier; upstream defines only the `Accepted` type).
    /// A destination guardrail refused the address or hostname; the message names the rule.
    pub const DESTINATION_NOT_ALLOWED: &str = "DestinationNotAllowed";
    /// A reference of the Backend (client certificate, selectorRef) did not resolve.
    pub const UNRESOLVED_REFS: &str = "UnresolvedRefs";
    /// The Backend uses the draft `spec.destination` shape.
    pub const DRAFT_SHAPE: &str = "DraftShape";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Status {
    True,
    False,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: &'static str,
    pub status: Status,
    pub reason: &'static str,
    pub message: String,
    pub observed_generation: i64,
}

impl Condition {
    pub fn new(
        type_: &'static str,
        status: Status,
        reason: &'static str,
        message: impl Into<String>,
        generation: i64,
    ) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
            observed_generation: generation,
        }
    }
    pub fn ok(type_: &'static str, reason: &'static str, message: impl Into<String>, generation: i64) -> Self {
        Self::new(type_, Status::True, reason, message, generation)
    }
    pub fn fail(type_: &'static str, reason: &'static str, message: impl Into<String>, generation: i64) -> Self {
        Self::new(type_, Status::False, reason, message, generation)
    }
}

/// A problem found while resolving something: which condition it lands on, the reason, the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Problem {
    pub fn accepted(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            type_: ACCEPTED,
            reason,
            message: message.into(),
        }
    }
    pub fn refs(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            type_: RESOLVED_REFS,
            reason,
            message: message.into(),
        }
    }
}
