//! GatewayClasses: which are pier's (by `spec.controllerName`) and their status.

use std::collections::BTreeSet;

use super::conditions::{ClassReason, ClassType, Condition};
use super::status::{ObjectStatus, StatusBody};
use crate::model::Model;
use crate::options::Options;

/// Names of the GatewayClasses pier accepts, and their statuses. Classes of other controllers get
/// no status from pier.
pub fn process(model: &Model, opts: &Options) -> (BTreeSet<String>, Vec<ObjectStatus>) {
    let mut ours = BTreeSet::new();
    let mut statuses = Vec::new();
    for (key, class) in &model.gateway_classes {
        if class.spec.controller_name != opts.controller_name {
            continue;
        }
        let g = class.metadata.generation.unwrap_or(0);
        let accepted = class.spec.parameters_ref.is_none();
        let supported_features = if accepted {
            super::features::supported()
        } else {
            Vec::new()
        };
        let accepted = if let Some(p) = &class.spec.parameters_ref {
            Condition::fail(
                ClassType::Accepted,
                ClassReason::InvalidParameters,
                format!(
                    "spec.parametersRef ({} {}): pier takes no GatewayClass parameters",
                    p.kind, p.name
                ),
                g,
            )
        } else {
            ours.insert(key.name.to_string());
            Condition::ok(
                ClassType::Accepted,
                ClassReason::Accepted,
                "GatewayClass accepted by pier",
                g,
            )
        };
        statuses.push(ObjectStatus::new(
            crate::api::consts::GATEWAY_V1,
            crate::api::consts::KIND_GATEWAY_CLASS,
            key,
            StatusBody::GatewayClass {
                conditions: vec![accepted],
                supported_features,
            },
        ));
    }
    (ours, statuses)
}
