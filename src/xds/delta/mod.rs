//! Delta (incremental) ADS, one stream: per type a subscription and the versions the proxy holds,
//! following `docs/serving.md`, P5.
//!
//! - Subscriptions change by `resource_names_subscribe` / `_unsubscribe`, honoured whatever the nonce
//!   (the nonce only pairs an ACK with its response). Wildcard by `"*"`, or legacy: the first request of
//!   a cluster or listener type with both lists empty. Naming a resource ends the legacy wildcard;
//!   unsubscribing `"*"` ends any wildcard.
//! - Only what differs is sent: a resource whose version differs from what the proxy holds, and in
//!   `removed_resources` what it holds that no longer exists. An endpoint-only change is therefore one
//!   `ClusterLoadAssignment` on the wire.
//! - Every name in `resource_names_subscribe` is answered even if the proxy should already have it; a
//!   subscribed name that does not exist is answered in `removed_resources` (so the proxy does not wait
//!   for a timeout) and sent when it appears.
//! - `initial_resource_versions` (first request of a type on a reconnected stream) seeds what the proxy
//!   holds, so a reconnect after a restart with unchanged input sends nothing.
//! - One response in flight per type. A NACKed response is not repeated: what it carried counts as
//!   held, so only a newer version is sent; until one is acknowledged the type is not "applied", which
//!   keeps [`Plan`] from moving listeners and routes onto rejected clusters.
//! - While [`Plan::holds_removals`], resources the proxy holds that the cluster/endpoint/secret views
//!   lack are not removed yet: its listeners may predate this stream.
//!
//! Owns the wire rules only; which snapshot a type is served from is [`Plan`]'s decision.

use std::collections::BTreeSet;
use std::sync::Arc;

use imbl::ordmap::DiffItem;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse, Resource};

use super::XdsType;
use super::cache::{Entry, View};
use super::clients::{Mode, TypeSync};
use super::known::Known;
use super::plan::{Plan, Progress};
use super::stream::{Event, Machine, type_sync};

/// Per-type state of one delta stream.
#[derive(Debug, Default)]
struct TypeState {
    subscribed: bool,
    wildcard: bool,
    /// The wildcard came from an empty first request, not an explicit `"*"`.
    legacy: bool,
    names: BTreeSet<String>,
    /// What the proxy holds (as far as pier knows): name → version. While a wildcard proxy holds exactly
    /// a view, that view (`Known::View`): the next diff is then the persistent maps' own difference,
    /// which skips every resource the two views share, and nothing is copied.
    known: Known,
    /// Names to answer in the next response whatever the proxy holds (just subscribed).
    resend: BTreeSet<String>,
    last_nonce: Option<String>,
    awaiting_ack: bool,
    /// The latest response was rejected and nothing newer was acknowledged since.
    nacked: bool,
    sent_version: Option<String>,
    /// A fresh proxy (no `initial_resource_versions`) waits for a first response to every wildcard
    /// type before it finishes initialising — even an empty one: a Gateway whose every backend was
    /// refused has no clusters, and without an answer Envoy would stay PRE_INITIALIZING for good.
    owes_first_answer: bool,
}

/// What a response for one type would carry.
struct Diff<'a> {
    upserts: Vec<(&'a String, &'a Arc<Entry>)>,
    removed: Vec<String>,
    /// Removals held back (`Plan::holds_removals`): the proxy keeps more than the view.
    held: bool,
}

impl TypeState {
    /// Records a response as what the proxy now holds. A wildcard proxy sent every difference from what
    /// it held (nothing `held`) holds exactly the view.
    fn sent(&mut self, resources: &[Resource], removed: &[String], view: &View, held: bool) {
        self.resend.clear();
        if self.wildcard && !held {
            self.known = Known::View(view.entries.clone());
            return;
        }
        for r in resources {
            self.known.insert(r.name.clone(), r.version.clone());
        }
        for name in removed {
            self.known.remove(name);
        }
    }

    fn interested(&self, name: &str) -> bool {
        self.wildcard || self.names.contains(name)
    }

    fn diff<'a>(&self, ty: XdsType, view: &'a View, hold_removals: bool) -> Diff<'a> {
        let hold = hold_removals && !ty.is_gated();
        if let Some(base) = self.known.view().filter(|_| self.wildcard && self.resend.is_empty()) {
            let mut diff = Diff {
                upserts: Vec::new(),
                removed: Vec::new(),
                held: false,
            };
            for item in base.diff(&view.entries) {
                match item {
                    DiffItem::Add(n, e) | DiffItem::Update { new: (n, e), .. } => diff.upserts.push((n, e)),
                    DiffItem::Remove(n, _) if !hold => diff.removed.push(n.clone()),
                    DiffItem::Remove(..) => diff.held = true,
                }
            }
            return diff;
        }
        let stale = |name: &String, entry: &Arc<Entry>| {
            self.resend.contains(name) || self.known.get(name) != Some(entry.version.as_str())
        };
        let upserts = if self.wildcard {
            view.entries.iter().filter(|(n, e)| stale(n, e)).collect()
        } else {
            self.names
                .iter()
                .filter_map(|n| view.entries.get_key_value(n))
                .filter(|(n, e)| stale(n, e))
                .collect()
        };
        let leaving = |n: &&String| self.interested(n) && !view.entries.contains_key(*n);
        let held = hold && self.known.names().any(|n| leaving(&n));
        let gone = self.known.names().filter(|n| !hold && leaving(n));
        let missing = self
            .resend
            .iter()
            .filter(|n| !self.known.contains_key(n) && !view.entries.contains_key(*n));
        Diff {
            upserts,
            removed: gone.chain(missing).cloned().collect(),
            held,
        }
    }
}

/// A delta stream's protocol state.
#[derive(Debug, Default)]
pub(crate) struct Delta {
    plan: Plan,
    types: [TypeState; 5],
    nonces: u64,
}

struct Types<'a> {
    types: &'a [TypeState; 5],
    hold_removals: bool,
}

impl Progress for Types<'_> {
    fn subscribed(&self, ty: XdsType) -> bool {
        self.types[ty.index()].subscribed
    }

    fn applied(&self, ty: XdsType, view: &View) -> bool {
        let st = &self.types[ty.index()];
        let diff = st.diff(ty, view, self.hold_removals);
        !st.awaiting_ack && !st.nacked && diff.upserts.is_empty() && diff.removed.is_empty()
    }

    fn requested_all(&self, ty: XdsType, view: &View) -> bool {
        let st = &self.types[ty.index()];
        st.wildcard || view.entries.keys().all(|n| st.names.contains(n))
    }
}

impl Machine for Delta {
    type Request = DeltaDiscoveryRequest;
    type Response = DeltaDiscoveryResponse;
    const MODE: Mode = Mode::Delta;

    fn names(request: &DeltaDiscoveryRequest) -> usize {
        request.resource_names_subscribe.len()
            + request.resource_names_unsubscribe.len()
            + request.initial_resource_versions.len()
    }

    fn node(request: &DeltaDiscoveryRequest) -> Option<&Node> {
        request.node.as_ref()
    }

    fn plan_mut(&mut self) -> &mut Plan {
        &mut self.plan
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn sync(&self, ty: XdsType) -> Option<TypeSync> {
        let st = &self.types[ty.index()];
        let hold_removals = self.plan.holds_removals();
        type_sync(st.subscribed, self.plan.view(ty), |view| {
            let types = Types {
                types: &self.types,
                hold_removals,
            };
            let diff = st.diff(ty, view, hold_removals);
            let nothing_to_send = diff.upserts.is_empty() && diff.removed.is_empty();
            (
                types.applied(ty, view),
                st.nacked && !st.awaiting_ack && nothing_to_send,
            )
        })
    }

    fn on_request(&mut self, req: DeltaDiscoveryRequest, events: &mut Vec<Event>) {
        let Some(ty) = XdsType::from_type_url(&req.type_url) else {
            tracing::debug!(type_url = %req.type_url, "ignoring a request for a type pier does not serve");
            return;
        };
        let st = &mut self.types[ty.index()];
        if !req.response_nonce.is_empty() {
            if st.awaiting_ack && st.last_nonce.as_ref() == Some(&req.response_nonce) {
                st.awaiting_ack = false;
                let version = st.sent_version.clone().unwrap_or_default();
                st.nacked = req.error_detail.is_some();
                events.push(match &req.error_detail {
                    Some(error) => Event::Nacked {
                        ty,
                        version,
                        message: error.message.clone(),
                    },
                    None => Event::Acked { ty, version },
                });
            } else {
                tracing::debug!(type_url = %req.type_url, nonce = %req.response_nonce, "(N)ACK of an earlier response; subscription changes still apply");
            }
        }
        let first = !st.subscribed;
        if first {
            st.subscribed = true;
            st.owes_first_answer = req.initial_resource_versions.is_empty();
            st.known = Known::Map(req.initial_resource_versions.into_iter().collect());
            if req.resource_names_subscribe.is_empty()
                && req.resource_names_unsubscribe.is_empty()
                && ty.is_full_state()
            {
                st.wildcard = true;
                st.legacy = true;
            }
        }
        if req.resource_names_subscribe.iter().any(|n| n == "*") {
            st.wildcard = true;
            st.legacy = false;
        } else if st.legacy && !req.resource_names_subscribe.is_empty() {
            st.wildcard = false;
            st.legacy = false;
        }
        for name in req.resource_names_subscribe.into_iter().filter(|n| n != "*") {
            // A reconnecting proxy's first request names what it already holds (with versions in
            // `initial_resource_versions`): only what differs is sent. Later subscriptions are always answered.
            if !(first && st.known.contains_key(&name)) {
                st.resend.insert(name.clone());
            }
            st.names.insert(name);
        }
        for name in req.resource_names_unsubscribe {
            if name == "*" {
                st.wildcard = false;
                st.legacy = false;
                continue;
            }
            st.names.remove(&name);
            st.known.remove(&name);
            st.resend.remove(&name);
            if st.wildcard {
                // Still covered by the wildcard: the proxy dropped it, so send it again (or its removal).
                st.resend.insert(name);
            }
        }
        if !st.wildcard {
            // Whatever only the wildcard covered is no longer the proxy's concern.
            let names = &st.names;
            st.known.retain(|n| names.contains(n));
        }
    }

    fn flush(&mut self, events: &mut Vec<Event>) -> Vec<(XdsType, DeltaDiscoveryResponse)> {
        let progress = Types {
            types: &self.types,
            hold_removals: self.plan.holds_removals(),
        };
        events.extend(self.plan.advance(&progress).into_iter().map(Event::Plan));
        XdsType::ALL
            .into_iter()
            .filter_map(|ty| self.respond(ty, events).map(|response| (ty, response)))
            .collect()
    }
}

impl Delta {
    fn respond(&mut self, ty: XdsType, events: &mut Vec<Event>) -> Option<DeltaDiscoveryResponse> {
        let hold_removals = self.plan.holds_removals();
        let st = &mut self.types[ty.index()];
        if !st.subscribed || st.awaiting_ack {
            return None;
        }
        let view = self.plan.view(ty)?;
        let Diff { upserts, removed, held } = st.diff(ty, view, hold_removals);
        let resources: Vec<Resource> = upserts
            .into_iter()
            .map(|(name, entry)| Resource {
                name: name.clone(),
                version: entry.version.clone(),
                resource: Some(entry.resource().clone()),
                ..Default::default()
            })
            .collect();
        st.sent(&resources, &removed, view, held);
        if resources.is_empty() && removed.is_empty() && !st.owes_first_answer {
            return None;
        }
        st.owes_first_answer = false;
        self.nonces += 1;
        let nonce = self.nonces.to_string();
        st.last_nonce = Some(nonce.clone());
        st.awaiting_ack = true;
        st.sent_version = Some(view.version.clone());
        events.push(Event::Sent {
            ty,
            version: view.version.clone(),
            resources: resources.len(),
            removed: removed.len(),
        });
        Some(DeltaDiscoveryResponse {
            system_version_info: view.version.clone(),
            resources,
            type_url: ty.type_url().to_string(),
            removed_resources: removed,
            nonce,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests;
