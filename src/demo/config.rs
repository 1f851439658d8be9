//! The directory pier serves in the demo, the Gateway listener ports, and the certificates of its
//! authenticated xDS.
//!
//! With the example's own ports (8080, 8443) pier serves `examples/` itself, so editing a file there shows a
//! live push to Envoy. With other ports it serves a copy whose Gateway listeners use them: the example's
//! files stay as they are in the repository.

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{EXAMPLE_HTTP_PORT, EXAMPLE_HTTPS_PORT};
use crate::certs::CertsSpec;
use crate::envoy::ads_bootstrap::XdsTls;
use crate::xds::identity::DEFAULT_TRUST_DOMAIN;
use crate::xds::transport::TlsFiles;

/// The listener port to use for `requested` (0: a free one), after checking that nothing else holds it on
/// 127.0.0.1, where Envoy will bind it. `flag` names the option that changes it.
pub fn listener_port(requested: u16, protocol: &str, flag: &str) -> Result<u16> {
    if requested == 0 {
        return Ok(crate::testkit::free_port(Ipv4Addr::LOCALHOST));
    }
    match TcpListener::bind((Ipv4Addr::LOCALHOST, requested)) {
        Ok(_) => Ok(requested),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => bail!(
            "port {requested} on 127.0.0.1 is in use, and the demo's {protocol} listener needs it: stop whatever holds \
             it, or choose another port with `{flag} PORT` (0 picks a free one)"
        ),
        Err(e) => bail!("cannot use port {requested} on 127.0.0.1 for the {protocol} listener ({flag}): {e}"),
    }
}

/// What pier should watch: `examples` itself when the ports are the example's, else a copy in `work` with
/// the Gateway listener ports rewritten. The flag says whether it is a copy.
pub fn config_dir(examples: &Path, work: &Path, http: u16, https: u16) -> Result<(PathBuf, bool)> {
    if (http, https) == (EXAMPLE_HTTP_PORT, EXAMPLE_HTTPS_PORT) {
        return Ok((examples.to_path_buf(), false));
    }
    let copy = work.join("config");
    std::fs::create_dir_all(&copy)?;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(examples)
        .with_context(|| format!("reading {}", examples.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    // Only the top-level manifests: upstream-certs/ holds nothing pier reads.
    for path in entries.iter().filter(|p| p.is_file() && is_manifest(p)) {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let text = with_listener_ports(&text, http, https).with_context(|| format!("rewriting {}", path.display()))?;
        std::fs::write(copy.join(path.file_name().expect("a file name")), text)?;
    }
    Ok((copy, true))
}

fn is_manifest(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

/// `text` (a YAML stream) with every Gateway's HTTP listeners on `http` and HTTPS listeners on `https`;
/// unchanged (comments and all) when it holds no Gateway.
fn with_listener_ports(text: &str, http: u16, https: u16) -> Result<String> {
    let mut docs: Vec<Value> = crate::model::yaml::values("the demo configuration", text)?
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    if !docs.iter().any(|d| d["kind"] == "Gateway") {
        return Ok(text.to_string());
    }
    for doc in docs.iter_mut().filter(|d| d["kind"] == "Gateway") {
        for listener in doc["spec"]["listeners"].as_array_mut().into_iter().flatten() {
            let port = match listener["protocol"].as_str() {
                Some("HTTP") => http,
                Some("HTTPS") => https,
                _ => continue,
            };
            listener["port"] = port.into();
        }
    }
    let rendered: Result<Vec<String>, _> = docs
        .iter()
        .filter(|d| !d.is_null())
        .map(crate::model::yaml::to_yaml)
        .collect();
    Ok(rendered?.join("---\n"))
}

/// The demo's xDS runs authenticated, as a deployment should: `pier certs` output in `work/pki` (a CA,
/// pier's certificate for 127.0.0.1, the Gateway's client certificate), pier's side and Envoy's side.
pub fn xds_pki(work: &Path, gateway: &str) -> Result<(TlsFiles, XdsTls)> {
    let out = work.join("pki");
    crate::certs::issue(&CertsSpec {
        out: out.clone(),
        trust_domain: DEFAULT_TRUST_DOMAIN.to_string(),
        server_names: Vec::new(),
        server_ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
        gateways: vec![gateway.to_string()],
        days: 1,
    })?;
    let server = TlsFiles {
        cert: out.join("server/tls.crt"),
        key: out.join("server/tls.key"),
        client_ca: out.join("ca.crt"),
        trust_domain: DEFAULT_TRUST_DOMAIN.to_string(),
        reload_interval: std::time::Duration::from_secs(5),
    };
    let client_dir = out.join("gateways").join(gateway.replace('/', "."));
    let path = |f: &str| client_dir.join(f).display().to_string();
    let client = XdsTls {
        cert: path("tls.crt"),
        key: path("tls.key"),
        ca: path("ca.crt"),
        server_name: None,
    };
    Ok((server, client))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_with_other_ports_changes_only_the_gateway_listeners() {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let work = tempfile::tempdir().unwrap();
        let (dir, copied) = config_dir(&examples, work.path(), 18080, 18443).unwrap();
        assert!(copied);
        let copy = crate::source::files::load_paths(std::slice::from_ref(&dir))
            .unwrap()
            .model;
        let original = crate::source::files::load_paths(std::slice::from_ref(&examples))
            .unwrap()
            .model;
        let edge = crate::model::ObjectKey::new("demo", "edge");
        let ports = |m: &crate::model::Model| {
            m.gateways[&edge]
                .spec
                .listeners
                .iter()
                .map(|l| l.port)
                .collect::<Vec<_>>()
        };
        assert_eq!((ports(&original), ports(&copy)), (vec![8080, 8443], vec![18080, 18443]));
        assert_eq!(copy.gateways[&edge].spec.tls, original.gateways[&edge].spec.tls);
        assert_eq!(copy.secrets, original.secrets, "the PEM blocks survive the rewrite");
        assert_eq!(
            std::fs::read_to_string(dir.join("30-routes.yaml")).unwrap(),
            std::fs::read_to_string(examples.join("30-routes.yaml")).unwrap(),
            "files without a Gateway are copied as they are"
        );

        let (same, copied) = config_dir(&examples, work.path(), 8080, 8443).unwrap();
        assert_eq!((same, copied), (examples, false));
    }
}
