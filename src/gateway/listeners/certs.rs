//! HTTPS listener `tls.certificateRefs`: each reference must name a core Secret (else
//! `InvalidCertificateRef`), be in the Gateway's namespace or allowed by a ReferenceGrant from this
//! Gateway (else `RefNotPermitted`), and hold a `kubernetes.io/tls` certificate and key (else
//! `InvalidCertificateRef`). The valid ones are served; one invalid reference is enough for
//! `ResolvedRefs=False`, and the first problem gives the reason.
//!
//! Several certificates on one listener become several `tls_certificate_sds_secret_configs` of the one
//! `DownstreamTlsContext` of its filter chain: Envoy picks among them per handshake by the client's SNI
//! against each certificate's names and by key type (RSA, ECDSA). Separate filter chains could not
//! do this — a filter chain is chosen by SNI before any certificate is looked at, and all of a
//! listener's certificates serve the same hostname.

use gateway_api::apis::standard::gateways::GatewayListenersTlsCertificateRefs as CertRef;

use super::super::conditions::ListenerReason as Reason;
use super::super::refs;
use super::super::tls::{self, SecretSet};
use crate::api::consts::{CORE_GROUP, KIND_SECRET};
use crate::model::{Model, ObjectKey};

/// The SDS names of the valid certificates (their secrets go to `secrets`) and, if any reference is
/// invalid, the reason and a message naming every invalid one.
pub(super) fn resolve(
    model: &Model,
    gw: &ObjectKey,
    refs: &[CertRef],
    secrets: &mut SecretSet,
) -> (Vec<String>, Option<(Reason, String)>) {
    let mut valid = Vec::new();
    let mut problems: Vec<(Reason, String)> = Vec::new();
    if refs.is_empty() {
        problems.push((
            Reason::InvalidCertificateRef,
            "an HTTPS listener needs tls.certificateRefs".to_string(),
        ));
    }
    for (i, r) in refs.iter().enumerate() {
        let ns = r.namespace.clone().unwrap_or_else(|| gw.namespace.to_string());
        let group = r.group.as_deref().unwrap_or(CORE_GROUP);
        let kind = r.kind.as_deref().unwrap_or(KIND_SECRET);
        // Kind first: a reference to something pier cannot read is invalid whatever grants exist.
        if group != CORE_GROUP || kind != KIND_SECRET {
            let g = if group.is_empty() { "core" } else { group };
            problems.push((
                Reason::InvalidCertificateRef,
                format!(
                    "tls.certificateRefs[{i}]: {g}/{kind} {:?}: only core Secrets are supported",
                    r.name
                ),
            ));
            continue;
        }
        if !refs::gateway_may_use(model, gw, KIND_SECRET, &ns, &r.name) {
            problems.push((
                Reason::RefNotPermitted,
                format!(
                    "tls.certificateRefs[{i}]: Secret {ns}/{} is in another namespace and no ReferenceGrant allows it{}",
                    r.name,
                    model.grants_note()
                ),
            ));
            continue;
        }
        let sref = crate::api::SecretObjectReference {
            group: r.group.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            namespace: Some(ns.clone()),
        };
        match tls::resolve_tls_secret(model, &ns, &sref) {
            Ok((name, secret)) => {
                secrets.insert(name.clone(), secret);
                if !valid.contains(&name) {
                    valid.push(name);
                }
            }
            Err(msg) => problems.push((
                Reason::InvalidCertificateRef,
                format!("tls.certificateRefs[{i}]: {msg}"),
            )),
        }
    }
    let problem = problems.first().map(|(why, _)| {
        let msg = problems.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>().join("; ");
        (*why, msg)
    });
    (valid, problem)
}
