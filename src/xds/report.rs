//! What a stream's [`Event`]s become: log lines, the client registry's per-type versions and NACKs,
//! and the push and NACK counters. Never influences serving.

use tracing::{debug, warn};

use super::plan::Step;
use super::stream::{Event, Peer, Shared};
use super::untrusted::{short, text};

/// Envoy's NACK messages name the resource and the field; 4 KiB keeps them whole in the log.
const NACK_LOG_CHARS: usize = 4096;

pub(crate) fn report(shared: &Shared, peer: &Peer, events: impl Iterator<Item = Event>) {
    let gateway = peer.gateway.as_deref().unwrap_or_default();
    let id = peer.reg.id;
    for event in events {
        match event {
            Event::Sent {
                ty,
                version,
                resources,
                removed,
            } => {
                debug!(type_url = ty.type_url(), %version, resources, removed, "pushed");
                shared.metrics.pushed(ty);
                shared.clients.sent(id, ty, &version);
            }
            Event::Acked { ty, version } => {
                debug!(type_url = ty.type_url(), version = %short(&version), "proxy acknowledged");
                shared.clients.acked(id, ty, &version);
            }
            Event::Nacked { ty, version, message } => {
                warn!(
                    node = %peer.node,
                    gateway,
                    type_url = ty.type_url(),
                    version = %short(&version),
                    error = %text(&message, NACK_LOG_CHARS),
                    "proxy rejected configuration"
                );
                shared.metrics.nacked(ty);
                shared.clients.nacked(id, ty, &version, &message);
            }
            Event::Plan(Step::Promoted) => debug!("clusters acknowledged; pushing listeners and routes"),
            Event::Plan(Step::Released { snapshots }) => {
                debug!(snapshots, "listeners and routes acknowledged; releasing older clusters");
            }
        }
    }
}
