//! The engine of a one-shot translation (`pier translate`): it records no dependency index, which only
//! a later update reads; updated all the same, it rebuilds from empty, so it is never wrong, only
//! slower.

use std::collections::BTreeSet;

use super::deps::DepIndex;
use super::{Engine, Update};
use crate::model::{Model, ObjectKey};
use crate::options::Options;

impl Engine {
    /// An engine that has translated `model` and records no dependency index.
    pub fn once(model: Model, opts: Options) -> Engine {
        let mut engine = Engine::new(opts);
        engine.deps = DepIndex::off();
        // From the empty model, nothing recorded is needed: every unit is done anew.
        engine.apply(model);
        engine
    }

    /// A one-shot engine asked to update: a rebuild, reporting every Gateway it had or has.
    pub(super) fn rebuild(&mut self, model: Model) -> Update {
        let had: Vec<ObjectKey> = self.gateways.keys().cloned().collect();
        *self = Engine::with(model, self.opts.clone());
        let mut gateways: BTreeSet<ObjectKey> = self.gateways.keys().cloned().collect();
        gateways.extend(had);
        Update {
            gateways,
            statuses: true,
        }
    }
}
