//! What one proxyless gRPC client is served of its Gateway's proxyless half: the half itself, except that
//! a cluster verified against a certificate provider the client's bootstrap does not declare
//! (`envoy::proxyless::tls`) is its fallback, a cluster with no endpoints under the same name. The
//! client's routes still name the cluster, so its calls there fail at once; given the real cluster it
//! would NACK it (an unknown instance), and NACK containment must not be set off by a client's missing
//! file.
//!
//! A variant is computed when a client's half changes, not per request: the cluster map is persistent,
//! so the variant shares every other resource with the half, and a client declaring everything gets
//! the half itself.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Snapshot, View};
use crate::xds::XdsType;

impl Snapshot {
    /// The guarded clusters a client declaring `declared` cannot be given: `(cluster, instance)`.
    pub fn undeclared<'a>(&'a self, declared: &'a BTreeSet<String>) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.guards
            .iter()
            .filter(|(_, g)| !declared.contains(&g.instance))
            .map(|(name, g)| (name.as_str(), g.instance.as_str()))
    }

    /// What a client whose bootstrap declares `declared` is served of this (proxyless) snapshot.
    pub fn for_declared(self: &Arc<Self>, declared: &BTreeSet<String>) -> Arc<Snapshot> {
        let mut entries = self.view(XdsType::Cluster).entries.clone();
        let mut swapped = false;
        for (name, g) in self.guards.iter().filter(|(_, g)| !declared.contains(&g.instance)) {
            entries.insert(name.clone(), g.fallback.clone());
            swapped = true;
        }
        if !swapped {
            return self.clone();
        }
        let mut variant = Snapshot::clone(self);
        variant.types[XdsType::Cluster.index()] = Arc::new(View::new(entries));
        Arc::new(variant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{GatewayOut, Guard, Res};

    fn res(name: &str, service: &str) -> Arc<Res> {
        use crate::envoy::pb::cluster;
        Arc::new(Res::message(&cluster::Cluster {
            name: name.into(),
            eds_cluster_config: Some(cluster::cluster::EdsClusterConfig {
                eds_config: None,
                service_name: service.into(),
            }),
            ..Default::default()
        }))
    }

    fn half() -> Arc<Snapshot> {
        let mut out = GatewayOut::default();
        out.clusters.insert("plain".into(), res("plain", "plain"));
        out.clusters.insert("tls".into(), res("tls", "tls"));
        let guard = Guard {
            instance: "ca/configmap/ns/ca".into(),
            fallback: res("tls", "pier/invalid-backend-ref"),
        };
        out.guards.insert("tls".into(), Arc::new(guard));
        Arc::new(Snapshot::of_types("ns/gw", &out))
    }

    #[test]
    fn a_client_declaring_the_instance_gets_the_half_itself() {
        let half = half();
        let declared = BTreeSet::from(["ca/configmap/ns/ca".to_string(), "other".to_string()]);
        assert!(Arc::ptr_eq(&half.for_declared(&declared), &half));
        assert_eq!(half.undeclared(&declared).count(), 0);
    }

    #[test]
    fn a_client_without_it_gets_the_fallback_under_the_same_name_and_nothing_else_changes() {
        let half = half();
        let none = BTreeSet::new();
        let variant = half.for_declared(&none);
        let clusters = &variant.view(XdsType::Cluster).entries;
        assert_eq!(clusters["tls"], res("tls", "pier/invalid-backend-ref"));
        assert!(Arc::ptr_eq(
            &clusters["plain"],
            &half.view(XdsType::Cluster).entries["plain"]
        ));
        assert_ne!(variant.version(XdsType::Cluster), half.version(XdsType::Cluster));
        assert_eq!(variant.version(XdsType::Listener), half.version(XdsType::Listener));
        assert_eq!(
            half.undeclared(&none).collect::<Vec<_>>(),
            [("tls", "ca/configmap/ns/ca")]
        );
    }
}
