//! What the engine keeps of a route between updates.

use std::sync::Arc;

use crate::gateway::routes;
use crate::gateway::spec::{self, RouteSpec};
use crate::model::ObjectKey;

/// What the engine keeps of a route between updates: where it stands, its generation and the Gateways
/// it names. The spec itself (a few KiB a route, most of it rules) is read again from the model when
/// the route attaches and dropped after, since the result it gave is what later updates consult.
#[derive(Debug)]
pub(super) struct Known {
    pub order: Arc<spec::RouteOrder>,
    pub generation: i64,
    pub gateways: Box<[ObjectKey]>,
}

impl Known {
    pub fn of(spec: &RouteSpec) -> Known {
        Known {
            order: spec.order.clone(),
            generation: spec.generation(),
            gateways: routes::named_gateways(spec).into_iter().collect(),
        }
    }
}
