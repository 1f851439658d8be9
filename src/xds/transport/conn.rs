//! One accepted xDS connection as tonic sees it: the socket (TLS or plain), who is on the other end, and
//! the watchdog that closes it once it has carried no stream for the idle timeout.

use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_rustls::server::TlsStream;
use tonic::transport::server::Connected;

use super::Refused;
use super::admission::PeerSlot;
use super::gather::Gather;
use crate::xds::identity::Identity;
use crate::xds::metrics::XdsMetrics;

pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// What the ADS service learns about a stream's connection (tonic puts it in each request's extensions).
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub addr: SocketAddr,
    pub identity: Arc<Identity>,
    pub activity: Arc<Activity>,
}

impl PeerInfo {
    pub fn new(addr: SocketAddr, identity: Identity) -> PeerInfo {
        PeerInfo {
            addr,
            identity: Arc::new(identity),
            activity: Arc::new(Activity::new()),
        }
    }
}

/// Streams open on a connection, and since when it has had none.
#[derive(Debug)]
pub struct Activity {
    streams: AtomicUsize,
    idle_since: Mutex<Option<Instant>>,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            streams: AtomicUsize::new(0),
            idle_since: Mutex::new(Some(Instant::now())),
        }
    }

    /// Counts a stream until the returned guard is dropped.
    pub fn stream(self: &Arc<Self>) -> StreamGuard {
        self.streams.fetch_add(1, Ordering::SeqCst);
        *self.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
        StreamGuard(self.clone())
    }

    fn idle_since(&self) -> Option<Instant> {
        *self.idle_since.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct StreamGuard(Arc<Activity>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if self.0.streams.fetch_sub(1, Ordering::SeqCst) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
    }
}

/// An accepted, handshaken connection.
pub struct PeerStream {
    io: Io,
    /// What h2 wrote since it last flushed (`gather`).
    gather: Gather,
    info: PeerInfo,
    /// Held for a connection that never authenticates (plaintext): it counts against its address.
    _slot: Option<PeerSlot>,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
    metrics: Arc<XdsMetrics>,
}

impl PeerStream {
    pub(crate) fn new(
        io: Io,
        info: PeerInfo,
        slot: Option<PeerSlot>,
        idle: Duration,
        metrics: Arc<XdsMetrics>,
    ) -> PeerStream {
        PeerStream {
            io,
            gather: Gather::default(),
            info,
            _slot: slot,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
            metrics,
        }
    }

    /// Whether the connection has been without a stream for the idle timeout; otherwise arms the timer
    /// for the moment it would be (the transport always has a read pending, so the wake-up is seen).
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            let deadline = match self.info.activity.idle_since() {
                Some(since) => since + self.idle,
                None => Instant::now() + self.idle,
            };
            if deadline <= Instant::now() {
                return true;
            }
            self.timer.as_mut().reset(deadline);
        }
    }
}

impl Connected for PeerStream {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        self.info.clone()
    }
}

impl AsyncRead for PeerStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let read = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        if read.is_ready() {
            return read;
        }
        if this.idle_expired(cx) {
            super::refuse(
                &this.metrics,
                Refused::IdleTimeout,
                this.info.addr,
                "--xds-idle-timeout-ms",
            );
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no xDS stream within the idle timeout",
            )));
        }
        Poll::Pending
    }
}

impl Io {
    /// The socket to write to, whichever kind it is.
    fn writer(&mut self) -> Pin<&mut dyn AsyncWrite> {
        match self {
            Io::Plain(s) => Pin::<&mut TcpStream>::new(s),
            Io::Tls(s) => Pin::<&mut TlsStream<TcpStream>>::new(s),
        }
    }
}

impl AsyncWrite for PeerStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let PeerStream { io, gather, .. } = self.get_mut();
        gather.poll_write(io.writer(), cx, bufs)
    }

    /// Gathered writes take no syscall each, so h2 may hand over a frame's header and payload at once.
    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let PeerStream { io, gather, .. } = self.get_mut();
        std::task::ready!(gather.poll_drain(io.writer(), cx))?;
        io.writer().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let PeerStream { io, gather, .. } = self.get_mut();
        std::task::ready!(gather.poll_drain(io.writer(), cx))?;
        io.writer().poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_is_idle_only_without_streams() {
        let activity = Arc::new(Activity::new());
        assert!(activity.idle_since().is_some());
        let guard = activity.stream();
        let second = activity.stream();
        assert_eq!(activity.idle_since(), None);
        drop(guard);
        assert_eq!(activity.idle_since(), None);
        drop(second);
        assert!(activity.idle_since().is_some());
    }
}
