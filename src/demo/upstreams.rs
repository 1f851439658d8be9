//! The demo upstreams: one server on every loopback address the bundled manifests send traffic to, and the
//! DNS answers that make the example's `*.demo.test` names point at them.
//!
//! One table, [`UPSTREAMS`], because the manifests only say half of it: they name the addresses of the
//! EndpointSlices and Envoy Gateway `ip` endpoints, but for hostnames only the name and port, and nothing
//! says which certificate a server presents or whether it asks for a client certificate. A unit test checks
//! the table against `examples/*.yaml`, so the two cannot drift apart silently.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::testkit::upstream::{ServerTls, Upstream};

/// How an upstream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain HTTP/1.1 and h2c.
    Plain,
    /// TLS with `upstream-certs/<stem>.crt` and `.key`.
    Server(&'static str),
    /// As `Server`, and a client certificate issued by `upstream-certs/ca.crt` is required.
    Mutual(&'static str),
}

/// One demo upstream.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Its name; it answers every request with it (`x-upstream`).
    pub name: &'static str,
    pub ip: Ipv4Addr,
    pub port: u16,
    pub tls: Tls,
    /// The hostname a Backend names it by (the demo DNS answers it with `ip`).
    pub hostname: Option<&'static str>,
}

const fn spec(name: &'static str, last: u8, port: u16, tls: Tls, hostname: Option<&'static str>) -> Spec {
    Spec {
        name,
        ip: Ipv4Addr::new(127, 0, 0, last),
        port,
        tls,
        hostname,
    }
}

/// Every upstream of the bundled example:
/// - `echo-1`, `echo-2`: EndpointSlice `echo-abc12` of Service `echo` (examples/20-services.yaml), which the
///   route `site` reaches directly (HTTP/1.1) and through the XBackend `echo-h2c` (h2c);
/// - `billing`: EndpointSlice `billing-x1`, re-encrypted to by BackendTLSPolicy `billing-tls`;
/// - `api`, `payments`, `weather`: the hostnames of XBackend `api`, GEP Backend `payments` (mutual TLS with
///   the Gateway's `edge-client-cert`) and draft Backend `weather` (examples/10-backends.yaml);
/// - `legacy`, `legacy-dr`: the `ip` endpoints of the Envoy Gateway Backends of those names (h2c).
pub const UPSTREAMS: &[Spec] = &[
    spec("echo-1", 2, 9080, Tls::Plain, None),
    spec("echo-2", 3, 9080, Tls::Plain, None),
    spec("api", 4, 9443, Tls::Server("api"), Some("api.demo.test")),
    spec("payments", 5, 9444, Tls::Mutual("payments"), Some("payments.demo.test")),
    spec("legacy", 6, 9082, Tls::Plain, None),
    spec("legacy-dr", 7, 9082, Tls::Plain, None),
    spec("billing", 8, 9445, Tls::Server("billing"), None),
    spec("weather", 9, 9081, Tls::Plain, Some("weather.demo.test")),
];

impl Spec {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }

    /// `echo-1 127.0.0.2:9080 (http)`.
    pub fn describe(&self) -> String {
        let how = match self.tls {
            Tls::Plain => "http",
            Tls::Server(_) => "tls",
            Tls::Mutual(_) => "mtls",
        };
        format!("{} {} ({how})", self.name, self.addr())
    }
}

/// The running upstreams, by name; they stop when dropped.
pub struct Upstreams(BTreeMap<&'static str, Upstream>);

impl Upstreams {
    /// Starts every upstream in [`UPSTREAMS`] with its certificates from `certs` (`examples/upstream-certs`).
    pub async fn start(certs: &Path) -> Result<Upstreams> {
        let mut running = BTreeMap::new();
        for spec in UPSTREAMS {
            let tls = server_tls(certs, spec.tls).with_context(|| format!("TLS settings of upstream {}", spec.name))?;
            let upstream = Upstream::bind(spec.name, spec.addr(), tls)
                .await
                .map_err(|e| bind_error(spec, e))?;
            running.insert(spec.name, upstream);
        }
        Ok(Upstreams(running))
    }

    /// The upstream called `name` (one of [`UPSTREAMS`]).
    pub fn get(&self, name: &str) -> &Upstream {
        self.0.get(name).unwrap_or_else(|| panic!("no demo upstream {name:?}"))
    }
}

/// The DNS answers: each upstream's hostname → its address.
pub fn dns_names() -> impl Iterator<Item = (&'static str, Ipv4Addr)> {
    UPSTREAMS.iter().filter_map(|s| s.hostname.map(|h| (h, s.ip)))
}

fn server_tls(certs: &Path, tls: Tls) -> Result<Option<ServerTls>> {
    let read = |file: &str| {
        let path = certs.join(file);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let (stem, mutual) = match tls {
        Tls::Plain => return Ok(None),
        Tls::Server(stem) => (stem, false),
        Tls::Mutual(stem) => (stem, true),
    };
    let mut server = ServerTls::from_pem(&read(&format!("{stem}.crt"))?, &read(&format!("{stem}.key"))?)
        .map_err(anyhow::Error::msg)?;
    if mutual {
        server = server
            .with_client_ca_pem(&read("ca.crt")?)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(Some(server))
}

fn bind_error(spec: &Spec, e: std::io::Error) -> anyhow::Error {
    let what = format!("cannot start demo upstream {} on {}", spec.name, spec.addr());
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            anyhow::anyhow!("{what}: the address is in use (is another `pier demo` running?)")
        }
        std::io::ErrorKind::AddrNotAvailable => anyhow::anyhow!(
            "{what}: this machine has no {} (Linux routes all of 127.0.0.0/8 to loopback; on macOS add it with \
             `sudo ifconfig lo0 alias {}`)",
            spec.ip,
            spec.ip
        ),
        _ => anyhow::anyhow!("{what}: {e}"),
    }
}

/// Fails when [`UPSTREAMS`] names something the manifests in `examples` do not.
pub fn check_against(examples: &Path) -> Result<()> {
    let mut text = String::new();
    for entry in std::fs::read_dir(examples).with_context(|| format!("reading {}", examples.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            text += &std::fs::read_to_string(&path)?;
        }
    }
    for spec in UPSTREAMS {
        let named = match spec.hostname {
            Some(host) => text.contains(&format!("hostname: {host}")),
            None => text.contains(&format!("\"{}\"", spec.ip)) || text.contains(&format!("address: {}", spec.ip)),
        };
        if !named || !text.contains(&format!("port: {}", spec.port)) {
            bail!("demo upstream {} is not in {}", spec.describe(), examples.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn examples() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
    }

    #[test]
    fn the_table_matches_the_bundled_manifests() {
        check_against(&examples()).unwrap();
        let names: Vec<_> = dns_names().collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn every_tls_upstream_has_usable_certificates() {
        for spec in UPSTREAMS {
            let tls = server_tls(&examples().join("upstream-certs"), spec.tls).unwrap();
            assert_eq!(tls.is_some(), spec.tls != Tls::Plain, "{}", spec.name);
            if let Tls::Mutual(_) = spec.tls {
                assert!(tls.unwrap().client_ca.is_some());
            }
        }
    }
}
