//! pier's own CRD types: the Backend kinds that the `gateway-api` crate does not carry.
//!
//! - [`xbackend`]: upstream `XBackend` (`gateway.networking.x-k8s.io/v1alpha1`) plus the GEP-4488
//!   `Backend` (`gateway.networking.k8s.io/v1alpha1`), which share one spec.
//! - [`draft`]: the earlier draft `Backend` shape (`spec.destination`), normalised by the translator.
//! - [`eg`]: Envoy Gateway's `Backend` (`gateway.envoyproxy.io/v1alpha1`).
//! - [`kinds`]: where each kind pier reads and writes lives on the API server (group, version,
//!   plural), and the API calls pier makes: the one table the watchers, the status writer and the RBAC
//!   test share.
//! - [`name`]: an object's namespace or name, interned: the one string type every layer keys its
//!   maps by (`model::ObjectKey`, statuses, the IR's origins, the integrity check's names).
//! - [`validation`]: the validation fields upstream has and the crate's `BackendTLSPolicyValidation`
//!   lacks (`clusterTrustBundleRef`), carried beside the crate's type.
//!
//! Every struct here rejects unknown fields, so a typo is a parse error naming the field, never a
//! silently ignored setting — except where a crate type is flattened in (`validation`), which serde
//! cannot combine with that. Types that upstream Gateway API already defines (BackendTLSPolicy
//! validation, SecretObjectReference, ParentReference) are reused from the `gateway-api` crate.
//! Nothing here does I/O; `name`'s table is the one shared state, and it never changes what a
//! value compares, orders or hashes as.

pub mod backend;
pub mod dense;
pub mod draft;
pub mod eg;
pub mod grpc;
pub mod kinds;
pub mod name;
pub mod session;
pub mod stored;
pub mod validation;
pub mod xbackend;

/// API groups and kinds, spelled once.
pub mod consts {
    pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";
    pub const X_GATEWAY_GROUP: &str = "gateway.networking.x-k8s.io";
    pub const EG_GROUP: &str = "gateway.envoyproxy.io";
    pub const CORE_GROUP: &str = "";
    pub const CERTIFICATES_GROUP: &str = "certificates.k8s.io";
    /// The `apiVersion` of the standard kinds pier writes status to.
    pub const GATEWAY_V1: &str = "gateway.networking.k8s.io/v1";

    pub const KIND_XBACKEND: &str = "XBackend";
    pub const KIND_BACKEND: &str = "Backend";
    pub const KIND_SERVICE: &str = "Service";
    pub const KIND_SECRET: &str = "Secret";
    pub const KIND_CONFIGMAP: &str = "ConfigMap";
    pub const KIND_CLUSTER_TRUST_BUNDLE: &str = "ClusterTrustBundle";
    pub const KIND_GATEWAY: &str = "Gateway";
    pub const KIND_GATEWAY_CLASS: &str = "GatewayClass";
    pub const KIND_HTTPROUTE: &str = "HTTPRoute";
    pub const KIND_GRPCROUTE: &str = "GRPCRoute";
    pub const KIND_BACKEND_TLS_POLICY: &str = "BackendTLSPolicy";
    pub const KIND_REFERENCE_GRANT: &str = "ReferenceGrant";

    /// Secret type of a certificate + key pair.
    pub const SECRET_TYPE_TLS: &str = "kubernetes.io/tls";
    /// A Secret without a type; accepted as a keypair when it holds `tls.crt` and `tls.key`.
    pub const SECRET_TYPE_OPAQUE: &str = "Opaque";
    /// The key holding a CA bundle in a ConfigMap or Secret.
    pub const CA_CERT_KEY: &str = "ca.crt";
    pub const TLS_CERT_KEY: &str = "tls.crt";
    pub const TLS_KEY_KEY: &str = "tls.key";
}

pub use gateway_api::apis::standard::backendtlspolicies::{
    BackendTlsPolicyValidation as TlsValidation, BackendTlsPolicyValidationCaCertificateRefs as LocalObjectReference,
    BackendTlsPolicyValidationSubjectAltNames as SubjectAltName,
    BackendTlsPolicyValidationSubjectAltNamesType as SubjectAltNameType,
};
/// Gateway API `SecretObjectReference` (group, kind, name, namespace).
pub use gateway_api::apis::standard::gateways::GatewayTlsBackendClientCertificateRef as SecretObjectReference;
/// Gateway API `ParentReference`.
pub use gateway_api::apis::standard::httproutes::HttpRouteStatusParentsParentRef as ParentReference;
