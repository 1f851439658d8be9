//! The ADS service on the wire: routes Envoy's two ADS methods to their stream machines and frames the
//! responses itself, in place of the service envoy-types generates.
//!
//! Why not the generated service: tonic's response encoder keeps one buffer per stream for the
//! stream's whole life, and that buffer never shrinks. It grows to the largest response the stream
//! has carried — the first full state-of-the-world push of a large Gateway (a 10,000-virtual-host
//! route configuration is megabytes) — so every connected proxy pinned that much memory while idle
//! (measured: 128 KiB per idle stream at 100 routes, all of it that buffer; see docs/performance.md).
//! Here a delta response is encoded into an allocation of its exact size, which the transport frees
//! once it is written; a state-of-the-world response is its stream's nonce in a few bytes of its own
//! followed by a body shared with every stream sent the same one (`cache::bodies`), freed once the
//! last of them has its answer. Framing it ourselves is also what lets that body go out uncopied.
//! Requests are read by [`requests`](super::requests), whose size bound follows what is served.
//!
//! The gRPC surface is what the generated service gives: `application/grpc` responses, status in
//! trailers, `Unimplemented` for another method or a compressed request (pier offers no compression).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest};
use http_body::Frame;
use prost::Message;
use tokio_stream::Stream;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{Bytes, Service, http};
use tonic::server::NamedService;

use super::cache::bodies::{self, Body as SharedBody};
use super::delta::Delta;
use super::requests::Requests;
use super::server::AdsServer;
use super::sotw::{Sotw, SotwResponse};
use super::stream;
use super::transport::PeerInfo;

const SOTW: &str = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
const DELTA: &str = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

/// `AggregatedDiscoveryService` as a tower service for tonic's router.
#[derive(Clone)]
pub struct AdsService {
    server: AdsServer,
}

impl AdsService {
    pub fn new(server: AdsServer) -> AdsService {
        AdsService { server }
    }

    /// The transport put the connection's [`PeerInfo`] into the request; a request without one did not
    /// come through it and is refused (fail closed).
    fn route(&self, req: http::Request<Body>) -> Result<Body, Status> {
        let peer = req
            .extensions()
            .get::<PeerInfo>()
            .cloned()
            .ok_or_else(|| Status::unauthenticated("no transport identity for this connection"))?;
        match req.uri().path() {
            SOTW => {
                let requests = self.requests::<DiscoveryRequest>(req)?;
                Ok(Body::new(Framed::new(stream::spawn::<Sotw>(
                    self.server.shared(),
                    peer,
                    requests,
                ))))
            }
            DELTA => {
                let requests = self.requests::<DeltaDiscoveryRequest>(req)?;
                Ok(Body::new(Framed::new(stream::spawn::<Delta>(
                    self.server.shared(),
                    peer,
                    requests,
                ))))
            }
            other => Err(Status::unimplemented(format!("no method {other} here"))),
        }
    }

    /// The request stream of `req`; a compressed one is refused (pier advertises no compression, so a
    /// client that compresses anyway is broken).
    fn requests<M: Message + Default>(&self, req: http::Request<Body>) -> Result<Requests<M>, Status> {
        if let Some(encoding) = req.headers().get("grpc-encoding")
            && encoding != "identity"
        {
            return Err(Status::unimplemented(format!(
                "request compression {encoding:?} is not supported"
            )));
        }
        Ok(Requests::new(req.into_body(), self.server.bounds.clone()))
    }
}

impl NamedService for AdsService {
    const NAME: &'static str = "envoy.service.discovery.v3.AggregatedDiscoveryService";
}

impl Service<http::Request<Body>> for AdsService {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let response = match self.route(req) {
            Ok(body) => {
                let mut response = http::Response::new(body);
                response
                    .headers_mut()
                    .insert(http::header::CONTENT_TYPE, GRPC_CONTENT_TYPE);
                response
            }
            // Trailers-only: the status travels in the headers of an empty response.
            Err(status) => status.into_http(),
        };
        std::future::ready(Ok(response))
    }
}

const GRPC_CONTENT_TYPE: http::HeaderValue = http::HeaderValue::from_static("application/grpc");

/// A response as gRPC data: the length-prefixed message, in one or two pieces.
pub(crate) trait Wire {
    fn frames(self) -> Result<(Bytes, Option<Bytes>), Status>;
}

impl Wire for DeltaDiscoveryResponse {
    fn frames(self) -> Result<(Bytes, Option<Bytes>), Status> {
        Ok((frame(&self)?, None))
    }
}

/// The prefix and this stream's nonce in an allocation of their own, then the body shared with every
/// stream sent the same one (`cache::bodies`): together, one `DiscoveryResponse`.
impl Wire for SotwResponse {
    fn frames(self) -> Result<(Bytes, Option<Bytes>), Status> {
        let nonce = bodies::text_len(5, &self.nonce);
        let len = nonce + self.body.bytes.len();
        let mut head = Vec::with_capacity(5 + nonce);
        head.push(0);
        head.extend_from_slice(&prefix(len)?.to_be_bytes());
        bodies::text(5, &self.nonce, &mut head);
        Ok((Bytes::from(head), Some(Bytes::from_owner(Held(self.body)))))
    }
}

/// A shared body as bytes the transport can hold until it is written.
struct Held(Arc<SharedBody>);

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.0.bytes
    }
}

/// A response stream as gRPC frames: each message length-prefixed (in allocations that are freed once
/// written), then the status as trailers when the stream ends (OK) or yields an error.
struct Framed<S> {
    messages: S,
    /// The rest of the message whose first piece was just yielded.
    rest: Option<Bytes>,
    done: bool,
}

impl<S> Framed<S> {
    fn new(messages: S) -> Framed<S> {
        Framed {
            messages,
            rest: None,
            done: false,
        }
    }
}

impl<S, M> http_body::Body for Framed<S>
where
    S: Stream<Item = Result<M, Status>> + Unpin,
    M: Wire,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(rest) = self.rest.take() {
            return Poll::Ready(Some(Ok(Frame::data(rest))));
        }
        let status = match ready!(Pin::new(&mut self.messages).poll_next(cx)) {
            Some(Ok(message)) => match message.frames() {
                Ok((first, rest)) => {
                    self.rest = rest;
                    return Poll::Ready(Some(Ok(Frame::data(first))));
                }
                Err(status) => status,
            },
            Some(Err(status)) => status,
            None => Status::ok(""),
        };
        self.done = true;
        let mut trailers = http::HeaderMap::new();
        if let Err(unrepresentable) = status.add_header(&mut trailers) {
            trailers.clear();
            let _ = Status::internal(unrepresentable.message().to_string()).add_header(&mut trailers);
        }
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// One gRPC message: not compressed (0), its length (big-endian u32), its bytes.
fn frame<M: Message>(message: &M) -> Result<Bytes, Status> {
    let len = message.encoded_len();
    let mut buf = Vec::with_capacity(5 + len);
    buf.push(0);
    buf.extend_from_slice(&prefix(len)?.to_be_bytes());
    message
        .encode(&mut buf)
        .map_err(|e| Status::internal(format!("encoding a response: {e}")))?;
    Ok(Bytes::from(buf))
}

/// A message's length as gRPC's prefix carries it.
fn prefix(len: usize) -> Result<u32, Status> {
    u32::try_from(len)
        .map_err(|_| Status::resource_exhausted(format!("a {len}-byte response is over gRPC's 4 GiB limit")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn frames_each_message_then_ok_trailers() {
        let messages = vec![
            Ok(DeltaDiscoveryResponse {
                system_version_info: "1".into(),
                ..Default::default()
            }),
            Ok(DeltaDiscoveryResponse::default()),
        ];
        let mut body = Framed::new(tokio_stream::iter(messages));
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..5], &[0, 0, 0, 0, 3]);
        assert_eq!(
            DeltaDiscoveryResponse::decode(&first[5..]).unwrap().system_version_info,
            "1"
        );
        let second = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&second[..], &[0, 0, 0, 0, 0]);
        let trailers = body.frame().await.unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "0");
        assert!(http_body::Body::is_end_stream(&body));
        assert!(body.frame().await.is_none());
    }

    /// The nonce and the shared body go out as two pieces of one gRPC message, which decodes as the
    /// response prost would have encoded whole.
    #[tokio::test]
    async fn a_sotw_response_is_its_nonce_then_its_shared_body() {
        let whole = DiscoveryResponse {
            version_info: "v7".into(),
            type_url: "type.googleapis.com/envoy.config.cluster.v3.Cluster".into(),
            nonce: "42".into(),
            ..Default::default()
        };
        let shared = DiscoveryResponse {
            nonce: String::new(),
            ..whole.clone()
        };
        let body = Arc::new(SharedBody {
            bytes: shared.encode_to_vec(),
            resources: 0,
        });
        let response = SotwResponse {
            nonce: "42".into(),
            body: body.clone(),
        };
        let mut framed = Framed::new(tokio_stream::iter(vec![Ok::<_, Status>(response)]));
        let head = framed.frame().await.unwrap().unwrap().into_data().unwrap();
        let rest = framed.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(rest.as_ptr(), body.bytes.as_ptr(), "the body is shared, not copied");
        let message = [&head[5..], &rest[..]].concat();
        assert_eq!(head[1..5], u32::try_from(message.len()).unwrap().to_be_bytes());
        assert_eq!(DiscoveryResponse::decode(message.as_slice()).unwrap(), whole);
        let trailers = framed.frame().await.unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "0");
    }

    #[tokio::test]
    async fn an_error_ends_the_stream_with_its_status() {
        let messages: Vec<Result<DeltaDiscoveryResponse, Status>> = vec![Err(Status::permission_denied("not yours"))];
        let mut body = Framed::new(tokio_stream::iter(messages));
        let trailers = body.frame().await.unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "7");
        assert_eq!(
            trailers["grpc-message"], "not%20yours",
            "percent-encoded, as gRPC specifies"
        );
        assert!(body.frame().await.is_none());
    }
}
