//! A GRPCRoute with what its standard-channel type lacks: each rule's `sessionPersistence` (GEP-1619),
//! which that type would drop without a word. The crate's spec is kept whole (with the metadata pier
//! reads, `stored`) and the field travels beside it, one object in the model (one map entry, one
//! `Arc`), as `validation::BackendTlsPolicy` does for BackendTLSPolicy; it dereferences to the
//! stored route, so code that reads metadata or the spec reads it as before.

use gateway_api::apis::standard::grpcroutes::{GrpcRoute as StandardRoute, GrpcRouteSpec};

use super::session::SessionPersistence;
use super::stored::Stored;

#[derive(Clone, Debug, PartialEq)]
pub struct GrpcRoute {
    pub route: Stored<GrpcRouteSpec>,
    /// `spec.rules[i].sessionPersistence`, by rule index (shorter than the rules when the last have none).
    pub sessions: Vec<Option<SessionPersistence>>,
}

impl std::ops::Deref for GrpcRoute {
    type Target = Stored<GrpcRouteSpec>;

    fn deref(&self) -> &Stored<GrpcRouteSpec> {
        &self.route
    }
}

impl From<StandardRoute> for GrpcRoute {
    fn from(route: StandardRoute) -> Self {
        GrpcRoute {
            route: Stored::new(route.metadata, route.spec),
            sessions: Vec::new(),
        }
    }
}
