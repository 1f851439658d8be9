//! Who may start a handshake: connections that have not proved who they are, capped per peer address and
//! in total, where a newcomer over a cap closes the oldest handshake still in flight rather than being
//! turned away.
//!
//! Refusing the newcomer (what pier did first) let 128 silent connections from one address lock a
//! legitimate proxy at that address out until their handshake timeout, and 1,024 from anywhere lock out
//! everyone. Closing the oldest pending handshake instead means a flood only ever holds the newest
//! handshakes: a real proxy finishes its TLS handshake in milliseconds, so to keep it out a flood must
//! open `cap` connections within that time, at which rate it is a volumetric attack that no per-connection
//! bound answers. A connection that has finished its handshake is never evicted: in plaintext it keeps its
//! address's slot for its whole life, and once authenticated it holds none (`transport`'s module doc).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::Refused;

/// The admission state of one listener.
#[derive(Debug, Default, Clone)]
pub(crate) struct Admission(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    next: u64,
    /// Handshakes in flight, oldest first, with the sender whose drop closes them.
    pending: BTreeMap<u64, (IpAddr, oneshot::Sender<()>)>,
    /// Connections per address that have not authenticated (pending or established).
    per_peer: HashMap<IpAddr, usize>,
}

/// A connection let in: its slots, and what fires when it is evicted.
pub(crate) struct Admitted {
    pub slot: PeerSlot,
    pub pending: PendingSlot,
    pub evicted: oneshot::Receiver<()>,
    /// Older handshakes this one closed, each with the bound it was over.
    pub closed: Vec<(IpAddr, Refused)>,
}

impl Admission {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lets a connection from `ip` start its handshake, closing the oldest pending handshake from that
    /// address (or, over the total, from anywhere) to make room. `None` when `ip` is at its cap with no
    /// handshake in flight to close: its slots are held by established plaintext connections.
    pub fn admit(&self, ip: IpAddr, max_per_peer: usize, max_pending: usize) -> Option<Admitted> {
        let mut state = self.state();
        let mut closed = Vec::new();
        if state.per_peer.get(&ip).copied().unwrap_or(0) >= max_per_peer {
            let oldest = state
                .pending
                .iter()
                .find(|(_, (from, _))| *from == ip)
                .map(|(id, _)| *id)?;
            state.pending.remove(&oldest);
            closed.push((ip, Refused::PeerConnections));
        }
        if state.pending.len() >= max_pending
            && let Some((_, (from, _))) = state.pending.pop_first()
        {
            closed.push((from, Refused::PendingConnections));
        }
        let id = state.next;
        state.next += 1;
        let (tx, evicted) = oneshot::channel();
        state.pending.insert(id, (ip, tx));
        *state.per_peer.entry(ip).or_default() += 1;
        drop(state);
        Some(Admitted {
            slot: PeerSlot {
                admission: self.clone(),
                ip,
            },
            pending: PendingSlot {
                admission: self.clone(),
                id,
            },
            evicted,
            closed,
        })
    }
}

/// Frees its address's slot when dropped: when the connection is gone, or once it authenticated.
pub(crate) struct PeerSlot {
    admission: Admission,
    ip: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut state = self.admission.state();
        if let Some(n) = state.per_peer.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                state.per_peer.remove(&self.ip);
            }
        }
    }
}

/// One handshake in flight, until dropped.
pub(crate) struct PendingSlot {
    admission: Admission,
    id: u64,
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        self.admission.state().pending.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_newcomer_over_the_address_cap_closes_that_address_oldest_handshake() {
        let adm = Admission::default();
        let mut first = adm.admit(A, 2, 10).unwrap();
        let second = adm.admit(A, 2, 10).unwrap();
        let other = adm.admit(B, 2, 10).unwrap();
        let third = adm.admit(A, 2, 10).unwrap();
        assert_eq!(third.closed, vec![(A, Refused::PeerConnections)]);
        assert!(first.evicted.try_recv().is_err(), "the oldest from A is closed");
        drop(first);
        assert_eq!(adm.state().per_peer[&A], 2);
        // B's handshake was older than both, and untouched.
        assert!(adm.state().pending.contains_key(&other.pending.id));
        drop((second, third, other));
        assert!(adm.state().per_peer.is_empty() && adm.state().pending.is_empty());
    }

    #[test]
    fn established_connections_are_never_closed_and_hold_their_slot() {
        let adm = Admission::default();
        let Admitted { slot, pending, .. } = adm.admit(A, 1, 10).unwrap();
        drop(pending);
        assert!(adm.admit(A, 1, 10).is_none(), "nothing pending to close");
        drop(slot);
        assert!(adm.admit(A, 1, 10).is_some());
    }

    #[test]
    fn over_the_total_the_oldest_handshake_anywhere_is_closed() {
        let adm = Admission::default();
        let mut a = adm.admit(A, 10, 2).unwrap();
        let _b = adm.admit(B, 10, 2).unwrap();
        let c = adm.admit(B, 10, 2).unwrap();
        assert_eq!(c.closed, vec![(A, Refused::PendingConnections)]);
        assert!(a.evicted.try_recv().is_err());
        assert_eq!(adm.state().pending.len(), 2);
    }
}
