//! Certificate references shared by every TLS-bearing object: CA bundles (ConfigMap or Secret key
//! `ca.crt`, or a ClusterTrustBundle; see [`ca`], and [`trust`] for a validation block's trust fields) and certificate/key pairs (`kubernetes.io/tls`
//! Secrets). Each resolved reference becomes an SDS secret with a name from `ir::names`; each failure becomes a `Problem` with the upstream
//! reason, naming the object and key. PEM is checked for framing here so a broken bundle is refused
//! in status instead of being NACKed by every proxy. A certificate field (`tls.crt`, a CA bundle) that
//! carries a private key is refused too, naming the object and key: served as a certificate, the key
//! would reach every proxy and everyone who may read the config dump.

pub mod ca;
pub mod private_keys;
pub mod trust;

pub use ca::{CaBundle, CaKinds, CaRef, resolve_ca_refs, system_ca};

use k8s_openapi::api::core::v1::Secret as K8sSecret;

use super::conditions::{Problem, TlsProblem, TlsReason};
use crate::api::SecretObjectReference;
use crate::api::consts::{SECRET_TYPE_OPAQUE, SECRET_TYPE_TLS, TLS_CERT_KEY, TLS_KEY_KEY};
use crate::api::validation::ValidationExtras;
use crate::ir;
use crate::ir::names;
use crate::model::{Model, ObjectKey};

/// Resolves a reference to a `kubernetes.io/tls` (or `Opaque`) Secret into an SDS certificate. The caller has
/// already decided whether the (possibly cross-namespace) reference is permitted; `namespace` is
/// where the Secret lives. A failure is a message naming the Secret and key; the caller gives it the
/// reason its object carries (`InvalidCertificateRef` on a listener, `InvalidClientCertificateRef` for a
/// client certificate).
pub fn resolve_tls_secret(
    model: &Model,
    namespace: &str,
    r: &SecretObjectReference,
) -> Result<(String, ir::Secret), String> {
    let group = r.group.as_deref().unwrap_or("");
    let kind = r.kind.as_deref().unwrap_or("Secret");
    if !group.is_empty() || kind != "Secret" {
        return Err(format!(
            "certificate reference {}/{kind} {:?}: only core Secrets are supported",
            if group.is_empty() { "core" } else { group },
            r.name
        ));
    }
    let path = format!("Secret {namespace}/{}", r.name);
    let secret = model
        .secrets
        .get(&ObjectKey::new(namespace, &r.name))
        .ok_or_else(|| model.not_found(crate::model::Kind::Secret, &path))?;
    let ty = secret.type_.as_deref().unwrap_or(SECRET_TYPE_OPAQUE);
    // Gateway API leaves types other than kubernetes.io/tls to implementations, and Envoy Gateway takes
    // an Opaque Secret holding tls.crt and tls.key, which users' manifests rely on. The keys and their
    // content are checked the same either way; other types (tokens, registry credentials) are not
    // keypairs and stay refused.
    if ty != SECRET_TYPE_TLS && ty != SECRET_TYPE_OPAQUE {
        return Err(format!(
            "{path} has type {ty:?}, want {SECRET_TYPE_TLS:?} (or {SECRET_TYPE_OPAQUE:?} with keys {TLS_CERT_KEY:?} and {TLS_KEY_KEY:?})"
        ));
    }
    let chain = secret_string(secret, TLS_CERT_KEY).ok_or_else(|| format!("{path} has no key {TLS_CERT_KEY:?}"))?;
    let key = secret_string(secret, TLS_KEY_KEY).ok_or_else(|| format!("{path} has no key {TLS_KEY_KEY:?}"))?;
    check_certificates(&chain).map_err(|e| format!("{path} key {TLS_CERT_KEY}: {e}"))?;
    check_private_key(&key).map_err(|e| format!("{path} key {TLS_KEY_KEY}: {e}"))?;
    Ok((
        names::tls_certificate_secret(namespace, &r.name),
        ir::Secret::TlsCertificate { chain, key },
    ))
}

fn secret_string(s: &K8sSecret, key: &str) -> Option<String> {
    let bytes = s.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// At least one PEM `CERTIFICATE` block, nothing that is not PEM, and no private key.
pub fn check_certificates(pem_text: &str) -> Result<(), String> {
    if let Some(label) = private_keys::first_label(pem_text) {
        return Err(format!(
            "holds a private key (a PEM {label} block): a certificate field must hold certificates only (remove the key, and treat it as exposed)"
        ));
    }
    let blocks = pem::parse_many(pem_text.as_bytes()).map_err(|e| format!("not valid PEM: {e}"))?;
    let certs = blocks
        .iter()
        .filter(|b| b.tag() == "CERTIFICATE" && !b.contents().is_empty())
        .count();
    if certs == 0 {
        return Err("contains no PEM CERTIFICATE block".into());
    }
    Ok(())
}

fn check_private_key(pem_text: &str) -> Result<(), String> {
    let blocks = pem::parse_many(pem_text.as_bytes()).map_err(|e| format!("not valid PEM: {e}"))?;
    if blocks
        .iter()
        .any(|b| b.tag().ends_with("PRIVATE KEY") && !b.contents().is_empty())
    {
        Ok(())
    } else {
        Err("contains no PEM PRIVATE KEY block".into())
    }
}

/// Secrets collected while building one Gateway's IR; identical names must carry identical content
/// (names come from object identity, so they do).
pub type SecretSet = litemap::LiteMap<String, ir::Secret>;

/// Gives back a set's spare room. The engine keeps a set per Backend, port, policy and route target,
/// nearly every one a single entry, and a set grown by `insert` or `extend` holds room for four (288
/// bytes where 72 are used).
pub fn compact(set: &mut SecretSet) {
    let mut entries = std::mem::replace(set, SecretSet::new()).into_tuple_vec();
    entries.shrink_to_fit();
    // Sorted and unique: it came out of a set.
    *set = SecretSet::from_sorted_store_unchecked(entries);
}

/// An UpstreamTls with only trust and identity set; callers add client certificate and parameters.
pub fn upstream_tls(sni: Option<String>, trust: ir::Trust, sans: Vec<ir::SanMatch>) -> ir::UpstreamTls {
    ir::UpstreamTls {
        sni,
        trust,
        subject_alt_names: sans,
        client_certificate: None,
        min_version: None,
        max_version: None,
        ciphers: Vec::new(),
        ecdh_curves: Vec::new(),
        signature_algorithms: Vec::new(),
        alpn: Vec::new(),
        auto_host_sni: false,
        sni_from_host: false,
    }
}

/// Server validation (Gateway API `BackendTLSPolicyValidation`, shared by BackendTLSPolicy and the
/// Backend's inline `tls.validation`) resolved into trust, SNI and SAN matchers, and the secrets they need.
#[derive(Debug)]
pub struct Validated {
    pub tls: ir::UpstreamTls,
    pub secrets: SecretSet,
}

/// Where a validation block sits: the namespace its references resolve in, the object that owns a bundle
/// made of several references (`("xbackend", ns, name)`), and its field path for messages
/// (`spec.tls.validation`).
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    pub namespace: &'a str,
    pub owner: (&'a str, &'a str, &'a str),
    pub field: &'a str,
}

/// Resolves a validation block: the crate's type and what it lacks (`api::validation`). A CA reference
/// that does not resolve while another does is a problem that does not refuse the block (`problems`);
/// the `Err` is the one that does.
pub fn resolve_validation(
    model: &Model,
    system_ca_path: &str,
    site: Site<'_>,
    v: &crate::api::TlsValidation,
    extras: &ValidationExtras,
    problems: &mut Vec<TlsProblem>,
) -> Result<Validated, TlsProblem> {
    let crate::api::TlsValidation {
        ca_certificate_refs,
        hostname,
        subject_alt_names,
        well_known_ca_certificates,
    } = v;
    let ValidationExtras {
        cluster_trust_bundle_ref,
    } = extras;
    let sources = trust::Sources {
        refs: ca_certificate_refs.as_deref().unwrap_or_default(),
        bundle: cluster_trust_bundle_ref.as_ref(),
        well_known: well_known_ca_certificates.as_deref(),
    };
    let bundle = trust::trust(model, system_ca_path, site, sources, problems)?;
    let sans = san_matchers(site.field, subject_alt_names.as_deref().unwrap_or_default(), hostname)?;
    let mut secrets = SecretSet::with_capacity(1);
    secrets.insert(bundle.secret_name.clone(), bundle.secret);
    Ok(Validated {
        tls: upstream_tls(Some(hostname.clone()), ir::Trust::Sds(bundle.secret_name), sans),
        secrets,
    })
}

/// `subjectAltNames`, or the hostname when there are none.
fn san_matchers(
    field: &str,
    sans: &[crate::api::SubjectAltName],
    hostname: &str,
) -> Result<Vec<ir::SanMatch>, TlsProblem> {
    use crate::api::SubjectAltNameType;
    let mut out = Vec::new();
    for (i, san) in sans.iter().enumerate() {
        let crate::api::SubjectAltName { hostname, r#type, uri } = san;
        out.push(match (r#type, hostname, uri) {
            (SubjectAltNameType::Hostname, Some(h), None) => ir::SanMatch::Dns(h.clone()),
            (SubjectAltNameType::Uri, None, Some(u)) => ir::SanMatch::Uri(u.clone()),
            _ => {
                return Err(Problem::accepted(
                    TlsReason::Invalid,
                    format!("{field}.subjectAltNames[{i}]: type Hostname needs exactly hostname, type URI exactly uri"),
                ));
            }
        });
    }
    if out.is_empty() {
        out.push(ir::SanMatch::Dns(hostname.to_string()));
    }
    // Kept in the Backend's TLS for its life.
    out.shrink_to_fit();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(path: &str) -> ir::Secret {
        ir::Secret::CaFile { path: path.into() }
    }

    #[test]
    fn compact_keeps_the_entries_and_drops_the_spare_room() {
        let mut one = SecretSet::new();
        one.insert("b".into(), ca("/b"));
        let mut two = one.clone();
        two.insert("a".into(), ca("/a"));
        two.extend(one.clone());
        for set in [one, two] {
            let grown = set.into_tuple_vec();
            assert!(
                grown.capacity() > grown.len(),
                "a set grown by insert has room to spare"
            );
            let expected = grown.clone();
            let mut set = SecretSet::from_sorted_store_unchecked(grown);
            compact(&mut set);
            assert!(set.get("b").is_some());
            let entries = set.into_tuple_vec();
            assert_eq!(entries, expected);
            assert_eq!(entries.capacity(), entries.len(), "no room beyond the entries");
        }
    }
}
