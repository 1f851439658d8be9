//! The ADS service on the wire: routes Envoy's two ADS methods to their stream machines and frames the
//! responses itself, in place of the service envoy-types generates.
//!
//! Why not the generated service: tonic's response encoder keeps one buffer per stream for the
//! stream's whole life, and that buffer never shrinks. It grows to the largest response the stream
//! has carried — the first full state-of-the-world push of a large Gateway (a 10,000-virtual-host
//! route configuration is megabytes) — so every connected proxy pinned that much memory while idle
//! (measured: 128 KiB per idle stream at 100 routes, all of it that buffer; see docs/performance.md).
//! Here each response is encoded into an allocation of its exact size, which the transport frees once
//! it is written. Requests are read by [`requests`](super::requests), whose size bound follows what
//! is served.
//!
//! The gRPC surface is what the generated service gives: `application/grpc` responses, status in
//! trailers, `Unimplemented` for another method or a compressed request (pier offers no compression).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DiscoveryRequest};
use http_body::Frame;
use prost::Message;
use tokio_stream::Stream;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{Bytes, Service, http};
use tonic::server::NamedService;

use super::delta::Delta;
use super::requests::Requests;
use super::server::AdsServer;
use super::sotw::Sotw;
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

/// A response stream as gRPC frames: each message length-prefixed in an allocation of its own, then
/// the status as trailers when the stream ends (OK) or yields an error.
struct Framed<S> {
    messages: S,
    done: bool,
}

impl<S> Framed<S> {
    fn new(messages: S) -> Framed<S> {
        Framed { messages, done: false }
    }
}

impl<S, M> http_body::Body for Framed<S>
where
    S: Stream<Item = Result<M, Status>> + Unpin,
    M: Message,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let status = match ready!(Pin::new(&mut self.messages).poll_next(cx)) {
            Some(Ok(message)) => match frame(&message) {
                Ok(bytes) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
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
    let prefix = u32::try_from(len)
        .map_err(|_| Status::resource_exhausted(format!("a {len}-byte response is over gRPC's 4 GiB limit")))?;
    let mut buf = Vec::with_capacity(5 + len);
    buf.push(0);
    buf.extend_from_slice(&prefix.to_be_bytes());
    message
        .encode(&mut buf)
        .map_err(|e| Status::internal(format!("encoding a response: {e}")))?;
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn frames_each_message_then_ok_trailers() {
        let messages = vec![
            Ok(DiscoveryResponse {
                version_info: "1".into(),
                ..Default::default()
            }),
            Ok(DiscoveryResponse::default()),
        ];
        let mut body = Framed::new(tokio_stream::iter(messages));
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..5], &[0, 0, 0, 0, 3]);
        assert_eq!(DiscoveryResponse::decode(&first[5..]).unwrap().version_info, "1");
        let second = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&second[..], &[0, 0, 0, 0, 0]);
        let trailers = body.frame().await.unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "0");
        assert!(http_body::Body::is_end_stream(&body));
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn an_error_ends_the_stream_with_its_status() {
        let messages: Vec<Result<DiscoveryResponse, Status>> = vec![Err(Status::permission_denied("not yours"))];
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
