//! `pier certs`: the certificates of a self-managed authenticated xDS setup — a CA, pier's server
//! certificate, and one client certificate per Gateway whose URI SAN is the Gateway's SPIFFE ID
//! (`xds::identity`). Each is written in the layout of a Kubernetes TLS Secret (and cert-manager's):
//! a directory holding `tls.crt`, `tls.key` and `ca.crt`, so `kubectl create secret generic NAME
//! --from-file=DIR` turns it into the Secret `deploy/` mounts.
//!
//! The CA is created once (`ca.crt`, `ca.key` in the output directory) and reused by later runs, so
//! adding a Gateway later issues its certificate from the same CA. Keys are written owner-only.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};

use crate::xds::identity::spiffe_id;

/// What to issue.
#[derive(Debug, Clone)]
pub struct CertsSpec {
    pub out: PathBuf,
    pub trust_domain: String,
    /// DNS names and addresses Envoy reaches pier at (the server certificate's SANs).
    pub server_names: Vec<String>,
    pub server_ips: Vec<IpAddr>,
    /// Gateways (`namespace/name`) to issue client certificates for.
    pub gateways: Vec<String>,
    pub days: u32,
}

/// What was written, for the report.
#[derive(Debug, Default)]
pub struct Written {
    pub ca_created: bool,
    pub dirs: Vec<PathBuf>,
}

pub fn issue(spec: &CertsSpec) -> Result<Written> {
    std::fs::create_dir_all(&spec.out).with_context(|| format!("creating {}", spec.out.display()))?;
    let (ca_pem, issuer, ca_created) = ca(&spec.out, &spec.trust_domain, spec.days)?;
    let mut written = Written {
        ca_created,
        dirs: Vec::new(),
    };
    if !spec.server_names.is_empty() || !spec.server_ips.is_empty() {
        let mut sans: Vec<SanType> = Vec::new();
        for name in &spec.server_names {
            sans.push(SanType::DnsName(
                name.as_str()
                    .try_into()
                    .with_context(|| format!("--server-name {name:?}"))?,
            ));
        }
        sans.extend(spec.server_ips.iter().map(|ip| SanType::IpAddress(*ip)));
        let cn = spec.server_names.first().cloned().unwrap_or_else(|| "pier xDS".into());
        let dir = spec.out.join("server");
        leaf(
            &dir,
            &issuer,
            &ca_pem,
            &cn,
            sans,
            ExtendedKeyUsagePurpose::ServerAuth,
            spec.days,
        )?;
        written.dirs.push(dir);
    }
    for gateway in &spec.gateways {
        let Some((ns, name)) = gateway
            .split_once('/')
            .filter(|(n, m)| !n.is_empty() && !m.is_empty() && !m.contains('/'))
        else {
            bail!("--gateway must be NAMESPACE/NAME, got {gateway:?}");
        };
        let uri = spiffe_id(&spec.trust_domain, ns, name);
        let san = SanType::URI(uri.as_str().try_into().with_context(|| format!("SPIFFE ID {uri:?}"))?);
        let dir = spec.out.join("gateways").join(format!("{ns}.{name}"));
        leaf(
            &dir,
            &issuer,
            &ca_pem,
            &uri,
            vec![san],
            ExtendedKeyUsagePurpose::ClientAuth,
            spec.days,
        )?;
        written.dirs.push(dir);
    }
    Ok(written)
}

/// The CA in `out` (created when absent): its PEM, an issuer, and whether it was created now.
fn ca(out: &Path, trust_domain: &str, days: u32) -> Result<(String, Issuer<'static, KeyPair>, bool)> {
    let (cert_path, key_path) = (out.join("ca.crt"), out.join("ca.key"));
    if cert_path.exists() || key_path.exists() {
        let cert = std::fs::read_to_string(&cert_path).with_context(|| format!("reading {}", cert_path.display()))?;
        let key = std::fs::read_to_string(&key_path).with_context(|| format!("reading {}", key_path.display()))?;
        let key = KeyPair::from_pem(&key).with_context(|| format!("{}: not a private key", key_path.display()))?;
        let issuer = Issuer::from_ca_cert_pem(&cert, key)
            .with_context(|| format!("{}: not a CA certificate", cert_path.display()))?;
        return Ok((cert, issuer, false));
    }
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, format!("pier xDS CA ({trust_domain})"));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut params, days.saturating_mul(2));
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    write(&cert_path, &cert.pem(), false)?;
    write(&key_path, &key.serialize_pem(), true)?;
    Ok((cert.pem(), Issuer::new(params, key), true))
}

fn leaf(
    dir: &Path,
    issuer: &Issuer<'static, KeyPair>,
    ca_pem: &str,
    cn: &str,
    sans: Vec<SanType>,
    usage: ExtendedKeyUsagePurpose,
    days: u32,
) -> Result<()> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, cn);
    params.subject_alt_names = sans;
    params.extended_key_usages = vec![usage];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    validity(&mut params, days);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write(&dir.join("tls.crt"), &cert.pem(), false)?;
    write(&dir.join("tls.key"), &key.serialize_pem(), true)?;
    write(&dir.join("ca.crt"), ca_pem, false)
}

fn validity(params: &mut CertificateParams, days: u32) {
    let now = time::OffsetDateTime::now_utc();
    // An hour of slack for clocks a little behind.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(i64::from(days));
}

/// Writes atomically (a temporary file renamed into place); keys are owner-only from the start.
fn write(path: &Path, contents: &str, secret: bool) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    file.write_all(contents.as_bytes())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}
