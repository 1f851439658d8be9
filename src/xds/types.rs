//! The five xDS resource types pier serves, their type URLs, and the order they are pushed in.
//!
//! Owns nothing but the naming; every other file refers to a type through [`XdsType`] rather than a
//! type-URL string, so a typo cannot route a resource to the wrong sub-stream.

use std::sync::OnceLock;

use prost::Name;

use crate::envoy::pb::{cluster, endpoint, listener, route, tls};

/// An xDS resource type. `Ord` is the push order within one batch of responses: secrets and clusters
/// (with their endpoints) before listeners and routes, so a proxy never holds a reference to something
/// it has not been sent yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum XdsType {
    Secret,
    Cluster,
    Endpoint,
    Listener,
    Route,
}

impl XdsType {
    /// All types, in push order.
    pub const ALL: [XdsType; 5] = [
        XdsType::Secret,
        XdsType::Cluster,
        XdsType::Endpoint,
        XdsType::Listener,
        XdsType::Route,
    ];

    /// Position in [`XdsType::ALL`], for per-type arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `type.googleapis.com/envoy.config.cluster.v3.Cluster` and so on.
    pub fn type_url(self) -> &'static str {
        static URLS: OnceLock<[String; 5]> = OnceLock::new();
        let urls = URLS.get_or_init(|| {
            [
                tls::Secret::type_url(),
                cluster::Cluster::type_url(),
                endpoint::ClusterLoadAssignment::type_url(),
                listener::Listener::type_url(),
                route::RouteConfiguration::type_url(),
            ]
        });
        &urls[self.index()]
    }

    pub fn from_type_url(url: &str) -> Option<XdsType> {
        XdsType::ALL.into_iter().find(|t| t.type_url() == url)
    }

    /// Short name for logs, metrics labels and JSON (the `Resources` field name).
    pub const fn as_str(self) -> &'static str {
        match self {
            XdsType::Secret => "secrets",
            XdsType::Cluster => "clusters",
            XdsType::Endpoint => "endpoints",
            XdsType::Listener => "listeners",
            XdsType::Route => "routes",
        }
    }

    /// Clusters and listeners are full-state in SotW (a missing name is a deletion) and are the only
    /// types a legacy (empty) request subscribes to wildcard.
    pub const fn is_full_state(self) -> bool {
        matches!(self, XdsType::Cluster | XdsType::Listener)
    }

    /// Listeners and routes: pushed only once the clusters they may point at are acknowledged.
    pub const fn is_gated(self) -> bool {
        matches!(self, XdsType::Listener | XdsType::Route)
    }
}

impl std::fmt::Display for XdsType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_urls_round_trip() {
        for t in XdsType::ALL {
            assert_eq!(XdsType::from_type_url(t.type_url()), Some(t));
            assert_eq!(XdsType::ALL[t.index()], t);
        }
        assert_eq!(
            XdsType::Cluster.type_url(),
            "type.googleapis.com/envoy.config.cluster.v3.Cluster"
        );
        assert_eq!(
            XdsType::from_type_url("type.googleapis.com/envoy.service.runtime.v3.Runtime"),
            None
        );
    }
}
