//! The Gateway API conformance features pier claims in every accepted GatewayClass's
//! `status.supportedFeatures` — exactly those it passes, each proven by a golden case (configuration and
//! status, checked by Envoy) and, for traffic, an e2e scenario through a real Envoy. `docs/conformance.md`
//! maps each name to its tests; a feature is added here only with them.
//!
//! Names are upstream's (`pkg/features/*.go`). Not claimed, and why: `GatewayStaticAddresses`,
//! `GatewayAddressEmpty` and `GatewayInfrastructurePropagation` (pier provisions no addresses or
//! infrastructure), `GatewayListenerSet`, the TCP/TLS/UDP route kinds and mesh (not served),
//! `HTTPRouteDestinationPortMatching` (no test), `GatewayFrontendClusterTrustBundle` (a Gateway's
//! frontend validation takes ConfigMaps and Secrets only; `BackendTLSPolicyClusterTrustBundle`, the
//! backend side, is claimed); of the Backend features, `BackendProtocolTCP` (pier serves HTTP only) and
//! `BackendSessionPersistenceSessionCookieAbsoluteTimeout` (a session cookie whose lifetime the proxy
//! tracks: Envoy's only cookie expiry is `Max-Age`, which makes it permanent, so pier refuses it).

/// Sorted, as the API requires.
pub const SUPPORTED: &[&str] = &[
    "Backend",
    "BackendExternalHostname",
    "BackendProtocolGRPC",
    "BackendProtocolHTTP2",
    "BackendProtocolMCP",
    "BackendProtocolWSS",
    "BackendSessionPersistenceCookie",
    "BackendSessionPersistenceCookiePath",
    "BackendSessionPersistenceHeader",
    "BackendTLS",
    "BackendTLSPolicy",
    "BackendTLSPolicyClusterTrustBundle",
    "BackendTLSPolicySANValidation",
    "GRPCRoute",
    "Gateway",
    "GatewayBackendClientCertificate",
    "GatewayFrontendClientCertificateValidation",
    "GatewayFrontendClientCertificateValidationInsecureFallback",
    "GatewayHTTPListenerIsolation",
    "GatewayHTTPSListenerDetectMisdirectedRequests",
    "GatewayPort8080",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendRequestHeaderModification",
    "HTTPRouteBackendTimeout",
    "HTTPRouteCORS",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRouteNamedRouteRule",
    "HTTPRouteParentRefPort",
    "HTTPRoutePathRedirect",
    "HTTPRoutePathRewrite",
    "HTTPRoutePortRedirect",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestMirror",
    "HTTPRouteRequestMultipleMirrors",
    "HTTPRouteRequestPercentageMirror",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "HTTPRouteSchemeRedirect",
    "ReferenceGrant",
];

/// `status.supportedFeatures[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SupportedFeature {
    pub name: &'static str,
}

pub fn supported() -> Vec<SupportedFeature> {
    SUPPORTED.iter().map(|name| SupportedFeature { name }).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sorted_and_unique() {
        assert!(super::SUPPORTED.windows(2).all(|w| w[0] < w[1]));
    }
}
