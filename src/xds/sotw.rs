//! State-of-the-world ADS, one stream: per type a version, a nonce and a subscription, following
//! docs/serving.md, "Protocol rules pier relies on", P2–P3 (checked against Envoy 1.40).
//!
//! - `version_info` is the served view's type version; every response gets a fresh nonce.
//! - A request whose `response_nonce` is not the latest sent for its type is stale and ignored entirely
//!   (Envoy sends such hints after a CDS push; the next ACK repeats them).
//! - ACK vs NACK is decided by `error_detail`, never by comparing versions. A NACKed version is never
//!   sent again: the type waits for a newer version.
//! - One response in flight per type: the next one waits for the (N)ACK, so every version is
//!   acknowledged or rejected explicitly, which is what make-before-break waits on.
//! - Clusters and listeners are full state; wildcard by `"*"` or by a client that never named a
//!   resource of that type (legacy). Endpoints, routes and secrets carry the requested names only; a
//!   name requested before it exists is sent when it appears (the view's version changes).
//! - Endpoints, routes and secrets are sent as a change costs: once a proxy has acknowledged a response
//!   of the type, the next carries only the resources it does not hold as they are — changed since that
//!   response, or newly asked for. The protocol allows it for these types (an absent resource is kept,
//!   not deleted; Envoy, gRPC C-core and tonic-xds all keep it), and a load assignment's version covers
//!   its cluster's, so a re-warming cluster still gets its endpoints. A response that would carry
//!   nothing is not sent, and the type counts as acknowledged at the new version: the proxy holds that
//!   version's resources for its names already. Why: a cluster added used to resend every load
//!   assignment to every proxy of the fleet (docs/performance.md, fan-out).
//! - The first request of a type gets the full current state, except a pure-wildcard cluster or
//!   listener request whose `version_info` already equals the current version (a proxy reconnecting
//!   after a pier restart with unchanged input): that proxy holds exactly this full state, so pier
//!   records it as acknowledged and sends nothing — no reload, no churn (notes §4.3 says this is safe
//!   for pure-wildcard LDS/CDS only; named types are always answered).
//!
//! Owns the wire rules only; which snapshot a type is served from is [`Plan`]'s decision. A response's
//! body (everything but the nonce) comes from the view, shared with every stream sent the same
//! resources (`cache::bodies`); the stream holds it until its proxy answers.

use std::collections::BTreeSet;
use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;

use super::XdsType;
use super::cache::View;
use super::cache::bodies::{Body, Held, Selection, names_key};
use super::clients::{Mode, TypeSync};
use super::plan::{Plan, Progress};
use super::stream::{Event, Machine, type_sync};

/// Per-type state of one SotW stream.
#[derive(Debug, Default)]
struct TypeState {
    /// A request of this type was received on this stream.
    subscribed: bool,
    wildcard: bool,
    /// A non-empty `resource_names` was sent once: the legacy (empty list) wildcard no longer applies.
    named_ever: bool,
    /// Shared with `held` and `sent` while they answer the same names.
    names: Arc<BTreeSet<String>>,
    /// [`names_key`] of `names`: which streams' responses this one's can share.
    names_key: u64,
    /// First request or changed subscription: answer even if the version did not change.
    need_response: bool,
    last_nonce: Option<String>,
    awaiting_ack: bool,
    sent_version: Option<String>,
    acked_version: Option<String>,
    nacked_version: Option<String>,
    /// The version a reconnecting proxy says it holds (first request of a pure-wildcard type).
    held_version: Option<String>,
    /// The body of the response awaiting an (N)ACK: holding it keeps it shareable for the rest of the
    /// fleet while the change is in flight (`cache::bodies`).
    in_flight: Option<Arc<Body>>,
    /// Endpoints, routes and secrets asked for by name: what the proxy holds, once it has acknowledged a
    /// response of the type (or been spared one that would carry nothing new), and what the response
    /// in flight would make it hold.
    held: Option<Held>,
    sent: Option<Held>,
}

impl TypeState {
    /// The proxy acknowledged `version`, and so holds `held`.
    fn acked(&mut self, ty: XdsType, version: String, held: Option<Held>) -> Event {
        self.acked_version = Some(version.clone());
        self.nacked_version = None;
        self.held = held;
        Event::Acked { ty, version }
    }

    /// The proxy holds `version`'s resources for its names already: the type counts as sent and
    /// acknowledged at it without a response.
    fn spared(&mut self, ty: XdsType, version: &str, held: Option<Held>) -> Event {
        self.need_response = false;
        self.sent_version = Some(version.to_string());
        self.acked(ty, version.to_string(), held)
    }
}

/// A SotW response as it goes on the wire: the stream's own nonce and a body it may share with other
/// streams (`xds::grpc` frames the two as one `DiscoveryResponse`).
#[derive(Debug, Clone)]
pub(crate) struct SotwResponse {
    pub nonce: String,
    pub body: Arc<Body>,
}

impl SotwResponse {
    /// The response decoded, as a proxy reads it.
    #[cfg(any(test, feature = "fuzzing", feature = "testkit"))]
    pub fn message(&self) -> envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse {
        use prost::Message;
        let mut bytes = Vec::new();
        super::cache::bodies::text(5, &self.nonce, &mut bytes);
        bytes.extend_from_slice(&self.body.bytes);
        Message::decode(bytes.as_slice()).expect("a body decodes")
    }
}

/// A SotW stream's protocol state.
#[derive(Debug, Default)]
pub(crate) struct Sotw {
    plan: Plan,
    types: [TypeState; 5],
    nonces: u64,
}

struct Types<'a>(&'a [TypeState; 5]);

impl Progress for Types<'_> {
    fn subscribed(&self, ty: XdsType) -> bool {
        self.0[ty.index()].subscribed
    }

    fn applied(&self, ty: XdsType, view: &View) -> bool {
        let st = &self.0[ty.index()];
        !st.awaiting_ack
            && !st.need_response
            && st.sent_version.as_ref() == Some(&view.version)
            && st.acked_version.as_ref() == Some(&view.version)
    }

    fn requested_all(&self, ty: XdsType, view: &View) -> bool {
        let st = &self.0[ty.index()];
        // A client that names its listeners (a proxyless gRPC client) asks for the route configurations
        // of those listeners only, never the Gateway's others: what it asked for is all it runs.
        let listeners = &self.0[XdsType::Listener.index()];
        let named_listeners = ty == XdsType::Route && !listeners.wildcard && listeners.named_ever;
        st.wildcard || named_listeners || view.entries.keys().all(|n| st.names.contains(n))
    }
}

impl Machine for Sotw {
    type Request = DiscoveryRequest;
    type Response = SotwResponse;
    const MODE: Mode = Mode::Sotw;

    fn names(request: &DiscoveryRequest) -> usize {
        request.resource_names.len()
    }

    fn node(request: &DiscoveryRequest) -> Option<&Node> {
        request.node.as_ref()
    }

    fn plan_mut(&mut self) -> &mut Plan {
        &mut self.plan
    }

    fn on_request(&mut self, req: DiscoveryRequest, events: &mut Vec<Event>) {
        let Some(ty) = XdsType::from_type_url(&req.type_url) else {
            tracing::debug!(type_url = %req.type_url, "ignoring a request for a type pier does not serve");
            return;
        };
        let st = &mut self.types[ty.index()];
        if !req.response_nonce.is_empty() {
            match &st.last_nonce {
                Some(last) if *last != req.response_nonce => {
                    tracing::debug!(type_url = %req.type_url, nonce = %req.response_nonce, "ignoring a request with a stale nonce");
                    let asked: BTreeSet<&str> = req.resource_names.iter().map(String::as_str).collect();
                    let named = !ty.is_full_state() && !st.wildcard && !asked.contains("*");
                    if named && !asked.iter().copied().eq(st.names.iter().map(String::as_str)) {
                        // The proxy changed what it asks for while a response was in flight, and that
                        // change is not seen here: it may have dropped what it held (a route
                        // configuration unsubscribed and asked for again), so the next response
                        // carries everything it asks for, and follows the ACK of this one.
                        st.held = None;
                        st.sent = None;
                        st.need_response = true;
                    }
                    return;
                }
                Some(_) if st.awaiting_ack => {
                    st.awaiting_ack = false;
                    st.in_flight = None;
                    let sent = st.sent.take();
                    let version = st.sent_version.clone().unwrap_or_default();
                    match &req.error_detail {
                        Some(error) => {
                            st.nacked_version = Some(version.clone());
                            events.push(Event::Nacked {
                                ty,
                                version,
                                message: error.message.clone(),
                            });
                        }
                        None => events.push(st.acked(ty, version, sent)),
                    }
                }
                // The latest nonce again (a subscription change after its ACK), or a nonce from an
                // earlier stream (treated as a first request).
                _ => {}
            }
        }
        let first = !st.subscribed;
        st.subscribed = true;
        let mut names: BTreeSet<String> = req.resource_names.into_iter().collect();
        let star = names.remove("*");
        let wildcard = star || (names.is_empty() && !st.named_ever && ty.is_full_state());
        st.named_ever |= !names.is_empty();
        if first && wildcard && names.is_empty() && ty.is_full_state() && !req.version_info.is_empty() {
            st.held_version = Some(req.version_info.clone());
        }
        if first || wildcard != st.wildcard || names != *st.names {
            st.need_response = true;
            st.names_key = names_key(&names);
            st.names = Arc::new(names);
        }
        st.wildcard = wildcard;
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn sync(&self, ty: XdsType) -> Option<TypeSync> {
        let st = &self.types[ty.index()];
        type_sync(st.subscribed, self.plan.view(ty), |view| {
            // A proxy that asks for none of the type's resources by name has nothing to apply.
            let wants_nothing = !st.wildcard && st.names.is_empty() && !st.awaiting_ack;
            let applied = wants_nothing || Types(&self.types).applied(ty, view);
            (
                applied,
                !st.awaiting_ack && st.nacked_version.as_ref() == Some(&view.version),
            )
        })
    }

    fn flush(&mut self, events: &mut Vec<Event>) -> Vec<(XdsType, SotwResponse)> {
        events.extend(self.plan.advance(&Types(&self.types)).into_iter().map(Event::Plan));
        XdsType::ALL
            .into_iter()
            .filter_map(|ty| self.respond(ty, events).map(|response| (ty, response)))
            .collect()
    }
}

impl Sotw {
    fn respond(&mut self, ty: XdsType, events: &mut Vec<Event>) -> Option<SotwResponse> {
        let st = &mut self.types[ty.index()];
        if !st.subscribed || st.awaiting_ack {
            return None;
        }
        let view = self.plan.view(ty)?;
        if st.nacked_version.as_ref() == Some(&view.version) {
            // Rejected: wait for a newer version rather than repeat it.
            return None;
        }
        if !st.need_response && st.sent_version.as_ref() == Some(&view.version) {
            return None;
        }
        if st.held_version.take().as_ref() == Some(&view.version) && st.wildcard {
            events.push(st.spared(ty, &view.version, None));
            return None;
        }
        let named = !st.wildcard && !ty.is_full_state();
        let selection = match &st.held {
            _ if st.wildcard => Selection::All,
            Some(held) if named => Selection::Since(&st.names, st.names_key, held),
            _ => Selection::Named(&st.names, st.names_key),
        };
        let body = view.body(ty, selection);
        let holding = named.then(|| Held {
            view: view.clone(),
            names: st.names.clone(),
            names_key: st.names_key,
        });
        if body.resources == 0 && matches!(selection, Selection::Since(..)) {
            // The proxy holds this view's resources for its names already: a response would carry
            // nothing (for these types an absent resource is kept, not deleted), so none is sent.
            events.push(st.spared(ty, &view.version, holding));
            return None;
        }
        self.nonces += 1;
        let nonce = self.nonces.to_string();
        st.last_nonce = Some(nonce.clone());
        st.awaiting_ack = true;
        st.need_response = false;
        st.sent_version = Some(view.version.clone());
        st.in_flight = Some(body.clone());
        st.sent = holding;
        events.push(Event::Sent {
            ty,
            version: view.version.clone(),
            resources: body.resources,
            removed: 0,
        });
        Some(SotwResponse { nonce, body })
    }
}
