//! Building a [`Model`] from parsed objects: each object's identity ([`Object::kind_name`],
//! [`Object::key`]), placement into the right map, and what happens to duplicates.
//!
//! An object defined twice takes the later definition (reading order: files in byte-wise path order,
//! documents in file order), as `kubectl apply -f DIR` would leave it, with a warning naming both
//! places. Refusing the whole input, as pier once did, took a directory down for one stray copy, and
//! dropping the object would lose a BackendTLSPolicy or a Secret and fail open or break a listener.
//!
//! `Model` stays a plain snapshot with no memory of where objects came from; [`ModelBuilder`] keeps the
//! origins while loading so a duplicate names both places. Parsing is [`yaml`](super::yaml)'s job, I/O the
//! source's; nothing here does either.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::yaml::DocRef;
use super::{Kind, Model, ModelKind, Object, ObjectKey, Objects, Stored};

/// Namespace a namespaced object lands in when its metadata names none (kubectl's default).
pub const DEFAULT_NAMESPACE: &str = "default";

impl Object {
    /// Unique per [`Model`] map: Envoy Gateway's `Backend` is group-qualified so it never collides with
    /// the standard-group `Backend` of the same name.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Object::GatewayClass(_) => "GatewayClass",
            Object::Gateway(_) => "Gateway",
            Object::HttpRoute(..) => "HTTPRoute",
            Object::GrpcRoute(_) => "GRPCRoute",
            Object::ReferenceGrant(_) => "ReferenceGrant",
            Object::BackendTlsPolicy(_) => "BackendTLSPolicy",
            Object::XBackend(_) => "XBackend",
            Object::Backend(_) => "Backend",
            Object::EgBackend(_) => "Backend.gateway.envoyproxy.io",
            Object::Service(_) => "Service",
            Object::EndpointSlice(_) => "EndpointSlice",
            Object::Pod(_) => "Pod",
            Object::Secret(_) => "Secret",
            Object::ConfigMap(_) => "ConfigMap",
            Object::ClusterTrustBundle(_) => "ClusterTrustBundle",
            Object::Namespace(_) => "Namespace",
        }
    }

    /// The map this object goes into.
    pub fn kind(&self) -> Kind {
        match self {
            Object::GatewayClass(_) => Kind::GatewayClass,
            Object::Gateway(_) => Kind::Gateway,
            Object::HttpRoute(..) => Kind::HttpRoute,
            Object::GrpcRoute(_) => Kind::GrpcRoute,
            Object::ReferenceGrant(_) => Kind::ReferenceGrant,
            Object::BackendTlsPolicy(_) => Kind::BackendTlsPolicy,
            Object::XBackend(_) => Kind::XBackend,
            Object::Backend(_) => Kind::Backend,
            Object::EgBackend(_) => Kind::EgBackend,
            Object::Service(_) => Kind::Service,
            Object::EndpointSlice(_) => Kind::EndpointSlice,
            Object::Pod(_) => Kind::Pod,
            Object::Secret(_) => Kind::Secret,
            Object::ConfigMap(_) => Kind::ConfigMap,
            Object::ClusterTrustBundle(_) => Kind::ClusterTrustBundle,
            Object::Namespace(_) => Kind::Namespace,
        }
    }

    pub fn is_namespaced(&self) -> bool {
        !matches!(
            self,
            Object::GatewayClass(_) | Object::ClusterTrustBundle(_) | Object::Namespace(_)
        )
    }

    /// `metadata.namespace` and `metadata.name`.
    pub fn namespace_and_name(&self) -> (Option<&str>, Option<&str>) {
        let meta: &ObjectMeta = match self {
            Object::GatewayClass(o) => &o.metadata,
            Object::Gateway(o) => &o.metadata,
            Object::HttpRoute(o, _) => &o.metadata,
            Object::ReferenceGrant(o) => &o.metadata,
            Object::GrpcRoute(o) => {
                let meta = &o.metadata;
                return (meta.namespace.as_deref(), meta.name.as_deref());
            }
            Object::BackendTlsPolicy(o) => {
                let meta = &o.policy.metadata;
                return (meta.namespace.as_deref(), meta.name.as_deref());
            }
            Object::XBackend(o) => &o.metadata,
            Object::Backend(o) => &o.metadata,
            Object::EgBackend(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Secret(o) => &o.metadata,
            Object::ConfigMap(o) => &o.metadata,
            Object::ClusterTrustBundle(o) => &o.metadata,
            Object::Namespace(o) => &o.metadata,
        };
        (meta.namespace.as_deref(), meta.name.as_deref())
    }

    /// Namespace is empty for cluster-scoped kinds and `default` for a namespaced object built without
    /// one (the parser already fills it in; this keeps hand-built objects consistent).
    pub fn key(&self) -> ObjectKey {
        let (namespace, name) = self.namespace_and_name();
        let name = name.unwrap_or_default();
        if !self.is_namespaced() {
            return ObjectKey::cluster(name);
        }
        match namespace {
            None | Some("") => ObjectKey::new(DEFAULT_NAMESPACE, name),
            Some(ns) => ObjectKey::new(ns, name),
        }
    }
}

impl Model {
    /// Puts `obj` into its kind's map, replacing any object with the same key; true if one was replaced.
    /// For sources that deliver updates (a watch); loading from files goes through [`ModelBuilder`].
    pub fn upsert(&mut self, obj: Object) -> bool {
        fn set<T: ModelKind>(map: &mut Objects<T>, key: ObjectKey, v: T) -> bool {
            map.insert(key, Arc::new(v)).is_some()
        }
        let key = obj.key();
        match obj {
            Object::GatewayClass(o) => set(&mut self.gateway_classes, key, o),
            Object::Gateway(o) => set(&mut self.gateways, key, o),
            Object::HttpRoute(o, extras) => {
                if extras.is_empty() {
                    self.http_route_extras.remove(&key);
                } else {
                    self.http_route_extras.insert(key.clone(), Arc::new(extras));
                }
                set(&mut self.http_routes, key, Stored::new(o.metadata, o.spec))
            }
            Object::GrpcRoute(o) => set(&mut self.grpc_routes, key, o),
            Object::ReferenceGrant(o) => set(&mut self.reference_grants, key, o),
            Object::BackendTlsPolicy(o) => set(&mut self.backend_tls_policies, key, o),
            Object::XBackend(o) => set(&mut self.xbackends, key, Stored::new(o.metadata, o.spec)),
            Object::Backend(o) => set(&mut self.backends, key, Stored::new(o.metadata, o.spec)),
            Object::EgBackend(o) => set(&mut self.eg_backends, key, Stored::new(o.metadata, o.spec)),
            Object::Service(o) => set(&mut self.services, key, Stored::new(o.metadata, o.spec)),
            Object::EndpointSlice(o) => self.insert_slice(key, Arc::new(o)),
            Object::Pod(o) => set(&mut self.pods, key, *o),
            Object::Secret(o) => set(&mut self.secrets, key, o),
            Object::ConfigMap(o) => set(&mut self.config_maps, key, o),
            Object::ClusterTrustBundle(o) => set(&mut self.cluster_trust_bundles, key, o),
            Object::Namespace(o) => set(&mut self.namespaces, key, o),
        }
    }

    /// Like [`upsert`](Self::upsert), but an object equal to the one already there is dropped and the
    /// old `Arc` kept, so re-reading an unchanged object (a file edited elsewhere) is not a change to
    /// anything that compares the model by identity. True if the model changed.
    pub fn put(&mut self, obj: Object) -> bool {
        fn keep<T: ModelKind + PartialEq>(map: &mut Objects<T>, key: ObjectKey, v: T) -> bool {
            if map.peek(&key).is_some_and(|old| **old == v) {
                return false;
            }
            map.insert(key, Arc::new(v));
            true
        }
        let key = obj.key();
        match obj {
            Object::GatewayClass(o) => keep(&mut self.gateway_classes, key, o),
            Object::Gateway(o) => keep(&mut self.gateways, key, o),
            Object::HttpRoute(o, extras) => {
                let extras_changed = if extras.is_empty() {
                    self.http_route_extras.remove(&key).is_some()
                } else {
                    keep(&mut self.http_route_extras, key.clone(), extras)
                };
                keep(&mut self.http_routes, key, Stored::new(o.metadata, o.spec)) | extras_changed
            }
            Object::GrpcRoute(o) => keep(&mut self.grpc_routes, key, o),
            Object::ReferenceGrant(o) => keep(&mut self.reference_grants, key, o),
            Object::BackendTlsPolicy(o) => keep(&mut self.backend_tls_policies, key, o),
            Object::XBackend(o) => keep(&mut self.xbackends, key, Stored::new(o.metadata, o.spec)),
            Object::Backend(o) => keep(&mut self.backends, key, Stored::new(o.metadata, o.spec)),
            Object::EgBackend(o) => keep(&mut self.eg_backends, key, Stored::new(o.metadata, o.spec)),
            Object::Service(o) => keep(&mut self.services, key, Stored::new(o.metadata, o.spec)),
            Object::EndpointSlice(o) => {
                if self.endpoint_slices.peek(&key).is_some_and(|old| **old == o) {
                    return false;
                }
                self.insert_slice(key, Arc::new(o));
                true
            }
            Object::Pod(o) => keep(&mut self.pods, key, *o),
            Object::Secret(o) => keep(&mut self.secrets, key, o),
            Object::ConfigMap(o) => keep(&mut self.config_maps, key, o),
            Object::ClusterTrustBundle(o) => keep(&mut self.cluster_trust_bundles, key, o),
            Object::Namespace(o) => keep(&mut self.namespaces, key, o),
        }
    }

    /// Removes the object of `kind` at `key` (an HTTPRoute with what was kept beside it); true if there
    /// was one.
    pub fn remove(&mut self, kind: Kind, key: &ObjectKey) -> bool {
        match kind {
            Kind::GatewayClass => self.gateway_classes.remove(key).is_some(),
            Kind::Gateway => self.gateways.remove(key).is_some(),
            Kind::HttpRoute | Kind::HttpRouteExtras => {
                self.http_route_extras.remove(key);
                self.http_routes.remove(key).is_some()
            }
            Kind::GrpcRoute => self.grpc_routes.remove(key).is_some(),
            Kind::ReferenceGrant => self.reference_grants.remove(key).is_some(),
            Kind::BackendTlsPolicy => self.backend_tls_policies.remove(key).is_some(),
            Kind::XBackend => self.xbackends.remove(key).is_some(),
            Kind::Backend => self.backends.remove(key).is_some(),
            Kind::EgBackend => self.eg_backends.remove(key).is_some(),
            Kind::Service => self.services.remove(key).is_some(),
            Kind::EndpointSlice => self.remove_slice(key),
            Kind::Pod => self.pods.remove(key).is_some(),
            Kind::Secret => self.secrets.remove(key).is_some(),
            Kind::ConfigMap => self.config_maps.remove(key).is_some(),
            Kind::ClusterTrustBundle => self.cluster_trust_bundles.remove(key).is_some(),
            Kind::Namespace => self.namespaces.remove(key).is_some(),
            Kind::Resolution => self.resolutions.remove(key).is_some(),
        }
    }

    /// Adds every object of `other` (sharing them), replacing objects with the same kind and key.
    pub fn absorb(&mut self, other: &Model) {
        // Names every map: a map added to `Model` fails to compile here until it is absorbed too.
        let Model {
            gateway_classes: _,
            gateways: _,
            http_routes: _,
            http_route_extras: _,
            grpc_routes: _,
            reference_grants: _,
            backend_tls_policies: _,
            xbackends: _,
            backends: _,
            eg_backends: _,
            services: _,
            endpoint_slices: _,
            pods: _,
            secrets: _,
            config_maps: _,
            cluster_trust_bundles: _,
            namespaces: _,
            resolutions: _,
            slices_by_service: _,
            unavailable: _,
        } = other;
        fn extend<T: ModelKind>(dst: &mut Objects<T>, src: &Objects<T>) {
            for (k, v) in src.iter() {
                dst.insert(k.clone(), Arc::clone(v));
            }
        }
        extend(&mut self.gateway_classes, &other.gateway_classes);
        extend(&mut self.gateways, &other.gateways);
        extend(&mut self.http_routes, &other.http_routes);
        extend(&mut self.http_route_extras, &other.http_route_extras);
        extend(&mut self.grpc_routes, &other.grpc_routes);
        extend(&mut self.reference_grants, &other.reference_grants);
        extend(&mut self.backend_tls_policies, &other.backend_tls_policies);
        extend(&mut self.xbackends, &other.xbackends);
        extend(&mut self.backends, &other.backends);
        extend(&mut self.eg_backends, &other.eg_backends);
        extend(&mut self.services, &other.services);
        for (k, v) in other.endpoint_slices.iter() {
            self.insert_slice(k.clone(), Arc::clone(v));
        }
        extend(&mut self.pods, &other.pods);
        extend(&mut self.secrets, &other.secrets);
        extend(&mut self.config_maps, &other.config_maps);
        extend(&mut self.cluster_trust_bundles, &other.cluster_trust_bundles);
        extend(&mut self.namespaces, &other.namespaces);
        extend(&mut self.resolutions, &other.resolutions);
    }
}

/// The same kind, namespace and name defined twice; the later definition (`second`) is in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} {key} is defined twice: {first} and {second}; the later one ({second}) is used, as kubectl apply -f would leave it"
)]
pub struct DuplicateError {
    pub kind: &'static str,
    pub key: ObjectKey,
    pub first: DocRef,
    pub second: DocRef,
}

impl DuplicateError {
    /// The warning a source reports, on the document whose definition is in force.
    pub fn warning(&self) -> super::yaml::Warning {
        super::yaml::Warning::document(&self.second, self.to_string())
    }
}

/// Accumulates objects into a [`Model`], remembering where each came from until [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct ModelBuilder {
    model: Model,
    origins: BTreeMap<(&'static str, ObjectKey), DocRef>,
}

impl ModelBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `obj`. Objects come in reading order, so one whose kind and key are taken replaces the
    /// earlier definition; what it replaced is returned, to be reported.
    pub fn insert(&mut self, doc: DocRef, obj: Object) -> Option<DuplicateError> {
        let kind = obj.kind_name();
        let key = obj.key();
        let first = self.origins.insert((kind, key.clone()), doc.clone());
        self.model.upsert(obj);
        first.map(|first| DuplicateError {
            kind,
            key,
            first,
            second: doc,
        })
    }

    /// Where the object of `kind` (as [`Object::kind_name`] spells it) and `key` came from.
    pub fn origin(&self, kind: &'static str, key: &ObjectKey) -> Option<&DocRef> {
        self.origins.get(&(kind, key.clone()))
    }

    pub fn finish(self) -> Model {
        self.model
    }
}

#[cfg(test)]
mod tests;
