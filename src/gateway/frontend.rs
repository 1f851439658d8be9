//! Client certificate validation on HTTPS listeners: the Gateway's `spec.tls.frontend`.
//!
//! `default` applies to every HTTPS listener; a `perPort` entry replaces it for the HTTPS listeners on its
//! port. Each `caCertificateRefs` entry is a ConfigMap (Core) or Secret (pier also reads these) holding
//! `ca.crt`, in the Gateway's namespace or — with a ReferenceGrant from the Gateway — another one. The
//! valid references form one trust bundle. Invalid ones set the listener's `ResolvedRefs=False` with
//! `InvalidCACertificateRef`, `InvalidCACertificateKind` or `RefNotPermitted`; when none is valid the
//! listener is also `Accepted=False/NoValidCACertificate` and is not served (serving it without the client
//! check it asks for would let anyone in). `AllowInsecureFallback` accepts clients without a certificate or
//! with one that fails verification (Envoy: no client certificate required and untrusted chains accepted).

use gateway_api::apis::standard::gateways::{
    Gateway, GatewayTlsFrontendDefaultValidation, GatewayTlsFrontendDefaultValidationMode as Mode,
};

use super::conditions::ListenerReason;
use super::refs;
use super::tls::{self, CaRef};
use crate::api::consts::{CA_CERT_KEY, CORE_GROUP, KIND_CONFIGMAP, KIND_SECRET};
use crate::ir;
use crate::ir::names;
use crate::model::{Model, ObjectKey};

/// What the frontend configuration means for the HTTPS listeners of one port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortValidation {
    /// The trust bundle and mode, when at least one reference is valid.
    pub validation: Option<(ir::ClientValidation, ir::Secret)>,
    /// One (reason, message) per invalid reference, in reference order.
    pub problems: Vec<(ListenerReason, String)>,
}

/// A validation block as written, whichever place (`default` or a `perPort` entry) it came from: Gateway
/// API repeats the same struct per place, so the generated types differ.
struct Written {
    /// (group, kind, name, namespace)
    refs: Vec<(String, String, String, Option<String>)>,
    insecure_fallback: bool,
    field: String,
    /// Names the trust bundle when several references form it.
    scope: String,
}

/// The validation of HTTPS listeners on `port`, or `None` when the Gateway asks for none there.
pub fn for_port(model: &Model, gw_key: &ObjectKey, gw: &Gateway, port: i32) -> Option<PortValidation> {
    use gateway_api::apis::standard::gateways::GatewayTlsFrontendPerPortTlsValidationMode as PortMode;
    let frontend = gw.spec.tls.as_ref()?.frontend.as_ref()?;
    let written = match frontend
        .per_port
        .iter()
        .flatten()
        .enumerate()
        .find(|(_, p)| p.port == port)
    {
        Some((i, per_port)) => {
            let v = per_port.tls.validation.as_ref()?;
            Written {
                refs: v
                    .ca_certificate_refs
                    .iter()
                    .map(|r| (r.group.clone(), r.kind.clone(), r.name.clone(), r.namespace.clone()))
                    .collect(),
                insecure_fallback: v.mode == Some(PortMode::AllowInsecureFallback),
                field: format!("spec.tls.frontend.perPort[{i}].tls.validation"),
                scope: port.to_string(),
            }
        }
        None => {
            let v: &GatewayTlsFrontendDefaultValidation = frontend.default.validation.as_ref()?;
            Written {
                refs: v
                    .ca_certificate_refs
                    .iter()
                    .map(|r| (r.group.clone(), r.kind.clone(), r.name.clone(), r.namespace.clone()))
                    .collect(),
                insecure_fallback: v.mode == Some(Mode::AllowInsecureFallback),
                field: "spec.tls.frontend.default.validation".to_string(),
                scope: "default".to_string(),
            }
        }
    };
    Some(resolve(model, gw_key, &written))
}

fn resolve(model: &Model, gw: &ObjectKey, w: &Written) -> PortValidation {
    let mut problems = Vec::new();
    let mut pems: Vec<(String, String, String)> = Vec::new();
    for (i, (group, kind, name, namespace)) in w.refs.iter().enumerate() {
        let at = format!("{}.caCertificateRefs[{i}]", w.field);
        let ns = namespace.clone().unwrap_or_else(|| gw.namespace.to_string());
        if group != CORE_GROUP || (kind != KIND_CONFIGMAP && kind != KIND_SECRET) {
            problems.push((
                ListenerReason::InvalidCACertificateKind,
                format!(
                    "{at}: kind {}/{kind} is not supported (core ConfigMap or Secret)",
                    if group.is_empty() { "core" } else { group }
                ),
            ));
            continue;
        }
        if !refs::gateway_may_use(model, gw, kind, &ns, name) {
            problems.push((
                ListenerReason::RefNotPermitted,
                format!(
                    "{at}: {kind} {ns}/{name} is in another namespace and no ReferenceGrant allows it{}",
                    model.grants_note()
                ),
            ));
            continue;
        }
        let one = CaRef {
            group: group.clone(),
            kind: kind.clone(),
            name: name.clone(),
            key: CA_CERT_KEY.to_string(),
        };
        let owner = ("gateway", gw.namespace.as_str(), gw.name.as_str());
        let outcome = tls::resolve_ca_refs(model, &ns, &[one], owner, tls::CaKinds::Core);
        match (outcome.bundle, outcome.problems.first()) {
            (Some(b), _) => {
                if let ir::Secret::CaBundle { pem } = b.secret {
                    pems.push((kind.to_ascii_lowercase(), format!("{ns}/{name}"), pem));
                }
            }
            (None, Some(p)) => problems.push((ListenerReason::InvalidCACertificateRef, format!("{at}: {}", p.message))),
            (None, None) => problems.push((ListenerReason::InvalidCACertificateRef, format!("{at}: no certificate"))),
        }
    }
    let validation = (!pems.is_empty()).then(|| {
        // One reference keeps the shared per-object name; several become the Gateway's own bundle.
        let secret_name = match pems.as_slice() {
            [(kind, nsname, _)] => {
                let (ns, name) = nsname.split_once('/').unwrap_or_default();
                names::ca_secret(kind, ns, name)
            }
            _ => names::ca_bundle_secret("gateway-frontend", &gw.namespace, &format!("{}/{}", gw.name, w.scope)),
        };
        let pem = pems
            .iter()
            .map(|(_, _, p)| p.trim_end().to_string() + "\n")
            .collect::<String>();
        (
            ir::ClientValidation {
                ca: secret_name,
                allow_insecure_fallback: w.insecure_fallback,
            },
            ir::Secret::CaBundle { pem },
        )
    });
    PortValidation { validation, problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = include_str!("../../examples/upstream-certs/ca.crt");

    fn model(extra: &str) -> (Model, Gateway) {
        let text = format!(
            "apiVersion: v1
kind: ConfigMap
metadata: {{name: ca, namespace: gw-ns}}
data: {{ca.crt: {ca:?}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: other-ca, namespace: certs}}
data: {{ca.crt: {ca:?}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: empty, namespace: gw-ns}}
data: {{}}
{extra}",
            ca = CA
        );
        let loaded = crate::model::load::parse_texts(&[("t.yaml".to_string(), text)]).unwrap();
        let gw: Gateway = serde_saphyr::from_str(
            "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: gw-ns}
spec:
  gatewayClassName: pier
  listeners: [{name: https, port: 443, protocol: HTTPS}]
  tls:
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}]
      perPort:
        - port: 8443
          tls:
            validation:
              mode: AllowInsecureFallback
              caCertificateRefs:
                - {group: '', kind: ConfigMap, name: other-ca, namespace: certs}
                - {group: example.com, kind: Vault, name: v}
                - {group: '', kind: ConfigMap, name: empty}
",
        )
        .unwrap();
        (loaded.model, gw)
    }

    #[test]
    fn default_and_per_port() {
        let (m, gw) = model("");
        let key = ObjectKey::new("gw-ns", "gw");
        let d = for_port(&m, &key, &gw, 443).expect("default applies");
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let (v, _) = d.validation.unwrap();
        assert_eq!(v.ca, "ca/configmap/gw-ns/ca");
        assert!(!v.allow_insecure_fallback);

        // Cross-namespace without a grant, an unknown kind and a ConfigMap without ca.crt: all invalid.
        let p = for_port(&m, &key, &gw, 8443).expect("per-port applies");
        let reasons: Vec<ListenerReason> = p.problems.iter().map(|(r, _)| *r).collect();
        assert_eq!(
            reasons,
            vec![
                ListenerReason::RefNotPermitted,
                ListenerReason::InvalidCACertificateKind,
                ListenerReason::InvalidCACertificateRef
            ]
        );
        assert!(
            p.validation.is_none(),
            "no reference is valid: the listener is not served"
        );
        assert!(
            p.problems[0]
                .1
                .starts_with("spec.tls.frontend.perPort[0].tls.validation.caCertificateRefs[0]")
        );
    }

    #[test]
    fn grant_opens_the_other_namespace() {
        let (m, gw) = model(
            "---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: gw-ns}]
  to: [{group: '', kind: ConfigMap}]
",
        );
        let p = for_port(&m, &ObjectKey::new("gw-ns", "gw"), &gw, 8443).unwrap();
        assert_eq!(p.problems.len(), 2, "{:?}", p.problems);
        let (v, _) = p.validation.expect("the granted reference is valid");
        assert_eq!(v.ca, "ca/configmap/certs/other-ca");
        assert!(v.allow_insecure_fallback);
    }
}
