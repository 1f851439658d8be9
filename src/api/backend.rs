//! The standard-group `Backend` (`gateway.networking.k8s.io/v1alpha1`). Two shapes live under this one
//! kind: the GEP-4488 shape (same spec as `XBackend`) and the earlier draft (`spec.destination`). The
//! parser picks the shape by the presence of `spec.destination` and then parses that shape strictly,
//! so field errors name the field of the shape the user actually wrote.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use super::draft::DraftBackendSpec;
use super::xbackend::{BackendStatus, XBackendSpec};

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Backend {
    pub metadata: ObjectMeta,
    pub spec: BackendShape,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<BackendStatus>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum BackendShape {
    Gep(XBackendSpec),
    /// Boxed: the draft shape is nearly four times the GEP-4488 one, which most Backends are.
    Draft(Box<DraftBackendSpec>),
}

impl Backend {
    pub const API_VERSION: &'static str = "gateway.networking.k8s.io/v1alpha1";
    pub const KIND: &'static str = "Backend";
}
