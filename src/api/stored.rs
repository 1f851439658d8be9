//! Objects as the model keeps them: the spec whole, and of the metadata only what the translator
//! reads.
//!
//! `k8s-openapi`'s `ObjectMeta` holds every optional field inline: 344 bytes an object before any
//! string, three quarters of an HTTPRoute as the crate types it. The model holds every route, Backend
//! and Service for as long as pier runs, so at 50,000 routes that is over 40 MiB of empty fields
//! (Massif of `pier serve`, `docs/performance.md`). The parser still reads and validates the whole
//! typed object; [`Stored::new`] keeps its spec and a [`Meta`] of 56 bytes, whose name and namespace
//! are the interned names the object's key already holds.
//!
//! Only kinds the model holds by the thousand are kept this way: HTTPRoutes, the three Backend kinds,
//! Services and BackendTLSPolicies (`model::Model`). The field names are the crate's, so code reads
//! `route.metadata.generation` and `route.spec` as before. Two objects that differ only in what is
//! dropped (labels, annotations, a new `resourceVersion` from the API server) are equal here, so
//! the model does not count them as a change: nothing the translator reads moved.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Serialize;

use super::name::Name;

/// What pier reads of an object's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub name: Option<Name>,
    pub namespace: Option<Name>,
    /// For `observedGeneration` in every status pier writes.
    pub generation: Option<i64>,
    /// For Gateway API's oldest-first precedence.
    pub creation_timestamp: Option<Time>,
}

impl From<&ObjectMeta> for Meta {
    fn from(m: &ObjectMeta) -> Meta {
        Meta {
            name: m.name.as_deref().map(Name::new),
            namespace: m.namespace.as_deref().map(Name::new),
            generation: m.generation,
            creation_timestamp: m.creation_timestamp.clone(),
        }
    }
}

/// An object's spec with the [`Meta`] pier reads; its status (pier writes status, never reads it) is
/// dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stored<S> {
    pub metadata: Meta,
    pub spec: S,
}

impl<S> Stored<S> {
    pub fn new(metadata: ObjectMeta, spec: S) -> Stored<S> {
        Stored {
            metadata: Meta::from(&metadata),
            spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_api::apis::standard::httproutes::{HttpRoute, HttpRouteSpec};

    #[test]
    fn a_stored_route_is_a_fraction_of_the_typed_one() {
        // The reason this type exists: if `Meta` grew back towards `ObjectMeta`, the model would too.
        assert!(size_of::<Meta>() <= 56, "Meta is {} bytes", size_of::<Meta>());
        assert!(size_of::<Stored<HttpRouteSpec>>() * 3 < size_of::<HttpRoute>());
    }

    #[test]
    fn keeps_what_the_translator_reads() {
        let meta = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("apps".into()),
            generation: Some(7),
            creation_timestamp: Some(Time("2026-01-02T03:04:05Z".parse().unwrap())),
            labels: Some([("a".to_string(), "b".to_string())].into()),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        };
        let stored = Stored::new(meta.clone(), ());
        assert_eq!(stored.metadata.name.as_deref(), Some("web"));
        assert_eq!(stored.metadata.namespace.as_deref(), Some("apps"));
        assert_eq!(stored.metadata.generation, Some(7));
        assert_eq!(stored.metadata.creation_timestamp, meta.creation_timestamp);
        assert_eq!(Meta::from(&ObjectMeta::default()), Meta::default());
    }
}
