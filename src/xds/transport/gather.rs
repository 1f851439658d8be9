//! Writes gathered until h2 flushes them, so that one response leaves in one write.
//!
//! h2 writes each frame's 9-byte header apart from its payload unless the transport takes vectored
//! writes, and a response is several frames (16 KiB each at most, the size Envoy accepts): 126 TLS
//! clusters, 64 KB, are a HEADERS frame and four DATA frames. Every xDS connection has `TCP_NODELAY`
//! (a small response is never held back for an ACK), so each of those writes was a TCP segment of its
//! own: ten for one response. On a push to a whole fleet, the kernel's work per segment (the send
//! path, netfilter, waking the reader) was two thirds of pier's CPU (`docs/performance.md`, "Fan-out").
//!
//! [`Gather`] copies the writes h2 makes between two flushes into one buffer and writes the buffer whole
//! when h2 flushes (h2 flushes at the end of every turn that wrote a frame), or when it would pass
//! [`MAX`]. The copy costs a memory pass over bytes the kernel copies anyway. The buffer only exists
//! between a write and the flush that drains it, so an idle connection holds none.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::AsyncWrite;

/// The most one connection gathers before it writes; a single write this large goes out as it is.
pub(super) const MAX: usize = 64 * 1024;

/// Bytes accepted from h2 and not yet written to the socket.
#[derive(Debug, Default)]
pub(super) struct Gather {
    buf: Vec<u8>,
    /// How much of `buf` the socket has taken.
    sent: usize,
}

impl Gather {
    /// Takes `bufs` whole into the buffer, writing out what it holds first when they would not fit.
    /// Pending (having taken nothing) while the socket cannot take that.
    pub(super) fn poll_write<W: AsyncWrite + ?Sized>(
        &mut self,
        mut io: Pin<&mut W>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if self.held() + len > MAX {
            ready!(self.poll_drain(io.as_mut(), cx))?;
            if len >= MAX {
                return io.poll_write_vectored(cx, bufs);
            }
        }
        for b in bufs {
            self.buf.extend_from_slice(b);
        }
        Poll::Ready(Ok(len))
    }

    /// Writes out everything held, then gives the buffer's memory back.
    pub(super) fn poll_drain<W: AsyncWrite + ?Sized>(
        &mut self,
        mut io: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        while self.held() > 0 {
            let n = ready!(io.as_mut().poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        *self = Gather::default();
        Poll::Ready(Ok(()))
    }

    fn held(&self) -> usize {
        self.buf.len() - self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that records each write it takes, takes at most `per_write` bytes at a time, and is
    /// full (pending) while `full` is set.
    #[derive(Default)]
    struct Socket {
        writes: Vec<Vec<u8>>,
        per_write: Option<usize>,
        full: bool,
    }

    impl AsyncWrite for Socket {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            if this.full {
                return Poll::Pending;
            }
            let n = this.per_write.map_or(buf.len(), |p| p.min(buf.len()));
            this.writes.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn write(g: &mut Gather, s: &mut Socket, parts: &[&[u8]]) -> Poll<io::Result<usize>> {
        let slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
        g.poll_write(Pin::new(s), &mut Context::from_waker(std::task::Waker::noop()), &slices)
    }

    fn drain(g: &mut Gather, s: &mut Socket) -> Poll<io::Result<()>> {
        g.poll_drain(Pin::new(s), &mut Context::from_waker(std::task::Waker::noop()))
    }

    #[test]
    fn frames_written_between_flushes_leave_in_one_write() {
        let (mut g, mut s) = (Gather::default(), Socket::default());
        let payload = vec![7u8; 16 * 1024];
        for _ in 0..3 {
            assert!(
                matches!(write(&mut g, &mut s, &[b"123456789", &payload]), Poll::Ready(Ok(n)) if n == 9 + payload.len())
            );
        }
        assert!(s.writes.is_empty(), "nothing reaches the socket before the flush");
        assert!(matches!(drain(&mut g, &mut s), Poll::Ready(Ok(()))));
        assert_eq!(s.writes.len(), 1);
        assert_eq!(s.writes[0], [&b"123456789"[..], &payload].concat().repeat(3));
        assert_eq!(g.buf.capacity(), 0, "a drained connection holds no buffer");
    }

    #[test]
    fn a_socket_taking_part_gets_the_rest_in_order() {
        let (mut g, mut s) = (
            Gather::default(),
            Socket {
                per_write: Some(4),
                ..Socket::default()
            },
        );
        assert!(write(&mut g, &mut s, &[b"abcdefghij"]).is_ready());
        assert!(drain(&mut g, &mut s).is_ready());
        assert_eq!(s.writes.concat(), b"abcdefghij");
        assert_eq!(s.writes.len(), 3);
    }

    #[test]
    fn a_full_buffer_waits_for_the_socket_and_takes_nothing_meanwhile() {
        let (mut g, mut s) = (
            Gather::default(),
            Socket {
                full: true,
                ..Socket::default()
            },
        );
        let chunk = vec![1u8; MAX / 2];
        assert!(write(&mut g, &mut s, &[&chunk]).is_ready());
        assert!(write(&mut g, &mut s, &[&chunk]).is_ready());
        assert!(
            write(&mut g, &mut s, &[b"x"]).is_pending(),
            "over MAX, the socket must take some first"
        );
        assert_eq!(g.held(), MAX, "the pending write was not taken");
        s.full = false;
        assert!(matches!(write(&mut g, &mut s, &[b"x"]), Poll::Ready(Ok(1))));
        assert!(drain(&mut g, &mut s).is_ready());
        assert_eq!(s.writes.concat(), [chunk.clone(), chunk, b"x".to_vec()].concat());
    }

    #[test]
    fn a_write_as_large_as_the_buffer_follows_what_was_held() {
        let (mut g, mut s) = (Gather::default(), Socket::default());
        let big = vec![2u8; MAX];
        assert!(write(&mut g, &mut s, &[b"head"]).is_ready());
        assert!(matches!(write(&mut g, &mut s, &[&big]), Poll::Ready(Ok(n)) if n == MAX));
        assert_eq!(s.writes.len(), 2);
        assert_eq!((s.writes[0].as_slice(), s.writes[1].len()), (&b"head"[..], MAX));
    }
}
