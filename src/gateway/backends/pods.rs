//! `type: EndpointSelector` with `matchLabels`: the Pods of the Backend's namespace whose labels include
//! every pair, served on the Backend's `port.number` (upstream: "their IPs are the endpoints"). Only
//! Pods that are `Ready` and not being deleted count — what an EndpointSlice controller would publish
//! as ready. Every IP goes through the address policy with the in-cluster guardrails, as EndpointSlice
//! addresses do; a refused one is left out with a note.
//!
//! pier reads Pods directly rather than generating a headless Service (which upstream allows): it writes
//! no objects but status, and needs no create rights on Services.

use std::collections::{BTreeMap, BTreeSet};

use super::Ctx;
use crate::gateway::policy;
use crate::ir;
use crate::model::{ObjectKey, pod};

/// The upstream bounds on `matchLabels` (MinProperties 1, MaxProperties 64).
pub const MAX_LABELS: usize = 64;

/// Endpoints of the Pods in `backend`'s namespace that `labels` selects; what was skipped into `notes`.
pub fn selected(
    ctx: Ctx<'_>,
    backend: &ObjectKey,
    labels: &BTreeMap<String, String>,
    port: u16,
    notes: &mut Vec<String>,
) -> Vec<ir::Endpoint> {
    let guard = super::endpoints::in_cluster_guard(ctx);
    let mut matched = 0usize;
    let mut seen = BTreeSet::new();
    for (key, p) in ctx.model.pods.in_namespace(&backend.namespace) {
        let own = p.metadata.labels.as_ref();
        if !labels.iter().all(|(k, v)| own.and_then(|l| l.get(k)) == Some(v)) {
            continue;
        }
        matched += 1;
        if !pod::serving(p) {
            continue;
        }
        for addr in pod::ips(p) {
            let Some(ip) = policy::parse_ip(addr) else {
                notes.push(format!("Pod {key}: {addr:?} is not an IP address"));
                continue;
            };
            if let Err(refusal) = policy::check_ip(ip, &guard) {
                notes.push(format!("Pod {key}: {refusal}"));
                continue;
            }
            seen.insert(ir::Endpoint {
                address: ir::EndpointAddress::Ip(ip, port),
                priority: 0,
                hostname: None,
                zone: None,
            });
        }
    }
    if matched == 0 {
        notes.push(format!(
            "no Pod in namespace {} matches spec.endpointSelector.matchLabels",
            backend.namespace
        ));
    }
    seen.into_iter().collect()
}
