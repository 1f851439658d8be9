//! The tonic-xds client (`tonic-xds` 0.1.0-alpha.4, gRPC's own Rust xDS client on pier's exact stack:
//! tonic 0.14, prost 0.14, envoy-types 0.7), behind the scenario's [`Proxyless`] interface. The servers
//! answer raw JSON bytes, so calls go through `tonic::client::Grpc` with a pass-through codec instead of
//! generated stubs: the xDS channel (resolver, routing, weighted clusters, balancing) is tonic-xds's own.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bytes::{Buf, BufMut};
use serde_json::Value;
use tonic::Status;
use tonic::client::Grpc;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic_xds::{BootstrapConfig, XdsChannelBuilder, XdsChannelConfig, XdsChannelGrpc, XdsUri};

use super::Proxyless;
use super::procs::Outcome;

/// Each call's deadline, as the grpcio client's.
const CALL: Duration = Duration::from_secs(5);

pub struct TonicXds {
    bootstrap: BootstrapConfig,
    /// One channel per target, kept open across calls.
    channels: BTreeMap<String, Grpc<XdsChannelGrpc>>,
}

impl Proxyless for TonicXds {
    const FAILS_FAST: bool = false;
    async fn start(_label: &str, bootstrap: &Value, _work: &Path) -> TonicXds {
        let bootstrap = BootstrapConfig::from_json(&bootstrap.to_string())
            .unwrap_or_else(|e| panic!("tonic-xds refuses pier's gRPC bootstrap: {e}"));
        TonicXds {
            bootstrap,
            channels: BTreeMap::new(),
        }
    }

    async fn calls(&mut self, target: &str, method: &str, n: u32, stream: bool) -> Outcome {
        let bootstrap = self.bootstrap.clone();
        let grpc = self.channels.entry(target.to_string()).or_insert_with(|| {
            let uri = XdsUri::parse(target).unwrap_or_else(|e| panic!("{target}: {e}"));
            let config = XdsChannelConfig::new(uri).with_bootstrap(bootstrap);
            let channel = XdsChannelBuilder::new(config)
                .build_grpc_channel()
                .unwrap_or_else(|e| panic!("tonic-xds channel for {target}: {e}"));
            Grpc::new(channel)
        });
        let mut out = Outcome::default();
        for _ in 0..n {
            match tokio::time::timeout(CALL, call(grpc.clone(), method, stream)).await {
                Ok(Ok(server)) => *out.servers.entry(server).or_insert(0) += 1,
                Ok(Err(status)) => {
                    *out.errors.entry(code_name(status.code())).or_insert(0) += 1;
                    out.detail = Some(status.message().to_string());
                }
                Err(_) => {
                    *out.errors.entry("DEADLINE_EXCEEDED".to_string()).or_insert(0) += 1;
                    out.detail = Some(format!("no answer within {CALL:?}"));
                }
            }
        }
        out
    }
}

/// One call; the answering server's name.
async fn call(mut grpc: Grpc<XdsChannelGrpc>, method: &str, stream: bool) -> Result<String, Status> {
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(format!("channel not ready: {e}")))?;
    let path: tonic::codegen::http::uri::PathAndQuery = method.parse().expect("a gRPC method path");
    let request = tonic::Request::new(Vec::new());
    let first = if stream {
        let mut s = grpc.server_streaming(request, path, Raw).await?.into_inner();
        let mut messages = Vec::new();
        while let Some(m) = s.message().await? {
            messages.push(m);
        }
        if messages.len() != 3 {
            return Err(Status::internal(format!(
                "stream ended after {} messages",
                messages.len()
            )));
        }
        messages.swap_remove(0)
    } else {
        grpc.unary(request, path, Raw).await?.into_inner()
    };
    let reply: Value = serde_json::from_slice(&first).map_err(|e| Status::internal(e.to_string()))?;
    Ok(reply["server"].as_str().unwrap_or("?").to_string())
}

/// `UNAVAILABLE` for `Code::Unavailable`: the spelling grpcio reports.
fn code_name(code: tonic::Code) -> String {
    let camel = format!("{code:?}");
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Messages as raw bytes, both ways.
#[derive(Debug, Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

#[test]
fn code_names_are_grpcs_spelling() {
    assert_eq!(code_name(tonic::Code::Unavailable), "UNAVAILABLE");
    assert_eq!(code_name(tonic::Code::DeadlineExceeded), "DEADLINE_EXCEEDED");
}
