//! The xDS server's transport: TLS with client certificates (or plaintext where that is safe), and the
//! bounds on what a client controls before it has said anything useful.
//!
//! pier hands private keys to whoever receives a Gateway's secrets, so the transport is where that is
//! decided: with [`Security::Tls`] every connection presents a certificate from the configured CA, and the
//! stream layer checks that its [`Identity`] grants the Gateway the node asks for. Plaintext is allowed on a
//! loopback address, or anywhere under the operator's explicit insecure flag (checked in `runtime`).
//!
//! Accepting is pier's own loop rather than tonic's, so that each connection is bounded before tonic
//! sees it: a TLS handshake (or, in plaintext, the first byte) within `handshake_timeout`, at most
//! `max_pending_connections` handshakes in flight in all, at most `max_connections_per_peer`
//! connections per peer address that have not authenticated (over either cap, the oldest handshake in
//! flight is closed to make room: `admission`), and a connection closed once it has carried no stream
//! for `idle_timeout`.
//!
//! A connection authenticates when its TLS handshake verifies a client certificate; from then on it
//! no longer counts against its address. Behind SNAT (a load balancer, a NAT gateway) every proxy shares
//! one address, and counting authenticated proxies there refused the 129th; only what has not proved
//! who it is is capped, per address and in total, so a flood of silent connections costs the flood and
//! not the fleet. In plaintext nothing ever authenticates, and every connection counts against its
//! address for its whole life. Handshakes run in their own tasks, so a slow or silent client
//! never holds up the next accept. Each refusal counts in `pier_xds_refused_total{reason}` and is logged
//! (throttled, so a flood cannot flood the log too).

mod admission;
mod conn;
mod gather;
mod tls;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tracing::{debug, warn};

pub use conn::{Activity, PeerInfo, PeerStream};
pub use tls::{TlsFiles, TlsState};

use super::identity::Identity;
use super::metrics::XdsMetrics;
use admission::Admission;

/// How the xDS port is secured.
#[derive(Debug, Clone)]
pub enum Security {
    /// mTLS: a server certificate, and client certificates required from this CA.
    Tls(TlsFiles),
    /// No TLS; `insecure` says the operator asked for it beyond loopback.
    Plaintext { insecure: bool },
}

/// Bounds on what an xDS client controls. Each has a `pier serve` option, a refusal reason in
/// `pier_xds_refused_total{reason}` and a log line naming the option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdsLimits {
    /// Largest request message (gRPC frame) accepted, at least: raised to what the served snapshots let a
    /// proxy send (`xds::bounds`).
    pub max_request_bytes: usize,
    /// Largest response a proxy accepts: a Gateway with a larger one is refused at translation
    /// (`runtime::refusals`), never sent.
    pub max_response_bytes: usize,
    /// Largest response the Gateway's proxyless gRPC clients accept, the same way.
    pub max_grpc_response_bytes: usize,
    /// Largest `node` (encoded) a stream may announce.
    pub max_node_bytes: usize,
    /// Most resource names one request may list (subscribe, unsubscribe and initial versions), at least:
    /// raised like `max_request_bytes`.
    pub max_resource_names: usize,
    /// HTTP/2 streams open at once on one connection.
    pub max_streams_per_connection: u32,
    /// Connections from one peer address that have not authenticated (all of them in plaintext).
    pub max_connections_per_peer: usize,
    /// TLS handshakes (in plaintext: connections before their first byte) in flight at once.
    pub max_pending_connections: usize,
    /// Time for the TLS handshake (plaintext: for the first byte).
    pub handshake_timeout: Duration,
    /// A connection without any stream for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for XdsLimits {
    /// Generous for real proxies (Envoy opens one ADS stream per connection, a node of a few KiB, and at
    /// most one name per cluster or listener it knows), tight for anything else. The request bounds are
    /// floors: Envoy Gateway's 32 MiB for bytes (it raised its own from 4 MiB when proxies' reconnects
    /// outgrew it), and each grows with what pier serves (`xds::bounds`).
    fn default() -> XdsLimits {
        XdsLimits {
            max_request_bytes: 32 * 1024 * 1024,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_grpc_response_bytes: DEFAULT_MAX_GRPC_RESPONSE_BYTES,
            max_node_bytes: 64 * 1024,
            max_resource_names: 100_000,
            max_streams_per_connection: 8,
            max_connections_per_peer: 128,
            max_pending_connections: 1024,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// What Envoy accepts: its xDS gRPC client has no message limit unless the bootstrap sets
/// `max_receive_message_length` (`pier bootstrap` does not), and protobuf cannot parse a message of
/// 2 GiB or more.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = (i32::MAX as usize) - 1024;

/// What gRPC's own clients accept: their default `max_receive_message_length`, which governs the xDS
/// channel too (a client configured otherwise can be matched with `--xds-max-grpc-response-bytes`).
pub const DEFAULT_MAX_GRPC_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Why a connection or stream was refused (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refused {
    PeerConnections,
    PendingConnections,
    HandshakeTimeout,
    TlsHandshake,
    IdleTimeout,
    NodeTooLarge,
    TooManyNames,
    RequestTooLarge,
    PermissionDenied,
}

impl Refused {
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::PeerConnections => "peer-connections",
            Refused::PendingConnections => "pending-connections",
            Refused::HandshakeTimeout => "handshake-timeout",
            Refused::TlsHandshake => "tls-handshake",
            Refused::IdleTimeout => "idle-timeout",
            Refused::NodeTooLarge => "node-too-large",
            Refused::TooManyNames => "too-many-names",
            Refused::RequestTooLarge => "request-too-large",
            Refused::PermissionDenied => "permission-denied",
        }
    }
}

/// Accepts connections on `listener` until the receiver is dropped, and hands each one, handshaken and
/// bounded, to tonic through `tx`.
pub(crate) async fn accept(
    listener: TcpListener,
    tls: Option<Arc<TlsState>>,
    limits: XdsLimits,
    metrics: Arc<XdsMetrics>,
    tx: mpsc::Sender<Result<PeerStream, std::io::Error>>,
) {
    let admission = Admission::default();
    loop {
        let (tcp, addr) = tokio::select! {
            () = tx.closed() => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    warn!(error = %e, "accepting an xDS connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let admitted = admission.admit(
            addr.ip(),
            limits.max_connections_per_peer,
            limits.max_pending_connections,
        );
        let Some(admitted) = admitted else {
            refuse(
                &metrics,
                Refused::PeerConnections,
                addr,
                "--xds-max-connections-per-peer",
            );
            continue;
        };
        for (peer, reason) in &admitted.closed {
            refuse(&metrics, *reason, peer, option_for(*reason));
        }
        let _ = tcp.set_nodelay(true);
        let (tls, limits, metrics, tx) = (tls.clone(), limits.clone(), metrics.clone(), tx.clone());
        tokio::spawn(serve_connection(tcp, addr, admitted, tls, limits, metrics, tx));
    }
}

fn option_for(reason: Refused) -> &'static str {
    match reason {
        Refused::PendingConnections => "--xds-max-pending-connections",
        _ => "--xds-max-connections-per-peer",
    }
}

/// Handshakes one admitted connection (unless a newer one evicts it first) and hands it to tonic.
async fn serve_connection(
    tcp: TcpStream,
    addr: SocketAddr,
    admitted: admission::Admitted,
    tls: Option<Arc<TlsState>>,
    limits: XdsLimits,
    metrics: Arc<XdsMetrics>,
    tx: mpsc::Sender<Result<PeerStream, std::io::Error>>,
) {
    let admission::Admitted {
        slot, pending, evicted, ..
    } = admitted;
    let handshake = tokio::time::timeout(limits.handshake_timeout, handshake(tcp, addr, tls.as_deref()));
    let handshaken = tokio::select! {
        h = handshake => h,
        // Counted and logged by the accept loop, which closed it.
        _ = evicted => return,
    };
    drop(pending);
    let stream = match handshaken {
        Ok(Ok((io, identity))) => {
            // An authenticated proxy no longer counts against its address.
            let slot = (!identity.is_authenticated()).then_some(slot);
            PeerStream::new(io, PeerInfo::new(addr, identity), slot, limits.idle_timeout, metrics)
        }
        Ok(Err(e)) => {
            debug!(peer = %addr, error = %e, "xDS TLS handshake failed");
            refuse(
                &metrics,
                Refused::TlsHandshake,
                addr,
                "a client certificate from --xds-client-ca",
            );
            return;
        }
        Err(_) => {
            refuse(&metrics, Refused::HandshakeTimeout, addr, "--xds-handshake-timeout-ms");
            return;
        }
    };
    let _ = tx.send(Ok(stream)).await;
}

/// TLS (returning the client's identity), or in plaintext the first byte.
async fn handshake(tcp: TcpStream, addr: SocketAddr, tls: Option<&TlsState>) -> std::io::Result<(conn::Io, Identity)> {
    match tls {
        Some(tls) => {
            let stream = tls.acceptor().accept(tcp).await?;
            let identity = tls.identity(stream.get_ref().1);
            debug!(peer = %addr, identity = %identity.describe(), "xDS client authenticated");
            Ok((conn::Io::Tls(Box::new(stream)), identity))
        }
        None => {
            let mut byte = [0u8; 1];
            tcp.peek(&mut byte).await?;
            Ok((conn::Io::Plain(tcp), Identity::Plaintext))
        }
    }
}

/// Counts and logs a refusal. The log is throttled per reason: a flood of refused clients is one line
/// per interval with the number suppressed, and the counter has every one.
pub(crate) fn refuse(metrics: &XdsMetrics, reason: Refused, peer: impl std::fmt::Display, option: &str) {
    if let Some(suppressed) = metrics.refused(reason) {
        warn!(
            reason = reason.as_str(),
            %peer,
            suppressed,
            "refused an xDS client (bound: {option})"
        );
    }
}

/// [`refuse`], with what was over the bound (a size, a count) in the log line.
pub(crate) fn refuse_detailed(
    metrics: &XdsMetrics,
    reason: Refused,
    peer: impl std::fmt::Display,
    option: &str,
    detail: &str,
) {
    if let Some(suppressed) = metrics.refused(reason) {
        warn!(
            reason = reason.as_str(),
            %peer,
            suppressed,
            detail,
            "refused an xDS client (bound: {option})"
        );
    }
}

/// Whether `addr` keeps plaintext xDS on this machine.
pub fn is_loopback(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}
