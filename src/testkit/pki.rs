//! Real certificates for TLS tests, minted fresh per test with rcgen: a CA, server certificates with chosen
//! DNS and URI SANs, client certificates, and — for the "wrong CA" cases — a second CA that signed nothing
//! the upstreams present. Also [`subject_cn`], a minimal X.509 reader so upstreams can report which client
//! certificate they were shown without an X.509 parsing dependency. (The demo does not mint: its upstreams
//! serve the fixed certificates in `examples/upstream-certs/`, which its manifests trust.)

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority that can issue leaves.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// An issued certificate with its private key, in the forms tests need (PEM for manifests, DER for
/// rustls).
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    pub cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl Leaf {
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

impl Ca {
    pub fn new(common_name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        Ca {
            issuer: CertifiedIssuer::self_signed(params, key).expect("self-signing the CA"),
        }
    }

    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server certificate for `dns_names` (DNS SANs) and `uris` (URI SANs, e.g. SPIFFE IDs).
    pub fn server(&self, dns_names: &[&str], uris: &[&str]) -> Leaf {
        let mut params =
            CertificateParams::new(dns_names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("server params");
        for uri in uris {
            params
                .subject_alt_names
                .push(SanType::URI((*uri).try_into().expect("URI SAN")));
        }
        let cn = dns_names.first().copied().unwrap_or("test server");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params)
    }

    /// A client certificate whose subject is `CN=<common_name>`.
    pub fn client(&self, common_name: &str) -> Leaf {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(params)
    }

    fn issue(&self, mut params: CertificateParams) -> Leaf {
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("signing the leaf");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }
}

/// Every `CERTIFICATE` block of a PEM text, in order; an error when there is none.
pub fn certificates_from_pem(text: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = pem::parse_many(text)
        .map_err(|e| format!("certificate: {e}"))?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(|p| CertificateDer::from(p.into_contents()))
        .collect();
    if certs.is_empty() {
        return Err("no `CERTIFICATE` block".to_string());
    }
    Ok(certs)
}

/// The first PKCS#8 `PRIVATE KEY` block of a PEM text (what openssl and rcgen write).
pub fn pkcs8_key_from_pem(text: &str) -> Result<PrivateKeyDer<'static>, String> {
    let key = pem::parse_many(text)
        .map_err(|e| format!("key: {e}"))?
        .into_iter()
        .find(|p| p.tag() == "PRIVATE KEY")
        .ok_or("key: no PKCS#8 `PRIVATE KEY` block")?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.into_contents())))
}

/// The subject's common name of a DER certificate (`None` if absent or unreadable). Walks
/// Certificate → TBSCertificate → [version] serial sigAlg issuer validity **subject**.
pub fn subject_cn(der: &[u8]) -> Option<String> {
    let (_, cert, _) = tlv(der)?;
    let (_, tbs, _) = tlv(cert)?;
    let mut rest = tbs;
    let mut fields = Vec::new();
    while !rest.is_empty() && fields.len() < 7 {
        let (tag, value, next) = tlv(rest)?;
        fields.push((tag, value));
        rest = next;
    }
    let skip_version = usize::from(fields.first()?.0 == 0xa0);
    let subject = fields.get(skip_version + 4)?.1;
    // Name = SEQUENCE OF RDN (SET OF AttributeTypeAndValue (SEQUENCE { OID, value })).
    let mut rdns = subject;
    while !rdns.is_empty() {
        let (_, set, next) = tlv(rdns)?;
        let (_, atv, _) = tlv(set)?;
        let (_, oid, value) = tlv(atv)?;
        if oid == [0x55, 0x04, 0x03] {
            let (_, text, _) = tlv(value)?;
            return Some(String::from_utf8_lossy(text).into_owned());
        }
        rdns = next;
    }
    None
}

/// One DER TLV: (tag, value, the bytes after it). Short and long definite lengths only, as DER requires.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *input.first()?;
    let first = *input.get(1)? as usize;
    let (len, header) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let len = input
            .get(2..2 + n)?
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, 2 + n)
    };
    let value = input.get(header..header + len)?;
    Some((tag, value, &input[header + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_leaves_whose_subject_can_be_read_back() {
        let ca = Ca::new("e2e root");
        let client = ca.client("pier-e2e-client");
        assert_eq!(subject_cn(&client.cert_der).as_deref(), Some("pier-e2e-client"));
        let server = ca.server(&["api.e2e.test"], &["spiffe://e2e.test/api"]);
        assert_eq!(subject_cn(&server.cert_der).as_deref(), Some("api.e2e.test"));
        assert_eq!(subject_cn(&ca.cert_der()).as_deref(), Some("e2e root"));
        assert!(server.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(server.key_pem.contains("PRIVATE KEY"));
        let chain = format!("{}{}", server.cert_pem, ca.cert_pem());
        assert_eq!(
            certificates_from_pem(&chain).unwrap(),
            vec![server.cert_der.clone(), ca.cert_der()]
        );
        assert!(
            certificates_from_pem(&server.key_pem).is_err(),
            "a key is not a certificate"
        );
        assert_eq!(pkcs8_key_from_pem(&server.key_pem).unwrap(), server.key_der());
        assert_eq!(
            subject_cn(b"\x30\x03\x02\x01"),
            None,
            "truncated input is not a certificate"
        );
    }
}
