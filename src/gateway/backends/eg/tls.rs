//! Envoy Gateway's `Backend.spec.tls`: trust (`caCertificateRefs`, `wellKnownCACertificates: System`, or
//! `insecureSkipVerify`), SNI (fixed, from each endpoint's hostname, or from the request's Host), TLS
//! versions, ciphers, curves, signature algorithms, ALPN, and the Backend's own client certificate (else
//! the Gateway's). `fingerprints` configures client (downstream) fingerprinting in Envoy Gateway's shared
//! struct and means nothing for an upstream connection, so it is read and left out.

use crate::api::eg::EgBackendTls;
use crate::gateway::backends::common::{client_certificate, invalid};
use crate::gateway::backends::{Ctx, GatewayCert};
use crate::gateway::conditions::{BackendProblem, BackendReason, Problem};
use crate::gateway::tls::{self, SecretSet};
use crate::ir;
use crate::model::ObjectKey;

/// The upstream TLS context and whether the Gateway's client certificate applies.
pub(super) fn backend_tls(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    t: &EgBackendTls,
    secrets: &mut SecretSet,
) -> Result<(ir::UpstreamTls, GatewayCert), BackendProblem> {
    let EgBackendTls {
        ca_certificate_refs,
        well_known_ca_certificates,
        insecure_skip_verify,
        sni,
        auto_sni_from_endpoint_hostname,
        client_certificate_ref,
        min_version,
        max_version,
        ciphers,
        ecdh_curves,
        signature_algorithms,
        alpn_protocols,
        fingerprints: _,
    } = t;
    let refs = ca_certificate_refs.as_deref().unwrap_or_default();
    let insecure = insecure_skip_verify.unwrap_or(false);
    let auto_sni = auto_sni_from_endpoint_hostname.unwrap_or(false);
    let well_known = well_known_ca_certificates.as_deref();
    exclusive_trust(refs, well_known, insecure)?;
    if sni.is_some() && auto_sni {
        return Err(tls_invalid(
            "sni and autoSNIFromEndpointHostname are mutually exclusive",
        ));
    }
    let trust = trust(ctx, key, refs, well_known, insecure, secrets)?;
    let sans = match (sni, insecure) {
        (Some(sni), false) => vec![ir::SanMatch::Dns(sni.clone())],
        _ => Vec::new(),
    };
    let mut upstream = tls::upstream_tls(sni.clone(), trust, sans);
    upstream.auto_host_sni = auto_sni;
    // Without a fixed SNI, Envoy Gateway takes SNI and the certificate check from the request's Host;
    // otherwise any certificate the CA signed, for any name, would be accepted.
    upstream.sni_from_host = sni.is_none() && !auto_sni;
    (upstream.min_version, upstream.max_version) = versions(min_version.as_deref(), max_version.as_deref())?;
    upstream.ciphers = ciphers.clone().unwrap_or_default();
    upstream.ecdh_curves = ecdh_curves.clone().unwrap_or_default();
    upstream.signature_algorithms = signature_algorithms.clone().unwrap_or_default();
    upstream.alpn = alpn_protocols.clone().unwrap_or_default();
    let Some(r) = client_certificate_ref else {
        return Ok((upstream, GatewayCert::Optional));
    };
    upstream.client_certificate = Some(client_certificate(
        ctx,
        key,
        r,
        "spec.tls.clientCertificateRef",
        secrets,
    )?);
    Ok((upstream, GatewayCert::No))
}

fn tls_invalid(m: &str) -> BackendProblem {
    invalid(format!("spec.tls: {m}"))
}

/// At most one of `insecureSkipVerify`, `wellKnownCACertificates` and `caCertificateRefs`.
fn exclusive_trust(
    refs: &[crate::api::LocalObjectReference],
    well_known: Option<&str>,
    insecure: bool,
) -> Result<(), BackendProblem> {
    if !refs.is_empty() && well_known.is_some() {
        return Err(tls_invalid(
            "must not contain both caCertificateRefs and wellKnownCACertificates",
        ));
    }
    if insecure && (!refs.is_empty() || well_known.is_some()) {
        return Err(tls_invalid(
            "must not contain either caCertificateRefs or wellKnownCACertificates when insecureSkipVerify is enabled",
        ));
    }
    Ok(())
}

/// `insecureSkipVerify`, `wellKnownCACertificates: System`, or `caCertificateRefs`: one is required.
fn trust(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    refs: &[crate::api::LocalObjectReference],
    well_known: Option<&str>,
    insecure: bool,
    secrets: &mut SecretSet,
) -> Result<ir::Trust, BackendProblem> {
    let bundle = match (insecure, well_known) {
        (true, _) => return Ok(ir::Trust::InsecureSkipVerify),
        (false, Some("System")) => tls::system_ca(&ctx.opts.system_ca_path),
        (false, Some(wk)) => {
            return Err(tls_invalid(&format!(
                "wellKnownCACertificates {wk:?} is not supported; pier supports \"System\""
            )));
        }
        (false, None) if refs.is_empty() => {
            return Err(tls_invalid(
                "must specify either caCertificateRefs or wellKnownCACertificates when insecureSkipVerify is unset or false",
            ));
        }
        (false, None) => ca_refs(ctx, key, refs)?,
    };
    secrets.insert(bundle.secret_name.clone(), bundle.secret);
    Ok(ir::Trust::Sds(bundle.secret_name))
}

/// Every CA reference must resolve; with none valid the reason is `NoValidCACertificate`.
fn ca_refs(
    ctx: Ctx<'_>,
    key: &ObjectKey,
    refs: &[crate::api::LocalObjectReference],
) -> Result<tls::CaBundle, BackendProblem> {
    let refs: Vec<tls::CaRef> = refs.iter().map(tls::CaRef::from).collect();
    let out = tls::resolve_ca_refs(
        ctx.model,
        &key.namespace,
        &refs,
        ("eg-backend", &key.namespace, &key.name),
        tls::CaKinds::Core,
    );
    match (out.bundle, out.problems.into_iter().next()) {
        (Some(bundle), None) => Ok(bundle),
        (Some(_), Some(p)) => Err(p.widen()),
        (None, Some(p)) => Err(Problem::accepted(BackendReason::NoValidCACertificate, p.message)),
        (None, None) => Err(Problem::accepted(
            BackendReason::NoValidCACertificate,
            "spec.tls.caCertificateRefs: no valid CA certificate",
        )),
    }
}

/// `minVersion` and `maxVersion`; the minimum must not exceed the maximum.
fn versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<(Option<ir::TlsVersion>, Option<ir::TlsVersion>), BackendProblem> {
    let parse = |field: &str, v: Option<&str>| {
        v.map(|v| {
            parse_version(v)
                .ok_or_else(|| tls_invalid(&format!("{field} {v:?} is not one of Auto, 1.0, 1.1, 1.2, 1.3")))
        })
        .transpose()
    };
    let (min, max) = (parse("minVersion", min)?, parse("maxVersion", max)?);
    if let (Some(lo), Some(hi)) = (min, max)
        && lo != ir::TlsVersion::Auto
        && hi != ir::TlsVersion::Auto
        && lo > hi
    {
        return Err(tls_invalid("minVersion must be smaller or equal to maxVersion"));
    }
    Ok((min, max))
}

fn parse_version(v: &str) -> Option<ir::TlsVersion> {
    Some(match v {
        "Auto" => ir::TlsVersion::Auto,
        "1.0" => ir::TlsVersion::V1_0,
        "1.1" => ir::TlsVersion::V1_1,
        "1.2" => ir::TlsVersion::V1_2,
        "1.3" => ir::TlsVersion::V1_3,
        _ => return None,
    })
}
