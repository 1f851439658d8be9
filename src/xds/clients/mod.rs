//! Registry of connected proxies, for `/debug/clients` and for the Gateway status writer: per stream the
//! node, its Gateway, the mode, and per type the last version sent, the last acknowledged, the last
//! rejection (version + Envoy's error) and how many rejections.
//!
//! Owns only this bookkeeping: it is written by the stream tasks and read by admin code, and never
//! influences what is served (the state machines keep their own state). An entry lives exactly as
//! long as its stream.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use dashmap::DashMap;

use super::XdsType;
use super::agent::Agent;
use super::failures::Failures;
use super::untrusted::{short, text};

/// Envoy's NACK messages name the resource and the field; 4 KiB keeps them whole.
const NACK_CHARS: usize = 4096;

/// Identifies one stream in the registry.
pub type ClientId = u64;

/// ADS flavour of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Sotw,
    Delta,
}

impl Mode {
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Sotw => "sotw",
            Mode::Delta => "delta",
        }
    }
}

/// A rejected push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    pub version: String,
    pub message: String,
}

/// One type of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeStatus {
    pub sent_version: Option<String>,
    pub acked_version: Option<String>,
    pub last_nack: Option<Nack>,
    pub nack_count: u64,
    /// The last response of this type was rejected and nothing newer was acknowledged since.
    pub rejecting: bool,
}

/// One connected proxy (one ADS stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub id: ClientId,
    pub node_id: String,
    /// `node.cluster` as sent.
    pub cluster: String,
    /// The Gateway served, if `cluster` is a valid `"<namespace>/<name>"`.
    pub gateway: Option<String>,
    /// Who the transport says the client is (its certificate's SPIFFE ID, or `plaintext`).
    pub identity: String,
    pub mode: Mode,
    /// An Envoy or a proxyless gRPC client, and the `user_agent_name` it sent.
    pub agent: Agent,
    pub user_agent: String,
    /// The certificate provider instances a gRPC client's node declares (`xds::agent::Trust`), escaped.
    pub certificate_providers: Vec<String>,
    pub connected_at_unix: u64,
    pub types: BTreeMap<XdsType, TypeStatus>,
    /// Where the stream stood after it last ran; `None` before its first response.
    pub sync: Option<ClientSync>,
}

/// Where a proxy stands with the configuration its plan serves, type by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeSync {
    /// Acknowledged, nothing in flight, nothing left to send.
    Applied,
    /// The proxy rejected exactly what is served now (it is not sent again).
    Rejected,
    /// In flight or still to send.
    Pending,
}

/// What a proxy has of what pier serves it now, for one type: CSDS's config status, `pier proxy-status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigState {
    /// Acknowledged: the proxy runs what pier serves.
    Synced,
    /// Sent and not answered yet, or something newer still to send.
    Stale,
    /// The proxy rejected what pier serves (the message is in [`TypeStatus::last_nack`]).
    Nacked,
    /// Asked for and nothing sent yet.
    NotSent,
    /// The proxy never asked for this type (e.g. no secrets to fetch).
    NotRequested,
}

impl ConfigState {
    pub const fn as_str(self) -> &'static str {
        match self {
            ConfigState::Synced => "SYNCED",
            ConfigState::Stale => "STALE",
            ConfigState::Nacked => "NACKED",
            ConfigState::NotSent => "NOT_SENT",
            ConfigState::NotRequested => "NOT_REQUESTED",
        }
    }
}

impl ClientInfo {
    /// Where this proxy stands with `ty`, from the stream's last reported position.
    pub fn state(&self, ty: XdsType) -> ConfigState {
        let sent = self.types.get(&ty).is_some_and(|t| t.sent_version.is_some());
        match self.sync.as_ref().map(|s| s.types.get(&ty)) {
            None => ConfigState::NotSent,
            Some(None) => ConfigState::NotRequested,
            Some(Some(TypeSync::Applied)) => ConfigState::Synced,
            Some(Some(TypeSync::Rejected)) => ConfigState::Nacked,
            Some(Some(TypeSync::Pending)) if sent => ConfigState::Stale,
            Some(Some(TypeSync::Pending)) => ConfigState::NotSent,
        }
    }
}

/// A stream's position after one turn of its loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSync {
    /// The snapshot cache generation the stream had seen.
    pub generation: u64,
    /// Listeners and routes come from the latest snapshot (`xds::plan`).
    pub promoted: bool,
    pub types: BTreeMap<XdsType, TypeSync>,
}

/// What the connected proxies made of the latest publish ([`Clients::verdict`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No proxy that serves a Gateway is connected: nobody can judge.
    Unjudged,
    /// Some proxy is still being sent the latest configuration, or has not answered.
    Busy,
    /// Every proxy runs the latest configuration.
    Applied,
    /// A proxy rejected part of it.
    Rejected {
        gateway: String,
        type_url: String,
        message: String,
    },
}

/// Every connected proxy.
#[derive(Debug, Default)]
pub struct Clients {
    next: AtomicU64,
    streams: DashMap<ClientId, ClientInfo>,
    /// Bumped whenever a stream's position changes or a stream ends, for whoever waits on proxies.
    events: tokio::sync::watch::Sender<u64>,
    /// Streams that ended in failure lately (a proxy in a reconnect loop is rarely connected).
    pub failures: Failures,
}

impl Clients {
    pub fn new() -> Clients {
        Clients::default()
    }

    /// Client strings are kept escaped and bounded (`untrusted`): they are shown in `/debug/clients`
    /// and in status messages.
    pub fn register(
        &self,
        node_id: &str,
        cluster: &str,
        gateway: Option<&str>,
        mode: Mode,
        identity: &str,
    ) -> ClientId {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let connected_at_unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.streams.insert(
            id,
            ClientInfo {
                id,
                node_id: short(node_id),
                cluster: short(cluster),
                gateway: gateway.map(str::to_string),
                identity: short(identity),
                mode,
                agent: Agent::Envoy,
                user_agent: String::new(),
                certificate_providers: Vec::new(),
                connected_at_unix,
                types: BTreeMap::new(),
                sync: None,
            },
        );
        id
    }

    /// Records what kind of client the stream is and what it declares it can verify (told from its
    /// node, after registering it).
    pub fn set_agent(&self, id: ClientId, agent: Agent, user_agent: &str, declared: &BTreeSet<String>) {
        if let Some(mut c) = self.streams.get_mut(&id) {
            c.agent = agent;
            c.user_agent = short(user_agent);
            c.certificate_providers = declared.iter().map(|d| short(d)).collect();
        }
    }

    pub fn remove(&self, id: ClientId) {
        self.streams.remove(&id);
        self.events.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Records where a stream stands after a turn of its loop.
    pub fn synced(&self, id: ClientId, sync: ClientSync) {
        let changed = match self.streams.get_mut(&id) {
            Some(mut client) if client.sync.as_ref() != Some(&sync) => {
                client.sync = Some(sync);
                true
            }
            _ => false,
        };
        if changed {
            self.events.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Sees a change whenever a stream's position changes or a stream ends.
    pub fn events(&self) -> tokio::sync::watch::Receiver<u64> {
        self.events.subscribe()
    }

    /// What the proxies made of the snapshot cache at `generation`: the first rejection (with Envoy's
    /// message), or busy while any proxy has not seen it, not been sent all of it or not answered.
    /// Applied is not final: a proxy that acknowledged new listeners asks for their routes right
    /// after, so callers wait for it to last (`runtime::contain`).
    pub fn verdict(&self, generation: u64) -> Verdict {
        let (mut judged, mut busy) = (false, false);
        // Ids in order, so the rejection reported is the same whatever the map's order.
        let mut rejected: Option<(ClientId, Verdict)> = None;
        for entry in self.streams.iter() {
            let client = entry.value();
            let Some(gateway) = client.gateway.as_deref() else {
                continue;
            };
            judged = true;
            // A position from before the publish says nothing about it.
            let Some(sync) = client.sync.as_ref().filter(|s| s.generation >= generation) else {
                busy = true;
                continue;
            };
            for (ty, state) in &sync.types {
                if *state == TypeSync::Rejected && rejected.as_ref().is_none_or(|(id, _)| client.id < *id) {
                    let message = client.types.get(ty).and_then(|t| t.last_nack.as_ref());
                    let verdict = Verdict::Rejected {
                        gateway: gateway.to_string(),
                        type_url: ty.type_url().to_string(),
                        message: message.map(|n| n.message.clone()).unwrap_or_default(),
                    };
                    rejected = Some((client.id, verdict));
                }
                busy |= *state == TypeSync::Pending;
            }
            busy |= !sync.promoted;
        }
        if let Some((_, verdict)) = rejected {
            return verdict;
        }
        match (judged, busy) {
            (false, _) => Verdict::Unjudged,
            (true, true) => Verdict::Busy,
            (true, false) => Verdict::Applied,
        }
    }

    pub fn sent(&self, id: ClientId, ty: XdsType, version: &str) {
        self.update(id, ty, |t| t.sent_version = Some(version.to_string()));
    }

    pub fn acked(&self, id: ClientId, ty: XdsType, version: &str) {
        self.update(id, ty, |t| {
            t.acked_version = Some(short(version));
            t.rejecting = false;
        });
    }

    pub fn nacked(&self, id: ClientId, ty: XdsType, version: &str, message: &str) {
        self.update(id, ty, |t| {
            t.last_nack = Some(Nack {
                version: short(version),
                message: text(message, NACK_CHARS),
            });
            t.nack_count += 1;
            t.rejecting = true;
        });
    }

    fn update(&self, id: ClientId, ty: XdsType, f: impl FnOnce(&mut TypeStatus)) {
        if let Some(mut client) = self.streams.get_mut(&id) {
            f(client.types.entry(ty).or_default());
        }
    }

    pub fn len(&self) -> usize {
        self.streams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Every connected proxy, by id (connection order).
    pub fn list(&self) -> Vec<ClientInfo> {
        let mut all: Vec<_> = self.streams.iter().map(|c| c.value().clone()).collect();
        all.sort_by_key(|c| c.id);
        all
    }

    /// Rejections still in force for a Gateway's proxies: `(type_url, Envoy's error)`, deduplicated
    /// and sorted. For the Gateway status writer.
    pub fn nacks_for_gateway(&self, gateway: &str) -> Vec<(String, String)> {
        let mut out = BTreeSet::new();
        for client in self.streams.iter().filter(|c| c.gateway.as_deref() == Some(gateway)) {
            for (ty, status) in &client.types {
                if let (true, Some(nack)) = (status.rejecting, &status.last_nack) {
                    out.insert((ty.type_url().to_string(), nack.message.clone()));
                }
            }
        }
        out.into_iter().collect()
    }
}

mod json;
#[cfg(test)]
mod tests;
