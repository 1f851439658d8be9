//! Upstream TLS for proxyless gRPC clients (gRFC A29).
//!
//! A gRPC client verifies a backend against a *certificate provider instance* its own bootstrap
//! defines (a `file_watcher` over a CA file on the client's disk); xDS names the instance and never
//! carries the CA itself. pier names one instance per CA bundle, after the SDS secret Envoy gets the
//! same bundle from (`ca/configmap/NS/NAME`, `ca-bundle/backend/NS/NAME`, `ca/system`, ...), so one
//! name means one set of roots everywhere. `pier bootstrap --grpc --trust-dir DIR` declares an instance
//! for each `DIR/<instance>.pem` and lists them in the node's metadata ([`DECLARED`]): that list is how
//! pier knows which clients can verify which backends, since gRPC never sends its bootstrap. A client
//! that lacks an instance is served the cluster as one with no endpoints (`super::UNAVAILABLE`'s load
//! assignment): a gRPC client given an instance it does not define NACKs the cluster, and a client
//! that cannot verify must not connect at all.
//!
//! Sent: the CA instance, the SAN matchers (the policy's `subjectAltNames`, else its hostname) in the
//! untyped `match_subject_alt_names`, which both gRPC C-core and tonic-xds read (C-core ignores the
//! typed field), and the SNI (clients that implement gRFC A98 send it; older ones send the target's
//! authority, which verification does not depend on). Refused: whatever A29 clients cannot honour.

use super::super::pb::{core, matcher, tls};
use crate::ir;

/// The node metadata key listing the certificate provider instances a client's bootstrap declares.
pub const DECLARED: &str = "pier.dev/certificate-providers";

/// The certificate provider instance a client must declare to be given a cluster with `t`.
pub fn instance(t: &ir::UpstreamTls) -> Option<&str> {
    match &t.trust {
        ir::Trust::Sds(name) => Some(name),
        ir::Trust::InsecureSkipVerify => None,
    }
}

/// Why a proxyless client cannot verify a backend as `t` asks, if it cannot.
pub fn refusal(t: &ir::UpstreamTls) -> Option<&'static str> {
    if matches!(t.trust, ir::Trust::InsecureSkipVerify) {
        return Some(
            "upstream TLS without verification: a gRPC client verifies every backend against a certificate \
             provider (gRFC A29) and has no way to skip it",
        );
    }
    if t.client_certificate.is_some() {
        return Some(
            "a client certificate to the backend: a gRPC client would need the Gateway's private key on its \
             own disk",
        );
    }
    if t.min_version.is_some()
        || t.max_version.is_some()
        || !t.ciphers.is_empty()
        || !t.ecdh_curves.is_empty()
        || !t.signature_algorithms.is_empty()
    {
        return Some(
            "TLS versions, ciphers, curves or signature algorithms: gRPC clients reject tls_params (gRFC A29)",
        );
    }
    if t.auto_host_sni || t.sni_from_host {
        return Some(
            "SNI and certificate names taken from each endpoint or request: a gRPC client checks fixed names \
             only (gRFC A29)",
        );
    }
    if !t.alpn.is_empty() && !t.alpn.iter().any(|p| p == "h2") {
        return Some("ALPN without h2: gRPC speaks HTTP/2 only");
    }
    None
}

/// The transport socket of a cluster verified as `t` (which [`refusal`] accepted).
pub fn transport_socket(t: &ir::UpstreamTls) -> Option<core::TransportSocket> {
    let instance = instance(t)?;
    #[allow(deprecated)] // the field gRPC C-core reads; the typed one it ignores.
    let validation = tls::CertificateValidationContext {
        ca_certificate_provider_instance: Some(tls::CertificateProviderPluginInstance {
            instance_name: instance.to_string(),
            certificate_name: String::new(),
        }),
        match_subject_alt_names: t.subject_alt_names.iter().map(san).collect(),
        ..Default::default()
    };
    let context = tls::UpstreamTlsContext {
        common_tls_context: Some(tls::CommonTlsContext {
            validation_context_type: Some(tls::common_tls_context::ValidationContextType::ValidationContext(
                validation,
            )),
            ..Default::default()
        }),
        sni: t.sni.clone().unwrap_or_default(),
        ..Default::default()
    };
    Some(super::super::tls::transport_socket(context))
}

/// An untyped matcher: gRPC checks it against every SAN of the certificate, whatever its type.
fn san(m: &ir::SanMatch) -> matcher::StringMatcher {
    let (ir::SanMatch::Dns(name) | ir::SanMatch::Uri(name)) = m;
    matcher::StringMatcher {
        match_pattern: Some(matcher::string_matcher::MatchPattern::Exact(name.clone())),
        ignore_case: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::pb::tls::common_tls_context::ValidationContextType;
    use crate::ir::build as b;

    #[test]
    fn the_cluster_names_the_ca_instance_the_sans_and_the_sni_and_nothing_grpc_rejects() {
        let mut t = b::verified_tls("ca/configmap/app/backend-ca", "secure.example");
        t.subject_alt_names
            .push(ir::SanMatch::Uri("spiffe://td/ns/app/sa/secure".into()));
        assert_eq!(refusal(&t), None);
        let socket = transport_socket(&t).unwrap();
        let Some(core::transport_socket::ConfigType::TypedConfig(any)) = socket.config_type else {
            panic!("typed config")
        };
        let context: tls::UpstreamTlsContext = prost::Message::decode(any.value.as_slice()).unwrap();
        assert_eq!(context.sni, "secure.example");
        let common = context.common_tls_context.unwrap();
        assert!(common.tls_params.is_none() && common.tls_certificate_sds_secret_configs.is_empty());
        let Some(ValidationContextType::ValidationContext(v)) = common.validation_context_type else {
            panic!("an inline validation context: gRPC has no SDS")
        };
        assert_eq!(
            v.ca_certificate_provider_instance.unwrap().instance_name,
            "ca/configmap/app/backend-ca"
        );
        #[allow(deprecated)]
        let sans: Vec<_> = v
            .match_subject_alt_names
            .iter()
            .map(|m| m.match_pattern.clone())
            .collect();
        use matcher::string_matcher::MatchPattern::Exact;
        assert_eq!(
            sans,
            [
                Some(Exact("secure.example".into())),
                Some(Exact("spiffe://td/ns/app/sa/secure".into()))
            ]
        );
    }

    #[test]
    fn what_a_grpc_client_cannot_honour_is_refused() {
        let base = b::verified_tls("ca/system", "secure.example");
        type Change = fn(&mut ir::UpstreamTls);
        let cases: [(&str, Change); 5] = [
            ("A29", |t| t.trust = ir::Trust::InsecureSkipVerify),
            ("private key", |t| t.client_certificate = Some("cert/ns/c".into())),
            ("tls_params", |t| t.min_version = Some(ir::TlsVersion::V1_3)),
            ("fixed names", |t| t.auto_host_sni = true),
            ("HTTP/2", |t| t.alpn = vec!["http/1.1".into()]),
        ];
        for (why, change) in cases {
            let mut t = base.clone();
            change(&mut t);
            assert!(refusal(&t).is_some_and(|r| r.contains(why)), "{why}: {:?}", refusal(&t));
        }
    }
}
