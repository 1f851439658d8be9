//! Which kind of xDS client is on a stream: an Envoy, or a gRPC library that speaks xDS itself
//! (proxyless: grpcio, grpc-go, grpc-java, tonic-xds). Each gets its own half of the Gateway's snapshot
//! (`envoy::proxyless`): an Envoy asks for every listener by wildcard and must never receive a gRPC
//! client's API listeners, and a gRPC client rejects what only Envoy understands.
//!
//! Told by `node.user_agent_name`, which every client sets (gRFC A27 has gRPC send its library's name):
//! Envoy sends `envoy`; gRPC's libraries send a name containing `grpc` (`gRPC C-core`, `gRPC Go`,
//! `gRPC Java`), tonic-xds one containing `tonic`. Anything else is served as an Envoy, as before this
//! distinction existed.

use std::collections::BTreeSet;
use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::google::protobuf::value::Kind;
use envoy_types::pb::google::protobuf::{ListValue, Struct, Value};
use tracing::warn;

use super::cache::Snapshot;
use crate::envoy::proxyless::tls::DECLARED;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    #[default]
    Envoy,
    /// A proxyless gRPC client.
    Grpc,
}

impl Agent {
    pub fn of(node: Option<&Node>) -> Agent {
        let name = node.map_or(String::new(), |n| n.user_agent_name.to_ascii_lowercase());
        if name.contains("grpc") || name.contains("tonic") {
            Agent::Grpc
        } else {
            Agent::Envoy
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Agent::Envoy => "envoy",
            Agent::Grpc => "grpc",
        }
    }
}

/// Instances a stream's declaration is read up to: a node is untrusted input, and no Gateway needs
/// more CAs than this; one declared beyond it counts as not declared (its backend fails closed).
pub const MAX_DECLARED: usize = 256;

/// What a gRPC client can verify: the certificate provider instances its node metadata declares
/// (`envoy::proxyless::tls`), and what it was last served for them.
#[derive(Debug, Default)]
pub struct Trust {
    pub declared: BTreeSet<String>,
    /// The last proxyless half seen, and what this client got of it.
    served: Option<(Arc<Snapshot>, Arc<Snapshot>)>,
    /// Clusters already logged as unverifiable here (said once per stream).
    told: BTreeSet<String>,
}

impl Trust {
    /// The instances `node.metadata[DECLARED]` lists (a list of strings; anything else declares none),
    /// the first [`MAX_DECLARED`] of them.
    pub fn of(node: Option<&Node>) -> Trust {
        let list = node
            .and_then(|n| n.metadata.as_ref())
            .and_then(|m| m.fields.get(DECLARED))
            .and_then(|v| match &v.kind {
                Some(Kind::ListValue(l)) => Some(&l.values),
                _ => None,
            });
        let declared = list
            .into_iter()
            .flatten()
            .filter_map(|v| match &v.kind {
                Some(Kind::StringValue(s)) => Some(s.clone()),
                _ => None,
            })
            .take(MAX_DECLARED)
            .collect();
        Trust {
            declared,
            ..Trust::default()
        }
    }

    /// The node metadata declaring `instances`: what a gRPC client sends when its bootstrap came from
    /// `pier bootstrap --grpc --trust-dir` (`envoy::grpc_bootstrap`), the form [`Trust::of`] reads.
    pub fn metadata(instances: &[&str]) -> Struct {
        let text = |s: &&str| Value {
            kind: Some(Kind::StringValue(s.to_string())),
        };
        let list = Value {
            kind: Some(Kind::ListValue(ListValue {
                values: instances.iter().map(text).collect(),
            })),
        };
        Struct {
            fields: [(DECLARED.to_string(), list)].into_iter().collect(),
        }
    }

    /// What this client is served of `half`, the Gateway's proxyless half; says once per cluster which
    /// calls fail because the client cannot verify the backend.
    pub fn serve(&mut self, half: Arc<Snapshot>, node: &str) -> Arc<Snapshot> {
        if let Some((seen, got)) = &self.served
            && Arc::ptr_eq(seen, &half)
        {
            return got.clone();
        }
        for (cluster, instance) in half.undeclared(&self.declared) {
            if self.told.insert(cluster.to_string()) {
                warn!(
                    node,
                    cluster,
                    instance,
                    "this gRPC client's bootstrap declares no certificate provider {instance:?}, so it cannot \
                     verify the backend and its calls to cluster {cluster} fail; give it the CA file \
                     (pier bootstrap --grpc --trust-dir)"
                );
            }
        }
        let got = half.for_declared(&self.declared);
        self.served = Some((half, got.clone()));
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_libraries_are_told_from_envoy() {
        let node = |ua: &str| Node {
            user_agent_name: ua.to_string(),
            ..Default::default()
        };
        for ua in ["gRPC C-core", "gRPC Go", "gRPC Java", "grpc-python", "tonic-xds"] {
            assert_eq!(Agent::of(Some(&node(ua))), Agent::Grpc, "{ua}");
        }
        for ua in ["envoy", "", "my-proxy"] {
            assert_eq!(Agent::of(Some(&node(ua))), Agent::Envoy, "{ua}");
        }
        assert_eq!(Agent::of(None), Agent::Envoy);
    }

    #[test]
    fn declared_instances_come_from_the_node_metadata_list() {
        let mut node = Node::default();
        assert!(Trust::of(Some(&node)).declared.is_empty());
        node.metadata = Some(Trust::metadata(&["ca/system", "ca/configmap/ns/ca"]));
        let got = Trust::of(Some(&node)).declared;
        assert_eq!(
            got,
            BTreeSet::from(["ca/system".to_string(), "ca/configmap/ns/ca".to_string()])
        );
        assert!(Trust::of(None).declared.is_empty());
        let many: Vec<String> = (0..MAX_DECLARED + 10).map(|i| format!("ca/configmap/ns/{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        node.metadata = Some(Trust::metadata(&many));
        assert_eq!(
            Trust::of(Some(&node)).declared.len(),
            MAX_DECLARED,
            "an untrusted list is bounded"
        );
    }
}
