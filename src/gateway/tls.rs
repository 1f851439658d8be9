//! Certificate references shared by every TLS-bearing object: CA bundles (ConfigMap or Secret key
//! `ca.crt`) and certificate/key pairs (`kubernetes.io/tls` Secrets). Each resolved reference becomes an
//! SDS secret with a name from `ir::names`; each failure becomes a `Problem` with the upstream
//! reason, naming the object and key. PEM is checked for framing here so a broken bundle is refused
//! in status instead of being NACKed by every proxy.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret as K8sSecret;

use super::conditions::{Problem, reason};
use crate::api::consts::{CA_CERT_KEY, SECRET_TYPE_TLS, TLS_CERT_KEY, TLS_KEY_KEY};
use crate::api::{LocalObjectReference, SecretObjectReference};
use crate::ir;
use crate::ir::names;
use crate::model::{Model, ObjectKey};

/// A resolved trust bundle: its SDS name and content.
#[derive(Debug, Clone, PartialEq)]
pub struct CaBundle {
    pub secret_name: String,
    pub secret: ir::Secret,
}

/// Outcome of resolving a list of CA references: the bundle of the valid ones (if any) and a problem
/// per invalid one.
#[derive(Debug, Default)]
pub struct CaOutcome {
    pub bundle: Option<CaBundle>,
    pub problems: Vec<Problem>,
}

/// One CA reference: a core ConfigMap or Secret and the key holding the PEM bundle.
#[derive(Debug, Clone)]
pub struct CaRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub key: String,
}

impl From<&LocalObjectReference> for CaRef {
    fn from(r: &LocalObjectReference) -> Self {
        Self {
            group: r.group.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            key: CA_CERT_KEY.to_string(),
        }
    }
}

/// Resolves CA references (local to `namespace`). `owner` names the object for a bundle made of
/// several references, e.g. `("xbackend", ns, name)`.
pub fn resolve_ca_refs(model: &Model, namespace: &str, refs: &[CaRef], owner: (&str, &str, &str)) -> CaOutcome {
    let mut out = CaOutcome::default();
    let mut valid: Vec<(String, String, String)> = Vec::new();
    for r in refs {
        let path = format!("{} {namespace}/{}", r.kind, r.name);
        if !r.group.is_empty() || (r.kind != "ConfigMap" && r.kind != "Secret") {
            out.problems.push(Problem::refs(
                reason::INVALID_KIND,
                format!(
                    "caCertificateRef {}/{} {:?}: only core ConfigMap and Secret are supported",
                    if r.group.is_empty() { "core" } else { &r.group },
                    r.kind,
                    r.name
                ),
            ));
            continue;
        }
        let key = ObjectKey::new(namespace, &r.name);
        let pem = if r.kind == "ConfigMap" {
            match model.config_maps.get(&key) {
                None => Err(format!("{path} not found")),
                Some(cm) => cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get(&r.key).cloned())
                    .ok_or_else(|| format!("{path} has no key {:?}", r.key)),
            }
        } else {
            match model.secrets.get(&key) {
                None => Err(format!("{path} not found")),
                Some(s) => secret_string(s, &r.key).ok_or_else(|| format!("{path} has no key {:?}", r.key)),
            }
        };
        let checked = pem.and_then(|p| {
            check_certificates(&p)
                .map(|()| p)
                .map_err(|e| format!("{path} key {}: {e}", r.key))
        });
        match checked {
            Ok(p) => valid.push((r.kind.to_ascii_lowercase(), r.name.clone(), p)),
            Err(msg) => out
                .problems
                .push(Problem::refs(reason::INVALID_CA_CERTIFICATE_REF, msg)),
        }
    }
    out.bundle = match valid.len() {
        0 => None,
        1 => {
            let (kind, name, pem) = valid.pop().expect("one");
            Some(CaBundle {
                secret_name: names::ca_secret(&kind, namespace, &name),
                secret: ir::Secret::CaBundle { pem },
            })
        }
        _ => {
            let pem = valid
                .iter()
                .map(|(_, _, p)| p.trim_end().to_string() + "\n")
                .collect::<String>();
            Some(CaBundle {
                secret_name: names::ca_bundle_secret(owner.0, owner.1, owner.2),
                secret: ir::Secret::CaBundle { pem },
            })
        }
    };
    out
}

/// The system trust bundle, as a file Envoy reads.
pub fn system_ca(path: &str) -> CaBundle {
    CaBundle {
        secret_name: names::SYSTEM_CA_SECRET.to_string(),
        secret: ir::Secret::CaFile { path: path.to_string() },
    }
}

/// Which reason a certificate-reference failure carries on the object that holds the reference.
#[derive(Debug, Clone, Copy)]
pub enum CertRefUse {
    /// Gateway listener `certificateRefs`.
    Listener,
    /// Upstream client certificate (Gateway `tls.backend`, Backend `clientCertificateRef`).
    Client,
}

impl CertRefUse {
    fn reason(self) -> &'static str {
        match self {
            CertRefUse::Listener => reason::INVALID_CERTIFICATE_REF,
            CertRefUse::Client => reason::INVALID_CLIENT_CERTIFICATE_REF,
        }
    }
}

/// Resolves a reference to a `kubernetes.io/tls` Secret into an SDS certificate. The caller has
/// already decided whether the (possibly cross-namespace) reference is permitted; `namespace` is
/// where the Secret lives.
pub fn resolve_tls_secret(
    model: &Model,
    namespace: &str,
    r: &SecretObjectReference,
    usage: CertRefUse,
) -> Result<(String, ir::Secret), Problem> {
    let group = r.group.as_deref().unwrap_or("");
    let kind = r.kind.as_deref().unwrap_or("Secret");
    let fail = |msg: String| Problem::refs(usage.reason(), msg);
    if !group.is_empty() || kind != "Secret" {
        return Err(fail(format!(
            "certificate reference {}/{kind} {:?}: only core Secrets are supported",
            if group.is_empty() { "core" } else { group },
            r.name
        )));
    }
    let path = format!("Secret {namespace}/{}", r.name);
    let secret = model
        .secrets
        .get(&ObjectKey::new(namespace, &r.name))
        .ok_or_else(|| fail(format!("{path} not found")))?;
    let ty = secret.type_.as_deref().unwrap_or("Opaque");
    if ty != SECRET_TYPE_TLS {
        return Err(fail(format!("{path} has type {ty:?}, want {SECRET_TYPE_TLS:?}")));
    }
    let chain =
        secret_string(secret, TLS_CERT_KEY).ok_or_else(|| fail(format!("{path} has no key {TLS_CERT_KEY:?}")))?;
    let key = secret_string(secret, TLS_KEY_KEY).ok_or_else(|| fail(format!("{path} has no key {TLS_KEY_KEY:?}")))?;
    check_certificates(&chain).map_err(|e| fail(format!("{path} key {TLS_CERT_KEY}: {e}")))?;
    check_private_key(&key).map_err(|e| fail(format!("{path} key {TLS_KEY_KEY}: {e}")))?;
    Ok((
        names::tls_certificate_secret(namespace, &r.name),
        ir::Secret::TlsCertificate { chain, key },
    ))
}

fn secret_string(s: &K8sSecret, key: &str) -> Option<String> {
    let bytes = s.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// At least one PEM `CERTIFICATE` block, and nothing that is not PEM.
pub fn check_certificates(pem_text: &str) -> Result<(), String> {
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
pub type SecretSet = BTreeMap<String, ir::Secret>;

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
/// Backend's inline `tls.validation`) resolved into trust, SNI and SAN matchers.
#[derive(Debug, Default)]
pub struct ValidationOutcome {
    pub tls: Option<ir::UpstreamTls>,
    pub secrets: SecretSet,
    pub problems: Vec<Problem>,
}

/// `field` is the path of the validation block in the object, for messages (`spec.tls.validation`).
pub fn resolve_validation(
    model: &Model,
    system_ca_path: &str,
    namespace: &str,
    v: &crate::api::TlsValidation,
    owner: (&str, &str, &str),
    field: &str,
) -> ValidationOutcome {
    use crate::api::SubjectAltNameType;
    let mut out = ValidationOutcome::default();
    let refs = v.ca_certificate_refs.as_deref().unwrap_or_default();
    let invalid = |m: String| Problem::accepted(reason::INVALID, m);
    let trust = match (refs.is_empty(), v.well_known_ca_certificates.as_deref()) {
        (false, Some(_)) => {
            out.problems.push(invalid(format!(
                "{field}: must not contain both caCertificateRefs and wellKnownCACertificates"
            )));
            return out;
        }
        (true, None) => {
            out.problems.push(invalid(format!(
                "{field}: must specify either caCertificateRefs or wellKnownCACertificates"
            )));
            return out;
        }
        (true, Some("System")) => {
            let ca = system_ca(system_ca_path);
            out.secrets.insert(ca.secret_name.clone(), ca.secret);
            ir::Trust::Sds(ca.secret_name)
        }
        (true, Some(other)) => {
            out.problems.push(invalid(format!(
                "{field}.wellKnownCACertificates: {other:?} is not supported; pier supports \"System\""
            )));
            return out;
        }
        (false, None) => {
            let refs: Vec<CaRef> = refs.iter().map(CaRef::from).collect();
            let ca = resolve_ca_refs(model, namespace, &refs, owner);
            out.problems.extend(ca.problems);
            let Some(bundle) = ca.bundle else {
                out.problems.push(Problem::accepted(
                    reason::NO_VALID_CA_CERTIFICATE,
                    format!("{field}.caCertificateRefs: no valid CA certificate"),
                ));
                return out;
            };
            out.secrets.insert(bundle.secret_name.clone(), bundle.secret);
            ir::Trust::Sds(bundle.secret_name)
        }
    };
    let mut sans = Vec::new();
    for (i, san) in v.subject_alt_names.iter().flatten().enumerate() {
        let m = match (&san.r#type, &san.hostname, &san.uri) {
            (SubjectAltNameType::Hostname, Some(h), None) => ir::SanMatch::Dns(h.clone()),
            (SubjectAltNameType::Uri, None, Some(u)) => ir::SanMatch::Uri(u.clone()),
            _ => {
                out.problems.push(invalid(format!(
                    "{field}.subjectAltNames[{i}]: type Hostname needs exactly hostname, type URI exactly uri"
                )));
                return out;
            }
        };
        sans.push(m);
    }
    if sans.is_empty() {
        sans.push(ir::SanMatch::Dns(v.hostname.clone()));
    }
    out.tls = Some(upstream_tls(Some(v.hostname.clone()), trust, sans));
    out
}
