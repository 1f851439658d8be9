//! The golden cases: where they are, their options, their documents.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pier::model::{Model, Resolution};
use pier::options::{Options, ResolveMode};
use serde::Deserialize;

pub const INPUTS: [&str; 3] = ["input.yaml", "options.yaml", "resolutions.yaml"];

/// Operator options a case may set (`options.yaml`); anything unset keeps pier's default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseOptions {
    controller_name: Option<String>,
    listener_address: Option<String>,
    allow_loopback: Option<bool>,
    allow_unix_sockets: Option<bool>,
    enable_dynamic_resolver: Option<bool>,
    denied_cidrs: Option<Vec<String>>,
    nat64_prefixes: Option<Vec<String>>,
    cluster_domains: Option<Vec<String>>,
    /// `--allow-cluster-local-suffix`, validated as the CLI does.
    cluster_local_suffixes: Option<Vec<String>>,
    dns_resolvers: Option<Vec<std::net::SocketAddr>>,
    allowed_hostnames: Option<Vec<String>>,
    system_ca_path: Option<String>,
    dns_refresh_ms: Option<u64>,
    dns_respect_ttl: Option<bool>,
    dns_lookup_family: Option<pier::ir::LookupFamily>,
    /// `envoy` (default) or `pier`; with `pier`, the case's `resolutions.yaml` says what each name resolved to.
    resolve_hostnames: Option<ResolveMode>,
}

impl CaseOptions {
    fn into_options(self) -> Options {
        let mut o = Options::default();
        if let Some(v) = self.controller_name {
            o.controller_name = v;
        }
        if let Some(v) = self.listener_address {
            o.listener_address = v;
        }
        if let Some(v) = self.system_ca_path {
            o.system_ca_path = v;
        }
        if let Some(v) = self.dns_refresh_ms {
            o.dns.refresh_rate_ms = v;
        }
        if let Some(v) = self.dns_respect_ttl {
            o.dns.respect_ttl = v;
        }
        if let Some(v) = self.dns_lookup_family {
            o.dns.lookup_family = v;
        }
        o.dns.resolvers = self.dns_resolvers.unwrap_or_default();
        let g = &mut o.guardrails;
        g.allow_loopback = self.allow_loopback.unwrap_or(false);
        g.allow_unix_sockets = self.allow_unix_sockets.unwrap_or(false);
        g.enable_dynamic_resolver = self.enable_dynamic_resolver.unwrap_or(false);
        g.denied_cidrs = self
            .denied_cidrs
            .unwrap_or_default()
            .iter()
            .map(|c| c.parse().expect("CIDR in options.yaml"))
            .collect();
        g.nat64_prefixes = self
            .nat64_prefixes
            .unwrap_or_default()
            .iter()
            .map(|c| c.parse().expect("IPv6 prefix in options.yaml"))
            .collect();
        g.cluster_domains = self.cluster_domains.unwrap_or_default();
        g.cluster_local_suffixes =
            pier::gateway::policy::cluster_local_suffixes(&self.cluster_local_suffixes.unwrap_or_default())
                .expect("clusterLocalSuffixes in options.yaml");
        g.allowed_hostnames = self.allowed_hostnames;
        o.resolution.mode = self.resolve_hostnames.unwrap_or_default();
        o
    }
}

/// What pier's resolver said about one name (`resolutions.yaml`: `name: [addresses]`, `name: {stale:
/// [addresses], error: why}`, or `name: {failed: why}`); a name not listed has not been resolved.
#[derive(Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum CaseResolution {
    Answered(Vec<IpAddr>),
    Stale { stale: Vec<IpAddr>, error: String },
    Failed { failed: String },
}

/// Names and what pier's resolver said about them.
pub type Resolutions = Vec<(String, Arc<Resolution>)>;

/// The case's resolutions (`resolutions.yaml`), as the resolver stage would put them in the model.
pub fn resolutions(case: &Path) -> Resolutions {
    let path = case.join("resolutions.yaml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let map: std::collections::BTreeMap<String, CaseResolution> =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    map.into_iter()
        .map(|(name, r)| {
            let r = match r {
                CaseResolution::Answered(addresses) => Resolution::Answered { addresses },
                CaseResolution::Stale { stale, error } => Resolution::Stale {
                    addresses: stale,
                    error,
                },
                CaseResolution::Failed { failed } => Resolution::Failed { error: failed },
            };
            (name, Arc::new(r))
        })
        .collect()
}

/// `model` with `resolutions` set.
pub fn resolve(model: &mut Model, resolutions: &Resolutions) {
    for (name, r) in resolutions {
        model.set_resolution(name, r.clone());
    }
}

pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

pub fn cases() -> Vec<PathBuf> {
    let only = std::env::var("CASE").ok().filter(|c| !c.is_empty());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(testdata())
        .expect("testdata/ exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("input.yaml").is_file())
        .filter(|p| only.as_deref().is_none_or(|c| p.file_name().is_some_and(|n| n == c)))
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no golden case matched (CASE={only:?})");
    dirs
}

pub fn options(case: &Path) -> Options {
    let path = case.join("options.yaml");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_saphyr::from_str::<CaseOptions>(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .into_options(),
        Err(_) => Options::default(),
    }
}

/// Splits a multi-document YAML text into its documents (on `---` lines).
pub fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line.trim_end() == "---" {
            docs.push(String::new());
        } else {
            let last = docs.last_mut().expect("one");
            last.push_str(line);
            last.push('\n');
        }
    }
    docs.retain(|d| {
        d.lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    });
    docs
}
