//! What pier knows about each name it resolves, over time: when to look it up next (the answer's TTL
//! clamped to the operator's `--dns-min-ttl`..`--dns-max-ttl`), and what to serve after a failed lookup
//! (the last answer, until `--dns-stale-for` after the first failure; then nothing).
//!
//! The clock is a parameter (`now`) of every call, so the rules are tested without waiting; the stage
//! passes tokio's clock. The result is the model's [`Resolution`] per name — no time in it: the stale
//! window's end is a wake-up for the stage ([`Cache::next_wakeup`]), after which the name reads `Failed`.
//! An answer, whatever it holds, replaces the previous one at once: a name re-pointed at a denied
//! address (DNS rebinding) is judged on its new answer at its next lookup, never averaged with the old.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Outcome;
use crate::model::Resolution;
use crate::options::HostnameResolution;

/// The operator's bounds (`options::HostnameResolution` without the mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub min_ttl: Duration,
    pub max_ttl: Duration,
    pub stale_for: Duration,
}

impl From<&HostnameResolution> for Bounds {
    fn from(r: &HostnameResolution) -> Self {
        Bounds {
            min_ttl: r.min_ttl,
            max_ttl: r.max_ttl,
            stale_for: r.stale_for,
        }
    }
}

impl Bounds {
    /// When to look a name up again after an answer valid for `ttl`.
    pub fn refresh_after(&self, ttl: Duration) -> Duration {
        ttl.clamp(self.min_ttl, self.max_ttl.max(self.min_ttl))
    }
}

#[derive(Debug)]
struct Entry {
    /// The last answer's addresses; `None` before the first answer or once the stale window ended.
    answer: Option<Vec<IpAddr>>,
    /// Since when lookups fail (reset by an answer), and the latest failure.
    failing: Option<(Instant, String)>,
    next_lookup: Instant,
    /// What the model holds for the name, shared while it stays the same (the engine compares by
    /// identity, so an unchanged name costs nothing downstream).
    current: Option<Arc<Resolution>>,
}

/// Every name pier resolves, by name (lower case, no trailing dot).
#[derive(Debug)]
pub struct Cache {
    bounds: Bounds,
    entries: BTreeMap<String, Entry>,
}

impl Cache {
    pub fn new(bounds: Bounds) -> Cache {
        Cache {
            bounds,
            entries: BTreeMap::new(),
        }
    }

    /// Keeps exactly `names`: new ones are due at once, ones no Backend uses any more are forgotten.
    pub fn track(&mut self, names: &BTreeSet<String>, now: Instant) {
        self.entries.retain(|name, _| names.contains(name));
        for name in names {
            self.entries.entry(name.clone()).or_insert_with(|| Entry {
                answer: None,
                failing: None,
                next_lookup: now,
                current: None,
            });
        }
    }

    /// The names whose next lookup is due.
    pub fn due(&self, now: Instant) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(_, e)| e.next_lookup <= now)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Records a lookup of `name` that ended at `now`.
    pub fn record(&mut self, name: &str, outcome: Outcome, now: Instant) {
        let bounds = self.bounds;
        let Some(e) = self.entries.get_mut(name) else {
            return; // no longer used while it was looked up
        };
        match outcome {
            Outcome::Answer { addresses, ttl } => {
                e.answer = Some(addresses);
                e.failing = None;
                e.next_lookup = now + bounds.refresh_after(ttl);
            }
            Outcome::Failed(error) => {
                let since = e.failing.take().map_or(now, |(since, _)| since);
                e.failing = Some((since, error));
                // A failing name is asked again at the shortest interval the operator allows.
                e.next_lookup = now + bounds.min_ttl;
            }
        }
    }

    /// When something changes without a lookup ending: a lookup falls due or a stale window ends.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let stale_ends = self.entries.values().filter_map(|e| match (&e.answer, &e.failing) {
            (Some(_), Some((since, _))) => Some(*since + self.bounds.stale_for),
            _ => None,
        });
        self.entries.values().map(|e| e.next_lookup).chain(stale_ends).min()
    }

    /// Every name's resolution at `now` (a name never answered nor failed has none: it is served
    /// nothing), and the names whose resolution differs from the previous call's.
    pub fn resolutions(&mut self, now: Instant) -> (Vec<(String, Arc<Resolution>)>, BTreeSet<String>) {
        let mut changed = BTreeSet::new();
        let mut out = Vec::new();
        for (name, e) in &mut self.entries {
            let next = state(e, now, self.bounds.stale_for);
            if next.as_ref() != e.current.as_deref() {
                e.current = next.map(Arc::new);
                changed.insert(name.clone());
            }
            if let Some(r) = &e.current {
                out.push((name.clone(), r.clone()));
            }
        }
        (out, changed)
    }
}

/// What the model should hold for an entry at `now`; drops the last answer once its stale window ended.
fn state(e: &mut Entry, now: Instant, stale_for: Duration) -> Option<Resolution> {
    match (&e.answer, &e.failing) {
        (None, None) => None,
        (Some(addresses), None) => Some(Resolution::Answered {
            addresses: addresses.clone(),
        }),
        (Some(addresses), Some((since, error))) if now < *since + stale_for => Some(Resolution::Stale {
            addresses: addresses.clone(),
            error: error.clone(),
        }),
        (_, Some((_, error))) => {
            e.answer = None;
            Some(Resolution::Failed { error: error.clone() })
        }
    }
}

#[cfg(test)]
mod tests;
