//! What pier serves, as data: each Envoy resource packed once with its content version ([`Res`]), a
//! Gateway's resources by type and name ([`GatewayOut`]), route configurations assembled from their
//! virtual hosts' encodings ([`VhostOut`]), and every object's status in output order ([`StatusSet`]).
//!
//! It sits between the translator and everything that consumes its output: `translate::engine` builds
//! these values, and the ADS server (`xds`), the admin API, the integrity check and the status writer
//! read them without knowing the translator exists (`tests/it/layering/` holds `xds` to that). Values
//! only: persistent maps shared by the engine and every snapshot, no I/O, no translation logic.

mod res;
mod vhost;

use std::sync::Arc;

use crate::gateway::status::{ObjectStatus, StatusMeta};

pub use res::{Facts, GatewayOut, Guard, Res, decode, pack, put, share};
pub use vhost::{Domain, RouteOut, VhostMap, VhostOut, vhost_fingerprint};

/// A status's place in the output: [`ObjectStatus::sort_key`].
pub type StatusKey = (&'static str, &'static str, StatusMeta);

/// Every status in output order, as a persistent map: handing the whole set to the admin view and the
/// status writer after each update costs nothing, whatever its size.
pub type StatusSet = imbl::OrdMap<StatusKey, Arc<ObjectStatus>>;
