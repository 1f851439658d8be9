//! [`Resolution`]: what pier's own resolver last learned about one external hostname, in the mode where
//! pier, not Envoy, resolves hostname Backends (`--resolve-hostnames pier`).
//!
//! Resolutions are an *input* of the translator like any object: the resolver stage (`runtime::resolve`)
//! looks names up and republishes the model with them, and the translator stays pure. They hold no
//! time: TTLs, refresh deadlines and the stale window are the stage's business, which turns them into
//! one of the three states here. The addresses are the resolver's answer as it came, unjudged: the
//! translator judges them with the one address policy (`gateway::policy::check_ip`), so a change of
//! guardrails re-judges them without a lookup, and goldens show the judgement.
//!
//! Keyed by [`key`] (the name in lower case, without a trailing dot, as a cluster-scoped key). A name
//! with no resolution yet is served no endpoints: pier never serves an address it has not judged.
//! No source can produce a resolution: no manifest kind maps here, so a namespace user cannot write one.

use std::net::IpAddr;

use std::sync::Arc;

use super::{Model, ObjectKey};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The latest lookup answered with these addresses (sorted, deduplicated; empty when the name has
    /// no address of the families asked for).
    Answered { addresses: Vec<IpAddr> },
    /// The latest lookup failed (`error`); `addresses` are the last answer's, served until the
    /// operator's stale window (`--dns-stale-for`) since the first failure ends.
    Stale { addresses: Vec<IpAddr>, error: String },
    /// Lookups fail and no answer is left to serve (none ever came, or the stale window ended).
    Failed { error: String },
}

impl Resolution {
    /// The addresses the resolver vouches for now (unjudged).
    pub fn addresses(&self) -> &[IpAddr] {
        match self {
            Resolution::Answered { addresses } | Resolution::Stale { addresses, .. } => addresses,
            Resolution::Failed { .. } => &[],
        }
    }
}

/// The model key of `hostname`'s resolution: DNS names are case-insensitive, and every name pier
/// resolves is absolute, so `API.example.com.` and `api.example.com` are one name.
pub fn key(hostname: &str) -> ObjectKey {
    ObjectKey::cluster(normalize(hostname))
}

/// `hostname` as [`key`] names it, for callers that want the text without interning it as a key.
pub fn normalize(hostname: &str) -> String {
    hostname.trim_end_matches('.').to_ascii_lowercase()
}

impl Model {
    /// Sets `hostname`'s resolution (the resolver stage, and tests that feed answers).
    pub fn set_resolution(&mut self, hostname: &str, resolution: Arc<Resolution>) {
        self.resolutions.insert(key(hostname), resolution);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_keyed_case_insensitively_and_absolute() {
        assert_eq!(key("API.Example.com."), key("api.example.com"));
        assert_eq!(key("api.example.com").name, "api.example.com");
        assert!(key("api.example.com").namespace.is_empty());
    }

    #[test]
    fn a_failed_name_vouches_for_no_address() {
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        let stale = Resolution::Stale {
            addresses: vec![ip],
            error: "timeout".into(),
        };
        assert_eq!(stale.addresses(), [ip]);
        assert!(Resolution::Failed { error: "x".into() }.addresses().is_empty());
    }
}
