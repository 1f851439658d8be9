//! TLS transport sockets: `UpstreamTlsContext` for clusters, `DownstreamTlsContext` for HTTPS filter
//! chains. Every certificate and CA bundle is an SDS reference over ADS (served from `secrets`), never
//! inline, so a rotated Secret is one SDS push and no cluster or listener changes.

use super::pb::{core, ext, matcher, protobuf, tls};
use super::sds;
use crate::ir;

/// ALPN offered by HTTPS listeners: HTTP/2 first, HTTP/1.1 for clients without it.
const DOWNSTREAM_ALPN: [&str; 2] = ["h2", "http/1.1"];

pub(super) fn upstream(t: &ir::UpstreamTls, protocol: ir::UpstreamProtocol) -> core::TransportSocket {
    let validation = match &t.trust {
        ir::Trust::Sds(name) => Some(
            tls::common_tls_context::ValidationContextType::CombinedValidationContext(
                // The SAN matchers are per cluster, the CA bundle a shared secret: combining the two keeps
                // one CA secret usable by clusters that expect different names.
                tls::common_tls_context::CombinedCertificateValidationContext {
                    default_validation_context: Some(tls::CertificateValidationContext {
                        match_typed_subject_alt_names: t.subject_alt_names.iter().map(san_matcher).collect(),
                        ..Default::default()
                    }),
                    validation_context_sds_secret_config: Some(sds(name)),
                    ..Default::default()
                },
            ),
        ),
        // No validation context at all: Envoy then accepts any upstream certificate.
        ir::Trust::InsecureSkipVerify => None,
    };
    let context = tls::UpstreamTlsContext {
        common_tls_context: Some(tls::CommonTlsContext {
            tls_params: tls_params(t),
            tls_certificate_sds_secret_configs: t.client_certificate.iter().map(|n| sds(n)).collect(),
            validation_context_type: validation,
            alpn_protocols: if t.alpn.is_empty() {
                derived_alpn(protocol)
            } else {
                t.alpn.clone()
            },
            ..Default::default()
        }),
        sni: t.sni.clone().unwrap_or_default(),
        // SNI from the endpoint's hostname (overriding `sni`), and the SAN check against that same name
        // when the certificate is verified at all.
        auto_host_sni: t.auto_host_sni,
        auto_sni_san_validation: t.auto_host_sni && matches!(t.trust, ir::Trust::Sds(_)),
        ..Default::default()
    };
    transport_socket(context)
}

/// Server side of an HTTPS filter chain: the chain's certificates (several for RSA + ECDSA), ALPN h2 and
/// http/1.1, and the client certificate check the Gateway asks for. `AllowInsecureFallback` still asks
/// for a certificate but lets a connection through without one (`require_client_certificate: false`) or
/// with one that does not verify (`ACCEPT_UNTRUSTED`); the CA comes by SDS either way.
pub(super) fn downstream(certificates: &[String], client: Option<&ir::ClientValidation>) -> core::TransportSocket {
    use tls::common_tls_context::{CombinedCertificateValidationContext, ValidationContextType};
    let validation = client.map(|c| {
        let trust_chain_verification = if c.allow_insecure_fallback {
            tls::certificate_validation_context::TrustChainVerification::AcceptUntrusted
        } else {
            tls::certificate_validation_context::TrustChainVerification::VerifyTrustChain
        };
        ValidationContextType::CombinedValidationContext(CombinedCertificateValidationContext {
            default_validation_context: Some(tls::CertificateValidationContext {
                trust_chain_verification: trust_chain_verification as i32,
                ..Default::default()
            }),
            validation_context_sds_secret_config: Some(sds(&c.ca)),
            ..Default::default()
        })
    });
    transport_socket(tls::DownstreamTlsContext {
        common_tls_context: Some(tls::CommonTlsContext {
            tls_certificate_sds_secret_configs: certificates.iter().map(|n| sds(n)).collect(),
            alpn_protocols: DOWNSTREAM_ALPN.iter().map(|p| p.to_string()).collect(),
            validation_context_type: validation,
            ..Default::default()
        }),
        require_client_certificate: client.map(|c| protobuf::BoolValue {
            value: !c.allow_insecure_fallback,
        }),
        ..Default::default()
    })
}

pub(super) fn transport_socket<M: prost::Message + prost::Name>(context: M) -> core::TransportSocket {
    core::TransportSocket {
        name: ext::TLS_TRANSPORT_SOCKET.to_string(),
        config_type: Some(core::transport_socket::ConfigType::TypedConfig(
            envoy_types::util::pack_any(context),
        )),
    }
}

/// ALPN must agree with the HTTP protocol options `clusters` sets: offering h2 to a cluster configured for
/// HTTP/1.1 would break on the first h2 handshake.
fn derived_alpn(protocol: ir::UpstreamProtocol) -> Vec<String> {
    let alpn: &[&str] = match protocol {
        ir::UpstreamProtocol::Http1 => &["http/1.1"],
        // h2c is cleartext by definition; if the IR ever pairs it with TLS it can only mean HTTP/2.
        ir::UpstreamProtocol::Http2 | ir::UpstreamProtocol::H2c => &["h2"],
        ir::UpstreamProtocol::Auto => &["h2", "http/1.1"],
    };
    alpn.iter().map(|p| p.to_string()).collect()
}

/// `None` when nothing is pinned, so Envoy's defaults (and their future upgrades) apply.
fn tls_params(t: &ir::UpstreamTls) -> Option<tls::TlsParameters> {
    if t.min_version.is_none()
        && t.max_version.is_none()
        && t.ciphers.is_empty()
        && t.ecdh_curves.is_empty()
        && t.signature_algorithms.is_empty()
    {
        return None;
    }
    Some(tls::TlsParameters {
        tls_minimum_protocol_version: t.min_version.map_or(0, |v| tls_version(v) as i32),
        tls_maximum_protocol_version: t.max_version.map_or(0, |v| tls_version(v) as i32),
        cipher_suites: t.ciphers.clone(),
        ecdh_curves: t.ecdh_curves.clone(),
        signature_algorithms: t.signature_algorithms.clone(),
        ..Default::default()
    })
}

fn tls_version(v: ir::TlsVersion) -> tls::tls_parameters::TlsProtocol {
    use tls::tls_parameters::TlsProtocol as P;
    match v {
        ir::TlsVersion::Auto => P::TlsAuto,
        ir::TlsVersion::V1_0 => P::TlSv10,
        ir::TlsVersion::V1_1 => P::TlSv11,
        ir::TlsVersion::V1_2 => P::TlSv12,
        ir::TlsVersion::V1_3 => P::TlSv13,
    }
}

fn san_matcher(san: &ir::SanMatch) -> tls::SubjectAltNameMatcher {
    use tls::subject_alt_name_matcher::SanType;
    let (san_type, value) = match san {
        ir::SanMatch::Dns(v) => (SanType::Dns, v),
        ir::SanMatch::Uri(v) => (SanType::Uri, v),
    };
    tls::SubjectAltNameMatcher {
        san_type: san_type as i32,
        // Exact: for DNS SANs Envoy still honours wildcard certificates (`*.example.com`) on its own.
        matcher: Some(matcher::StringMatcher {
            match_pattern: Some(matcher::string_matcher::MatchPattern::Exact(value.clone())),
            ignore_case: false,
        }),
        ..Default::default()
    }
}
