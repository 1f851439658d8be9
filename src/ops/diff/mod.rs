//! `pier diff OLD NEW`: what a change to the manifests does to each Gateway's Envoy configuration
//! (resources added, removed and changed, field by field) and to every status (conditions gained,
//! lost, changed), with [`flags`] for what review should catch. Both sides are translated with the
//! same options, so the difference is the change's alone. Exit code 0: no change; 1: changes; 2: error
//! (in `main`) — a CI gate for a GitOps repository.

pub mod fields;
pub mod flags;
pub mod input;
mod render;
pub mod status;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

pub use flags::{Flag, FlagKind};
pub use render::text;
use status::Cond;

use crate::options::Options;

/// The resource types, each with the field that names a resource.
const TYPES: [(&str, &str); 5] = [
    ("clusters", "name"),
    ("endpoints", "cluster_name"),
    ("listeners", "name"),
    ("routes", "name"),
    ("secrets", "name"),
];

/// One side of the comparison: each Gateway's resources and every status, as the admin API would serve
/// them (private keys redacted, also where a status message quotes one).
#[derive(Debug, Clone)]
pub struct Side {
    pub gateways: BTreeMap<String, Value>,
    pub statuses: Value,
}

/// A side that does not read or translate, named by its label (`OLD`, `NEW`) and path.
#[derive(Debug, thiserror::Error)]
#[error("{label} ({}): {error}", path.display())]
pub struct SideError {
    pub label: String,
    pub path: std::path::PathBuf,
    pub error: Box<crate::ops::explain::ExplainError>,
}

impl Side {
    /// Reads and translates `path` as `pier explain` does offline (the same documents, the same
    /// redaction); what the reader skipped or overrode is logged under `label`.
    pub fn read(path: &Path, max_file_bytes: usize, opts: &Options, label: &str) -> Result<Side, SideError> {
        let inputs =
            crate::ops::explain::sources::offline(&[path.to_path_buf()], max_file_bytes, opts).map_err(|error| {
                SideError {
                    label: label.to_string(),
                    path: path.to_path_buf(),
                    error: Box::new(error),
                }
            })?;
        for note in &inputs.notes {
            tracing::warn!("{label}: {note}");
        }
        Ok(Side {
            gateways: inputs.gateways,
            statuses: Value::Array(inputs.objects),
        })
    }
}

/// What changed, for people ([`text`]) and machines (JSON).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub gateways: Vec<GatewayChange>,
    pub statuses: Vec<StatusChange>,
    pub flags: Vec<Flag>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.gateways.is_empty() && self.statuses.is_empty()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GatewayChange {
    pub gateway: String,
    /// `added` / `removed` (the whole Gateway), or `changed`.
    pub change: &'static str,
    pub resources: Vec<ResourceChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResourceChange {
    /// `clusters`, `endpoints`, `listeners`, `routes`, `secrets`.
    #[serde(rename = "type")]
    pub ty: &'static str,
    pub name: String,
    pub change: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<fields::FieldChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusChange {
    pub object: String,
    pub scope: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Cond>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Cond>,
}

pub fn diff(old: &Side, new: &Side) -> Report {
    let mut report = Report::default();
    let names: BTreeSet<&String> = old.gateways.keys().chain(new.gateways.keys()).collect();
    for gw in names {
        let (a, b) = (old.gateways.get(gw), new.gateways.get(gw));
        let empty = Value::Null;
        let resources = resources(a.unwrap_or(&empty), b.unwrap_or(&empty));
        let change = match (a, b) {
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            _ if resources.is_empty() => continue,
            _ => "changed",
        };
        if let (Some(a), Some(b)) = (a, b) {
            flags::tls(gw, a, b, &mut report.flags);
            flags::backend_errors(gw, a, b, &mut report.flags);
        }
        report.gateways.push(GatewayChange {
            gateway: gw.clone(),
            change,
            resources,
        });
    }
    let (sa, sb) = (status::flatten(&old.statuses), status::flatten(&new.statuses));
    flags::guardrails(&sa, &sb, &mut report.flags);
    report.statuses = statuses(&sa, &sb);
    report.flags.sort();
    report
}

fn resources(a: &Value, b: &Value) -> Vec<ResourceChange> {
    let mut out = Vec::new();
    for (ty, key) in TYPES {
        let (old, new) = (flags::by_name(a, ty, key), flags::by_name(b, ty, key));
        let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for name in names {
            let (change, fields) = match (old.get(name), new.get(name)) {
                (Some(x), Some(y)) if x == y => continue,
                (Some(x), Some(y)) => ("changed", fields::changes(x, y)),
                (None, _) => ("added", Vec::new()),
                (_, None) => ("removed", Vec::new()),
            };
            out.push(ResourceChange {
                ty,
                name: name.clone(),
                change,
                fields,
            });
        }
    }
    out
}

fn statuses(
    old: &BTreeMap<String, status::Conditions>,
    new: &BTreeMap<String, status::Conditions>,
) -> Vec<StatusChange> {
    let empty = status::Conditions::new();
    let objects: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Vec::new();
    for object in objects {
        let (a, b) = (old.get(object).unwrap_or(&empty), new.get(object).unwrap_or(&empty));
        let keys: BTreeSet<&(String, String)> = a.keys().chain(b.keys()).collect();
        for key in keys {
            let (x, y) = (a.get(key), b.get(key));
            if x != y {
                out.push(StatusChange {
                    object: object.clone(),
                    scope: key.0.clone(),
                    ty: key.1.clone(),
                    old: x.cloned(),
                    new: y.cloned(),
                });
            }
        }
    }
    out
}
