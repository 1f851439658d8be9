//! Who is on the other end of an ADS connection, and which Gateways it may receive.
//!
//! The scheme (documented in docs/security.md): pier's xDS server requires a client certificate issued
//! by the configured CA, and each URI SAN of the form `spiffe://<trust-domain>/ns/<namespace>/gateway/<name>`
//! grants that one Gateway. A certificate may carry several (one proxy fleet serving several Gateways);
//! URI SANs of another trust domain or another shape grant nothing, and DNS SANs are never read as
//! grants (a DNS name says where a host is, not what it may receive). A stream whose `node.cluster`
//! names a Gateway its certificate does not grant ends with `PermissionDenied` before anything is sent.
//!
//! Plaintext connections (loopback, or the operator's explicit insecure flag) carry no identity and are
//! trusted for whatever `node.cluster` says, as before authentication existed.

use std::collections::BTreeSet;

/// The default SPIFFE trust domain of client certificates (`pier certs` uses it too).
pub const DEFAULT_TRUST_DOMAIN: &str = "pier.local";

/// The peer's identity as the transport established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// No TLS: every Gateway (only on loopback or under `--xds-insecure-plaintext`).
    Plaintext,
    /// A verified client certificate granting these Gateways (`namespace/name`), possibly none.
    Certificate {
        gateways: BTreeSet<String>,
        subject: String,
    },
}

impl Identity {
    /// Whether this peer may receive `gateway` (`namespace/name`).
    pub fn allows(&self, gateway: &str) -> bool {
        match self {
            Identity::Plaintext => true,
            Identity::Certificate { gateways, .. } => gateways.contains(gateway),
        }
    }

    /// A verified client certificate that grants some Gateway: a proxy that has proved who it is (and
    /// stops counting against its address's cap on unauthenticated connections).
    pub fn is_authenticated(&self) -> bool {
        matches!(self, Identity::Certificate { gateways, .. } if !gateways.is_empty())
    }

    /// For logs and `/debug/clients`.
    pub fn describe(&self) -> String {
        match self {
            Identity::Plaintext => "plaintext".to_string(),
            Identity::Certificate { subject, .. } => subject.clone(),
        }
    }

    /// The identity of a verified certificate with these URI SANs.
    pub fn from_uris<'a>(trust_domain: &str, uris: impl IntoIterator<Item = &'a str>, subject: String) -> Identity {
        let gateways = uris.into_iter().filter_map(|u| gateway_of(trust_domain, u)).collect();
        Identity::Certificate { gateways, subject }
    }
}

/// The SPIFFE ID that grants `namespace/name` under `trust_domain`.
pub fn spiffe_id(trust_domain: &str, namespace: &str, name: &str) -> String {
    format!("spiffe://{trust_domain}/ns/{namespace}/gateway/{name}")
}

/// `namespace/name` if `uri` is exactly `spiffe://<trust_domain>/ns/<namespace>/gateway/<name>`.
fn gateway_of(trust_domain: &str, uri: &str) -> Option<String> {
    let path = uri
        .strip_prefix("spiffe://")?
        .strip_prefix(trust_domain)?
        .strip_prefix('/')?;
    let mut parts = path.split('/');
    let (Some("ns"), Some(ns), Some("gateway"), Some(name), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let label = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    (label(ns) && label(name)).then(|| format!("{ns}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_spiffe_ids_of_the_trust_domain_grant() {
        let id = Identity::from_uris(
            "pier.local",
            [
                "spiffe://pier.local/ns/demo/gateway/edge",
                "spiffe://pier.local/ns/team/gateway/api",
                "spiffe://other.domain/ns/demo/gateway/evil",
                "spiffe://pier.local.evil/ns/demo/gateway/evil2",
                "spiffe://pier.local/ns/demo/gateway/edge/extra",
                "spiffe://pier.local/ns/demo/gateway/",
                "spiffe://pier.local/ns/Demo/gateway/upper",
                "spiffe://pier.local/ns/demo/gateway/a/../b",
                "https://pier.local/ns/demo/gateway/web",
            ],
            "CN=edge".into(),
        );
        let Identity::Certificate { gateways, .. } = &id else {
            panic!()
        };
        assert_eq!(
            gateways.iter().map(String::as_str).collect::<Vec<_>>(),
            ["demo/edge", "team/api"]
        );
        assert!(id.allows("demo/edge"));
        assert!(!id.allows("demo/evil"));
        assert!(!id.allows("demo/other"));
        assert!(Identity::Plaintext.allows("any/thing"));
    }

    #[test]
    fn spiffe_ids_round_trip() {
        let uri = spiffe_id("pier.local", "demo", "edge");
        assert_eq!(gateway_of("pier.local", &uri).as_deref(), Some("demo/edge"));
    }
}
