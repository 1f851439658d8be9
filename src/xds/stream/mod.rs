//! One ADS stream, either mode: maps the node to its Gateway, feeds requests and new snapshots to the
//! mode's state machine, writes its responses, reports what happened to the client registry, the
//! metrics and the log (`report`), and times pushes and ACKs (`latency`). Ends on client close,
//! transport error or server shutdown (closing the response stream cleanly, so tonic ends the call
//! with OK).
//!
//! Owns the only I/O of a stream and the node → Gateway rule; never decides what is sent (that is the
//! state machine and the [`Plan`]). A node whose `cluster` is not `"<namespace>/<name>"`, or names a
//! Gateway that is not published, is sent nothing — never another Gateway's configuration. A node whose
//! `cluster` names a Gateway the connection's identity does not grant (`identity`), a node larger than
//! the bound, or a request listing more resource names than the bound ends the stream with an error
//! status before anything more is sent. Every client string is escaped before it is logged (`untrusted`).

use std::sync::Arc;
use std::time::Instant;

use envoy_types::pb::envoy::config::core::v3::Node;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use tracing::{Instrument, debug, field, info, warn};

use super::agent::Agent;
use super::bounds::RequestBounds;
use super::clients::{ClientId, ClientSync, Clients, Mode, TypeSync};
use super::failures::Who;
use super::latency::Timing;
use super::metrics::XdsMetrics;
use super::plan::{Plan, Step};
use super::report::report;
use super::requests::{RequestError, Requests};
use super::transport::{PeerInfo, Refused, XdsLimits, refuse, refuse_detailed};
use super::untrusted::short;
use super::{SnapshotCache, XdsType};

mod admit;
use admit::{admit, failed, request_failed};

/// Responses buffered per stream before the writer waits for the proxy to read.
const RESPONSE_BUFFER: usize = 16;

/// Something a state machine did that the outside world should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    Sent {
        ty: XdsType,
        version: String,
        resources: usize,
        removed: usize,
    },
    Acked {
        ty: XdsType,
        version: String,
    },
    Nacked {
        ty: XdsType,
        version: String,
        message: String,
    },
    Plan(Step),
}

/// A mode's per-stream protocol state machine (pure: no I/O, no clock).
pub(crate) trait Machine: Default + Send + 'static {
    type Request: prost::Message + Default + Send + 'static;
    type Response: Send + 'static;
    const MODE: Mode;

    fn node(request: &Self::Request) -> Option<&Node>;
    /// Resource names the request lists (subscribed, unsubscribed, or with versions).
    fn names(request: &Self::Request) -> usize;
    fn plan_mut(&mut self) -> &mut Plan;
    /// Applies one request (ACK / NACK / subscription change).
    fn on_request(&mut self, request: Self::Request, events: &mut Vec<Event>);
    /// Advances the plan and returns every response due now, with its type, in push order.
    fn flush(&mut self, events: &mut Vec<Event>) -> Vec<(XdsType, Self::Response)>;
    /// Where the proxy stands with what the plan serves for `ty`; `None` if it never asked for `ty`.
    fn sync(&self, ty: XdsType) -> Option<TypeSync>;
    fn plan(&self) -> &Plan;
}

/// [`Machine::sync`] for a type the proxy asked for (`subscribed`), given the plan's view of it and the
/// mode's own reading of that view: `(applied, rejected)`.
pub(crate) fn type_sync(
    subscribed: bool,
    view: Option<&Arc<super::cache::View>>,
    read: impl FnOnce(&super::cache::View) -> (bool, bool),
) -> Option<TypeSync> {
    if !subscribed {
        return None;
    }
    let Some(view) = view else {
        return Some(TypeSync::Pending);
    };
    Some(match read(view) {
        (true, _) => TypeSync::Applied,
        (false, true) => TypeSync::Rejected,
        (false, false) => TypeSync::Pending,
    })
}

/// Where a proxy stands with the latest snapshot, for [`Clients::verdict`].
fn sync_of<M: Machine>(machine: &M, generation: u64) -> ClientSync {
    ClientSync {
        generation,
        promoted: machine.plan().promoted(),
        types: XdsType::ALL
            .into_iter()
            .filter_map(|ty| machine.sync(ty).map(|s| (ty, s)))
            .collect(),
    }
}

/// What every stream shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub cache: Arc<SnapshotCache>,
    pub clients: Arc<Clients>,
    pub metrics: Arc<XdsMetrics>,
    pub limits: XdsLimits,
    pub bounds: Arc<RequestBounds>,
    pub shutdown: watch::Receiver<bool>,
}

/// Starts the stream's task; the returned stream is the response half tonic sends.
pub(crate) fn spawn<M: Machine>(
    shared: Shared,
    peer: PeerInfo,
    inbound: Requests<M::Request>,
) -> ReceiverStream<Result<M::Response, Status>> {
    let (tx, rx) = mpsc::channel(RESPONSE_BUFFER);
    let span = tracing::info_span!(
        "ads",
        mode = M::MODE.as_str(),
        peer = %peer.addr,
        node = field::Empty,
        gateway = field::Empty
    );
    tokio::spawn(run::<M>(shared, peer, inbound, tx).instrument(span));
    ReceiverStream::new(rx)
}

/// `"<namespace>/<name>"`, both parts non-empty.
pub(crate) fn parse_gateway(cluster: &str) -> Option<&str> {
    let (ns, name) = cluster.split_once('/')?;
    let valid = |s: &str| !s.is_empty() && !s.contains('/') && !s.chars().any(char::is_whitespace);
    (valid(ns) && valid(name)).then_some(cluster)
}

/// Unregisters the stream however its task ends.
pub(crate) struct Registration {
    clients: Arc<Clients>,
    metrics: Arc<XdsMetrics>,
    pub id: ClientId,
    mode: Mode,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.clients.remove(self.id);
        self.metrics.disconnected(self.mode);
    }
}

/// The proxy on the other end, fixed by the first request.
pub(crate) struct Peer {
    /// `node.id` escaped for logs.
    pub node: String,
    /// `node.id` as sent (the failure registry escapes it as the client registry does).
    pub node_id: String,
    pub gateway: Option<String>,
    /// An Envoy or a proxyless gRPC client: which half of the Gateway's snapshot it is served.
    pub agent: Agent,
    /// For a gRPC client: the certificate providers it declares, and what it was served of them.
    trust: super::agent::Trust,
    pub reg: Registration,
    /// Warned that the Gateway is unknown (or gone); reset once it is served.
    warned: bool,
    served: bool,
    /// The Gateway was deleted and the empty state is being (or has been) served.
    emptied: bool,
}

async fn run<M: Machine>(
    shared: Shared,
    conn: PeerInfo,
    mut inbound: Requests<M::Request>,
    tx: mpsc::Sender<Result<M::Response, Status>>,
) {
    let _active = conn.activity.stream();
    let mut generation = shared.cache.subscribe();
    let mut shutdown = shared.shutdown.clone();
    let mut machine = M::default();
    let mut peer: Option<Peer> = None;
    let mut events = Vec::new();
    let mut timing = Timing::new();
    loop {
        tokio::select! {
            biased;
            () = shut_down(&mut shutdown) => {
                info!("closing stream: server shutting down");
                return;
            }
            message = inbound.next() => match message {
                Some(Ok(request)) => {
                    // Before the first publish nothing has sized the name bound, and a restarted pier is
                    // when every proxy reconnects naming all it holds: judge such a request once sized.
                    if M::names(&request) > shared.bounds.resource_names() && !shared.bounds.is_fitted() {
                        tokio::select! {
                            () = shut_down(&mut shutdown) => return,
                            () = shared.bounds.fitted() => {}
                        }
                    }
                    if let Err(status) = admit::<M>(&shared, &conn, peer.is_none(), &request) {
                        failed(&shared, &conn, peer.as_ref(), M::node(&request), status.message());
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                    if peer.is_none() {
                        peer = Some(identify::<M>(&shared, &conn, M::node(&request)));
                    }
                    let before = events.len();
                    machine.on_request(request, &mut events);
                    timing.answered(shared.metrics.latency(), &events[before..]);
                }
                None => {
                    debug!("proxy closed the stream");
                    return;
                }
                Some(Err(error)) => {
                    let status = request_failed(&shared, &conn, peer.as_ref(), &error);
                    if let Some(status) = status {
                        let _ = tx.send(Err(status)).await;
                    }
                    return;
                }
            },
            changed = generation.changed() => {
                if changed.is_err() {
                    // The cache is gone: nothing new will ever be served.
                    return;
                }
            }
        }
        let Some(peer) = peer.as_mut() else { continue };
        let seen = *generation.borrow_and_update();
        refresh(&shared, peer, machine.plan_mut(), seen.at);
        let responses = machine.flush(&mut events);
        report(&shared, peer, events.drain(..));
        let sync = sync_of(&machine, seen.number);
        timing.settle(&sync, machine.plan());
        shared.clients.synced(peer.reg.id, sync);
        for (ty, response) in responses {
            if tx.send(Ok(response)).await.is_err() {
                debug!("response stream dropped");
                return;
            }
            timing.sent(shared.metrics.latency(), ty, machine.plan());
        }
    }
}

/// Resolves when the server shuts down; never if the signal's sender is gone without firing.
async fn shut_down(signal: &mut watch::Receiver<bool>) {
    if signal.wait_for(|down| *down).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn identify<M: Machine>(shared: &Shared, conn: &PeerInfo, node: Option<&Node>) -> Peer {
    let (id, cluster) = node.map(|n| (n.id.clone(), n.cluster.clone())).unwrap_or_default();
    let gateway = parse_gateway(&cluster).map(str::to_string);
    let agent = Agent::of(node);
    let span = tracing::Span::current();
    span.record("node", short(&id).as_str());
    span.record("gateway", short(&cluster).as_str());
    if gateway.is_none() {
        warn!(
            node = %short(&id),
            cluster = %short(&cluster),
            "node.cluster is not \"<namespace>/<gateway>\"; serving this proxy nothing"
        );
    } else {
        info!(identity = %short(&conn.identity.describe()), agent = agent.as_str(), "proxy connected");
    }
    shared.metrics.connected(M::MODE);
    shared.metrics.stream_opened(M::MODE);
    let reg = Registration {
        clients: shared.clients.clone(),
        metrics: shared.metrics.clone(),
        id: shared
            .clients
            .register(&id, &cluster, gateway.as_deref(), M::MODE, &conn.identity.describe()),
        mode: M::MODE,
    };
    let user_agent = node.map_or("", |n| n.user_agent_name.as_str());
    let trust = super::agent::Trust::of(node);
    shared.clients.set_agent(reg.id, agent, user_agent, &trust.declared);
    Peer {
        node: short(&id),
        node_id: id,
        gateway,
        agent,
        trust,
        reg,
        warned: false,
        served: false,
        emptied: false,
    }
}

/// Points the plan at the Gateway's latest snapshot, if there is one. `published`: when the latest
/// publish this stream has seen happened (a deleted Gateway's empty state is dated from it).
fn refresh(shared: &Shared, peer: &mut Peer, plan: &mut Plan, published: Instant) {
    let Some(gateway) = peer.gateway.as_deref() else { return };
    let mut half = |s: Arc<super::cache::Snapshot>| match peer.agent {
        Agent::Envoy => s,
        Agent::Grpc => peer.trust.serve(s.proxyless(), &peer.node),
    };
    match shared.cache.get(gateway).map(&mut half) {
        Some(snapshot) => {
            if plan.set_latest(snapshot) {
                debug!("new snapshot for this proxy");
            }
            peer.served = true;
            peer.warned = false;
            peer.emptied = false;
        }
        None if !shared.cache.has_published() => {}
        // A Gateway that was served and is gone was deleted: its proxies must stop exposing it, so
        // they get the empty state (through the same make-before-break plan as any change).
        None if peer.served => {
            if !peer.warned {
                warn!(node = %peer.node, gateway, "Gateway deleted; removing its configuration from the proxy");
                peer.warned = true;
            }
            if !peer.emptied {
                let empty = super::cache::Snapshot::build(gateway, &crate::envoy::Resources::default());
                plan.set_latest(Arc::new(empty.dated(published, None)));
                peer.emptied = true;
            }
        }
        None if peer.warned => {}
        None => {
            warn!(node = %peer.node, gateway, "unknown Gateway; serving nothing until it exists");
            peer.warned = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_gateway;

    #[test]
    fn gateway_names() {
        assert_eq!(parse_gateway("ns/gw"), Some("ns/gw"));
        for bad in ["", "gw", "/gw", "ns/", "a/b/c", "ns/g w"] {
            assert_eq!(parse_gateway(bad), None, "{bad:?}");
        }
    }
}
