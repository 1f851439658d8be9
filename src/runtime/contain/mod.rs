//! NACK containment: when a proxy rejects what pier published, pier finds the object responsible and
//! quarantines it, so one tenant's change that Envoy refuses — and that pier's own checks
//! (`gateway::re2`, `gateway::rules::checks`, `envoy::check`) did not catch — never holds back
//! everyone else's.
//!
//! How. pier keeps `good`, the last model every connected proxy applied. When a publish is rejected,
//! the suspects are the objects that differ between `good` and what was published. pier bisects them
//! by publishing trials — `good` plus half of the suspects, in their newest versions — and reading the
//! proxies' verdict on each (`xds::clients::Clients::verdict`): a rejected trial holds the culprit; an
//! applied one does not, and becomes the new `good`. The last suspect standing is quarantined: the model
//! served keeps its last applied version (or leaves it out if it is new), its status carries Envoy's
//! message (`runtime::contain_status`), and everything else is published. A quarantined object is tried
//! again as soon as it changes.
//!
//! Trials only combine versions between `good` and the newest model, so a proxy never sees anything
//! older than what it ran, and half of each trial is what it already applied. Statuses are not written
//! while trials run (they would flap). A bisection costs about log2(suspects) round trips to the fleet.
//!
//! Limits, on purpose. Only a connected proxy can judge: with none, nothing is quarantined. A rejection
//! that no change explains (the proxy's own Envoy version, say) quarantines nothing and is shown as is.
//! A culprit made of two objects together is found as the last of them. Bisections are bounded per
//! newest model ([`MAX_ROUNDS`]), so a proxy that rejects at random cannot make pier quarantine
//! everything; the pipeline bounds each trial's wait (`--nack-probe-timeout-ms`).
//!
//! This file is the decision logic only, with no clock and no I/O; `runtime::pipeline` feeds it the
//! newest model and the proxies' verdicts and publishes what it returns.

use std::collections::BTreeMap;

use tracing::{info, warn};

use crate::model::Model;
use crate::model::diff::ObjectId;

/// Bisections (each ending in one quarantine or none) per newest model.
pub const MAX_ROUNDS: u32 = 16;

/// What a proxy said when it rejected a publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub gateway: String,
    pub type_url: String,
    pub message: String,
}

/// An object held back because a proxy rejected the configuration built from it.
#[derive(Debug, Clone)]
pub struct Quarantined {
    pub id: ObjectId,
    /// A model holding the rejected version (the newest model when it was quarantined).
    pub bad: Model,
    pub rejection: Rejection,
    /// Whether an earlier version of it is still served.
    pub previous_served: bool,
}

/// A trial in progress.
#[derive(Debug)]
struct Trial {
    /// The culprit is one of these.
    suspects: Vec<ObjectId>,
    /// The suspects the published trial has in their newest version (the others are at `good`'s).
    applied: Vec<ObjectId>,
    rejection: Rejection,
}

#[derive(Debug, Default)]
pub struct Containment {
    good: Model,
    target: Model,
    quarantine: BTreeMap<ObjectId, Quarantined>,
    trial: Option<Trial>,
    rounds: u32,
    /// Bumped whenever the quarantine gains or loses an object, so statuses are rewritten then.
    revision: u64,
    /// The newest rejection that no change explained, until the next newest model.
    unexplained: Option<Rejection>,
}

impl Containment {
    pub fn new() -> Containment {
        Containment::default()
    }

    /// The source's newest model: ends any trial, tries again every quarantined object that changed,
    /// and returns the model to publish.
    pub fn set_target(&mut self, model: Model) -> Model {
        let before = self.quarantine.len();
        self.quarantine.retain(|id, q| {
            let same = model.same_object(&q.bad, id);
            if !same {
                info!(object = %describe(id), "a quarantined object changed; trying it again");
            }
            same
        });
        if self.quarantine.len() != before {
            self.revision += 1;
        }
        self.target = model;
        self.trial = None;
        self.rounds = 0;
        self.unexplained = None;
        self.effective()
    }

    /// The newest model with every quarantined object at its last applied version (or left out).
    pub fn effective(&self) -> Model {
        let mut model = self.target.clone();
        for id in self.quarantine.keys() {
            model.take_object(&self.good, id);
        }
        model
    }

    /// Every proxy applied `published`: it becomes the last good model. Returns the next trial, or
    /// the model to publish when a bisection ends.
    pub fn applied(&mut self, published: &Model) -> Option<Model> {
        self.good = published.clone();
        let trial = self.trial.take()?;
        let suspects: Vec<_> = trial
            .suspects
            .into_iter()
            .filter(|id| !trial.applied.contains(id))
            .collect();
        if suspects.is_empty() {
            warn!("the rejection did not recur while bisecting; publishing the newest configuration");
            return Some(self.effective());
        }
        Some(self.narrow(suspects, trial.rejection))
    }

    /// A proxy rejected `published`. Returns the next model to publish, if any.
    pub fn rejected(&mut self, published: &Model, rejection: Rejection) -> Option<Model> {
        let suspects = match self.trial.take() {
            Some(trial) => trial.applied,
            None if self.rounds >= MAX_ROUNDS => {
                warn!(
                    rounds = MAX_ROUNDS,
                    "proxies keep rejecting; no more bisections until the configuration changes"
                );
                self.unexplained = Some(rejection);
                return None;
            }
            None => {
                self.rounds += 1;
                self.good.changed_objects(published)
            }
        };
        if suspects.is_empty() {
            warn!(gateway = %rejection.gateway, type_url = %rejection.type_url, "a proxy rejected configuration that no change explains; nothing to quarantine");
            self.unexplained = Some(rejection);
            return None;
        }
        Some(self.narrow(suspects, rejection))
    }

    /// Nobody can judge the trial (no proxy, or no answer in time): publish the newest model.
    pub fn abandon(&mut self) -> Option<Model> {
        self.trial.take().map(|_| {
            warn!("bisection abandoned: no verdict from the proxies; publishing the newest configuration");
            self.effective()
        })
    }

    /// Whether a trial (not the newest model) is what is published.
    pub fn in_trial(&self) -> bool {
        self.trial.is_some()
    }

    pub fn quarantined(&self) -> impl Iterator<Item = &Quarantined> {
        self.quarantine.values()
    }

    /// Changes whenever the set of quarantined objects does.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    pub fn unexplained(&self) -> Option<&Rejection> {
        self.unexplained.as_ref()
    }

    /// One suspect left: quarantine it and publish the rest. More: try the first half of them.
    fn narrow(&mut self, suspects: Vec<ObjectId>, rejection: Rejection) -> Model {
        if let [culprit] = suspects.as_slice() {
            self.quarantine_one(culprit.clone(), rejection);
            return self.effective();
        }
        let applied = suspects[..suspects.len() / 2].to_vec();
        info!(
            suspects = suspects.len(),
            trying = applied.len(),
            "bisecting a rejected configuration"
        );
        let newest = self.effective();
        let mut model = self.good.clone();
        for id in &applied {
            model.take_object(&newest, id);
        }
        self.trial = Some(Trial {
            suspects,
            applied,
            rejection,
        });
        model
    }

    fn quarantine_one(&mut self, id: ObjectId, rejection: Rejection) {
        let previous_served = !self.good.same_object(&Model::default(), &id);
        warn!(
            object = %describe(&id),
            gateway = %rejection.gateway,
            type_url = %rejection.type_url,
            error = %rejection.message,
            previous_served,
            "quarantined: a proxy rejects the configuration built from this object"
        );
        self.revision += 1;
        self.quarantine.insert(
            id.clone(),
            Quarantined {
                id,
                bad: self.target.clone(),
                rejection,
                previous_served,
            },
        );
    }
}

/// `HttpRoute ns/name`, for logs.
pub fn describe((kind, key): &ObjectId) -> String {
    format!("{kind:?} {key}")
}

#[cfg(test)]
mod tests;
