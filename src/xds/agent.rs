//! Which kind of xDS client is on a stream: an Envoy, or a gRPC library that speaks xDS itself
//! (proxyless: grpcio, grpc-go, grpc-java, tonic-xds). Each gets its own half of the Gateway's snapshot
//! (`envoy::proxyless`): an Envoy asks for every listener by wildcard and must never receive a gRPC
//! client's API listeners, and a gRPC client rejects what only Envoy understands.
//!
//! Told by `node.user_agent_name`, which every client sets (gRFC A27 has gRPC send its library's name):
//! Envoy sends `envoy`; gRPC's libraries send a name containing `grpc` (`gRPC C-core`, `gRPC Go`,
//! `gRPC Java`), tonic-xds one containing `tonic`. Anything else is served as an Envoy, as before this
//! distinction existed.

use envoy_types::pb::envoy::config::core::v3::Node;

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
}
