//! The request half of an ADS stream: gRPC messages read off the HTTP/2 body one at a time, each held to
//! the bound in force when its length prefix arrives ([`RequestBounds`]).
//!
//! Why not tonic's `Streaming`: its size limit is fixed when the stream opens, and a message over it
//! ends the call with a status that nothing logs or counts — the proxy sees its stream cut, reconnects,
//! sends the same request and is cut again, for good, while pier says nothing. Here the limit follows
//! the served snapshots, the length is checked before a byte of the message is buffered, a large
//! message first takes its share of the request budget, and a refusal says what it was and which
//! option raises the bound ([`RequestError`]; `stream` logs and counts it).

use std::marker::PhantomData;
use std::sync::Arc;

use http_body_util::BodyExt;
use prost::Message;
use prost::bytes::{Buf, BytesMut};
use tokio::sync::OwnedSemaphorePermit;
use tonic::body::Body;

use super::bounds::RequestBounds;

/// gRPC's message prefix: a compression flag and a big-endian u32 length.
const PREFIX: usize = 5;

/// Why the request stream ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("a {size}-byte request is over the {limit}-byte limit (--xds-max-request-bytes)")]
    TooLarge { size: usize, limit: usize },
    #[error("a compressed request (pier offers no compression)")]
    Compressed,
    #[error("the request stream ended inside a message")]
    Truncated,
    #[error("the request does not decode: {0}")]
    Decode(String),
    /// The connection or the stream failed under the request: a reset, a broken connection.
    #[error("{0}")]
    Transport(String),
}

/// Decoded requests of one stream.
pub struct Requests<M> {
    body: Body,
    buf: BytesMut,
    bounds: Arc<RequestBounds>,
    /// The budget share of the message being buffered, once it is large.
    permit: Option<OwnedSemaphorePermit>,
    message: PhantomData<fn() -> M>,
}

impl<M: Message + Default> Requests<M> {
    pub fn new(body: Body, bounds: Arc<RequestBounds>) -> Requests<M> {
        Requests {
            body,
            buf: BytesMut::new(),
            bounds,
            permit: None,
            message: PhantomData,
        }
    }

    /// The next request; `None` once the proxy closed its side. Cancel-safe: what was read stays in
    /// `self` for the next call.
    pub async fn next(&mut self) -> Option<Result<M, RequestError>> {
        loop {
            if let Some(len) = self.message_len() {
                let len = match len {
                    Ok(len) => len,
                    // Nothing has sized the bounds yet: judge it once something has.
                    Err(RequestError::TooLarge { .. }) if !self.bounds.is_fitted() => {
                        self.bounds.fitted().await;
                        continue;
                    }
                    Err(e) => return Some(Err(e)),
                };
                if self.permit.is_none() {
                    self.permit = self.bounds.reserve(len).await;
                }
                if self.buf.len() >= PREFIX + len {
                    self.buf.advance(PREFIX);
                    let message = self.buf.split_to(len).freeze();
                    self.permit = None;
                    return Some(M::decode(message).map_err(|e| RequestError::Decode(e.to_string())));
                }
            }
            match self.body.frame().await {
                None if self.buf.is_empty() => return None,
                None => return Some(Err(RequestError::Truncated)),
                Some(Err(status)) => return Some(Err(RequestError::Transport(status.message().to_string()))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The length of the message at the front of the buffer, once its prefix is in, checked against the
    /// bound in force now.
    fn message_len(&self) -> Option<Result<usize, RequestError>> {
        let prefix = self.buf.get(..PREFIX)?;
        if prefix[0] != 0 {
            return Some(Err(RequestError::Compressed));
        }
        let size = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        let limit = self.bounds.request_bytes();
        Some(if size > limit {
            Err(RequestError::TooLarge { size, limit })
        } else {
            Ok(size)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
    use http_body::Frame;
    use tonic::Status;

    fn framed(messages: &[DiscoveryRequest]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.push(0);
            out.extend_from_slice(&(m.encoded_len() as u32).to_be_bytes());
            m.encode(&mut out).unwrap();
        }
        out
    }

    /// A body that delivers `bytes` in chunks of `chunk`, then `end`.
    fn body(bytes: Vec<u8>, chunk: usize, end: Option<Status>) -> Body {
        let mut frames: Vec<Result<Frame<prost::bytes::Bytes>, Status>> = bytes
            .chunks(chunk)
            .map(|c| Ok(Frame::data(prost::bytes::Bytes::copy_from_slice(c))))
            .collect();
        frames.extend(end.map(Err));
        Body::new(http_body_util::StreamBody::new(tokio_stream::iter(frames)))
    }

    fn request(names: usize) -> DiscoveryRequest {
        DiscoveryRequest {
            type_url: "t".into(),
            resource_names: (0..names).map(|i| format!("name-{i}")).collect(),
            ..Default::default()
        }
    }

    /// Bounds a publish has sized (to nothing: the floors hold).
    fn bounds(bytes: usize) -> Arc<RequestBounds> {
        let b = Arc::new(RequestBounds::new(bytes, 1000, 1024));
        b.fit([]);
        b
    }

    #[tokio::test]
    async fn decodes_messages_split_across_frames() {
        let sent = [request(3), request(0), request(200)];
        let mut r = Requests::<DiscoveryRequest>::new(body(framed(&sent), 7, None), bounds(1 << 20));
        for want in &sent {
            assert_eq!(r.next().await.unwrap().unwrap(), *want);
        }
        assert!(r.next().await.is_none());
    }

    #[tokio::test]
    async fn refuses_a_message_over_the_bound_before_reading_it() {
        let big = request(1000);
        let size = big.encoded_len();
        let mut r = Requests::<DiscoveryRequest>::new(body(framed(&[big]), PREFIX, None), bounds(size - 1));
        assert_eq!(
            r.next().await.unwrap(),
            Err(RequestError::TooLarge { size, limit: size - 1 })
        );
    }

    #[tokio::test]
    async fn before_the_first_publish_a_large_request_waits_to_be_judged() {
        let big = request(1000);
        let size = big.encoded_len();
        let b = Arc::new(RequestBounds::new(size - 1, 1000, 1024));
        let mut r = Requests::<DiscoveryRequest>::new(body(framed(std::slice::from_ref(&big)), 64, None), b.clone());
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), r.next()).await;
        assert!(waiting.is_err(), "held until a publish sizes the bounds");
        b.fit([]);
        assert_eq!(
            r.next().await.unwrap(),
            Err(RequestError::TooLarge { size, limit: size - 1 }),
            "then judged by them"
        );
    }

    #[tokio::test]
    async fn the_bound_in_force_when_the_prefix_arrives_decides() {
        let big = request(1000);
        let size = big.encoded_len();
        let b = bounds(size - 1);
        let snapshot = {
            let endpoints = (0..2000)
                .map(|i| crate::envoy::pb::endpoint::ClusterLoadAssignment {
                    cluster_name: format!("c-{i}"),
                    ..Default::default()
                })
                .collect();
            let res = crate::envoy::Resources {
                endpoints,
                ..Default::default()
            };
            Arc::new(crate::xds::Snapshot::build("ns/gw", &res))
        };
        b.fit([&snapshot]);
        let mut r = Requests::<DiscoveryRequest>::new(body(framed(std::slice::from_ref(&big)), 64, None), b);
        assert_eq!(r.next().await.unwrap().unwrap(), big);
    }

    #[tokio::test]
    async fn ends_say_why() {
        let mut bytes = framed(&[request(3)]);
        bytes.truncate(bytes.len() - 1);
        let mut r = Requests::<DiscoveryRequest>::new(body(bytes, 4, None), bounds(1 << 20));
        assert_eq!(r.next().await.unwrap(), Err(RequestError::Truncated));
        let mut compressed = framed(&[request(1)]);
        compressed[0] = 1;
        let mut r = Requests::<DiscoveryRequest>::new(body(compressed, 64, None), bounds(1 << 20));
        assert_eq!(r.next().await.unwrap(), Err(RequestError::Compressed));
        let reset = Status::cancelled("stream reset by the peer");
        let mut r = Requests::<DiscoveryRequest>::new(body(Vec::new(), 1, Some(reset)), bounds(1 << 20));
        assert_eq!(
            r.next().await.unwrap(),
            Err(RequestError::Transport("stream reset by the peer".into()))
        );
    }
}
