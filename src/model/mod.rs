//! The model: one immutable, sorted snapshot of every object pier reads, whatever the source.
//!
//! Objects are keyed by `ObjectKey` (namespace, name; namespace is empty for cluster-scoped kinds) in
//! `BTreeMap`s, so iteration order — and therefore translation output — never depends on the order the
//! source delivered objects in. `yaml` is the one parser every entry point uses (directory source,
//! golden tests, e2e, `pier translate`), `load` turns texts into a model and `insert` applies objects to
//! one. Nothing here does I/O: sources read the bytes and hand them over.

use std::fmt;
use std::sync::Arc;

use gateway_api::apis::standard::{
    gatewayclasses::GatewayClass, gateways::Gateway, httproutes::HttpRoute, httproutes::HttpRouteSpec,
    referencegrants::ReferenceGrant,
};
use k8s_openapi::api::certificates::v1beta1::ClusterTrustBundle;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service, ServiceSpec};

use crate::api::dense::Densify;
/// pier's GRPCRoute: the standard type with the rule fields it lacks (`api::grpc`).
pub use crate::api::grpc::GrpcRoute;
use crate::api::{
    backend::Backend, backend::BackendShape, eg::EgBackend, eg::EgBackendSpec, validation::BackendTlsPolicy,
    xbackend::XBackend, xbackend::XBackendSpec,
};

/// What the parser keeps of an HTTPRoute beside the standard-channel type pier reads it with, which
/// would otherwise drop or refuse it: per rule (by index), the experimental `retry`, the `type` of
/// every filter the standard type does not know (such a filter is taken out of the route so the rest
/// still loads; the translator refuses its rule), and experimental fields pier does not serve. Empty
/// when there is nothing to keep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpRouteExtras {
    pub rules: Vec<RuleExtras>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleExtras {
    pub retry: Option<HttpRouteRetry>,
    /// Unknown filter types, rule filters first, then backendRef filters (`ExternalAuth on backendRefs[1]`).
    pub unknown_filters: Vec<String>,
    /// Experimental rule fields pier does not serve: the rule is refused rather than served without
    /// them.
    pub unsupported_fields: Vec<String>,
    /// The rule's `sessionPersistence` (GEP-1619).
    pub session_persistence: Option<crate::api::session::SessionPersistence>,
}

/// Gateway API `HTTPRouteRetry` (experimental channel, GEP-1731); the `gateway-api` crate has it only
/// behind its `experimental` feature, which pier does not build.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpRouteRetry {
    pub attempts: Option<i64>,
    pub backoff: Option<String>,
    pub codes: Option<Vec<i64>>,
}

impl HttpRouteExtras {
    pub fn is_empty(&self) -> bool {
        self.rules.iter().all(|r| {
            r.retry.is_none()
                && r.unknown_filters.is_empty()
                && r.unsupported_fields.is_empty()
                && r.session_persistence.is_none()
        })
    }
}

pub mod diff;
pub mod insert;
pub mod load;
pub mod objects;
pub mod pod;
pub mod resolution;
pub mod slice;
pub mod yaml;

pub use crate::api::name::Name;
pub use crate::api::stored::{Meta, Stored};
pub use objects::{Kind, ModelKind, Objects};
pub use resolution::Resolution;
pub use slice::EndpointSlice;

/// An HTTPRoute as the model keeps it ([`crate::api::stored`]).
pub type StoredRoute = Stored<HttpRouteSpec>;
/// An XBackend as the model keeps it.
pub type StoredXBackend = Stored<XBackendSpec>;
/// A Service as the model keeps it (the crate's spec is optional).
pub type StoredService = Stored<Option<ServiceSpec>>;
/// A standard-group Backend, in either shape, as the model keeps it.
pub type StoredBackend = Stored<BackendShape>;
/// An Envoy Gateway Backend as the model keeps it.
pub type StoredEgBackend = Stored<EgBackendSpec>;

/// Identity of an object within its kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectKey {
    pub namespace: Name,
    pub name: Name,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<Name>, name: impl Into<Name>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
    /// Key of a cluster-scoped object.
    pub fn cluster(name: impl Into<Name>) -> Self {
        Self {
            namespace: Name::default(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// Every kind pier understands, one map each, plus an index of EndpointSlices by Service. Persistent
/// (`objects`): clones share structure, so successive snapshots cost what changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    pub gateway_classes: Objects<GatewayClass>,
    pub gateways: Objects<Gateway>,
    pub http_routes: Objects<StoredRoute>,
    /// What the standard HTTPRoute type cannot hold, for the routes that have any (keys of `http_routes`).
    pub http_route_extras: Objects<HttpRouteExtras>,
    pub grpc_routes: Objects<GrpcRoute>,
    pub reference_grants: Objects<ReferenceGrant>,
    /// With what the crate's type lacks (`api::validation`).
    pub backend_tls_policies: Objects<BackendTlsPolicy>,
    pub xbackends: Objects<StoredXBackend>,
    /// The standard-group `Backend`, in either the GEP-4488 or the draft shape.
    pub backends: Objects<StoredBackend>,
    pub eg_backends: Objects<StoredEgBackend>,
    pub services: Objects<StoredService>,
    pub endpoint_slices: Objects<EndpointSlice>,
    /// Pods, trimmed to what EndpointSelector Backends read ([`pod::trim`]).
    pub pods: Objects<Pod>,
    pub secrets: Objects<Secret>,
    pub config_maps: Objects<ConfigMap>,
    /// Cluster-scoped (keyed by name alone, [`ObjectKey::cluster`]); v1alpha1 files are read into v1beta1.
    pub cluster_trust_bundles: Objects<ClusterTrustBundle>,
    pub namespaces: Objects<Namespace>,
    /// pier's resolver's answers, by [`resolution::key`] (only with `--resolve-hostnames pier`; filled by
    /// the resolver stage, never by a source).
    pub resolutions: Objects<Resolution>,
    /// EndpointSlice keys by the Service their `kubernetes.io/service-name` label names.
    slices_by_service: imbl::OrdMap<ObjectKey, imbl::OrdSet<ObjectKey>>,
    /// Kinds the source could not read, with why (a watch the API server refuses as forbidden, one that
    /// keeps failing before it ever listed). Their maps are empty; whatever needs them says so
    /// ([`Model::unavailable`]). Only the Kubernetes source sets it.
    unavailable: imbl::OrdMap<Kind, Arc<str>>,
}

/// Calls `$mac!` with every object map of [`Model`], so code that walks them all stays in step with
/// the struct (the Kubernetes source's partitions, the rebuild below).
macro_rules! model_maps {
    ($mac:ident) => {
        $mac!(
            gateway_classes,
            gateways,
            http_routes,
            http_route_extras,
            grpc_routes,
            reference_grants,
            backend_tls_policies,
            xbackends,
            backends,
            eg_backends,
            services,
            endpoint_slices,
            pods,
            secrets,
            config_maps,
            cluster_trust_bundles,
            namespaces
        );
    };
}
pub(crate) use model_maps;

/// After a bulk load, by the source that publishes the model (`api::dense`).
impl Densify for Model {
    fn densify(&mut self) {
        macro_rules! all {
            ($($map:ident),*) => {{
                // Destructured, so a map added to the model cannot be left out.
                let Model { $($map,)* resolutions, slices_by_service, unavailable: _ } = self;
                $( $map.densify(); )*
                resolutions.densify();
                slices_by_service.densify();
            }};
        }
        model_maps!(all);
    }
}

macro_rules! model_kind {
    ($($t:ty => $k:ident),* $(,)?) => { $( impl ModelKind for $t { const KIND: Kind = Kind::$k; } )* };
}
model_kind!(
    GatewayClass => GatewayClass,
    Gateway => Gateway,
    StoredRoute => HttpRoute,
    HttpRouteExtras => HttpRouteExtras,
    GrpcRoute => GrpcRoute,
    ReferenceGrant => ReferenceGrant,
    BackendTlsPolicy => BackendTlsPolicy,
    StoredXBackend => XBackend,
    StoredBackend => Backend,
    StoredEgBackend => EgBackend,
    StoredService => Service,
    EndpointSlice => EndpointSlice,
    Pod => Pod,
    Secret => Secret,
    ConfigMap => ConfigMap,
    ClusterTrustBundle => ClusterTrustBundle,
    Namespace => Namespace,
    Resolution => Resolution,
);

/// The label that ties an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The Service an EndpointSlice belongs to, by its `kubernetes.io/service-name` label.
pub fn slice_service(key: &ObjectKey, slice: &EndpointSlice) -> Option<ObjectKey> {
    let name = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
    Some(ObjectKey::new(&key.namespace, name))
}

impl Model {
    /// Why the source could not read `kind`, if it could not (a recorded read: [`objects::Read::Unavailable`]).
    pub fn unavailable(&self, kind: Kind) -> Option<&str> {
        objects::record(|| objects::Read::Unavailable(kind));
        self.unavailable.get(&kind).map(|r| &**r)
    }

    /// `what` could not be found, said with the reason when the source could not read its kind: `Service
    /// ns/web not found` or `Service ns/web not found: Services cannot be read (forbidden: ...)`.
    pub fn not_found(&self, kind: Kind, what: impl std::fmt::Display) -> String {
        match self.unavailable(kind) {
            Some(why) => format!("{what} not found: {} cannot be read ({why})", kind.plural()),
            None => format!("{what} not found"),
        }
    }

    /// What a refusal for want of a ReferenceGrant adds when ReferenceGrants cannot be read: without them
    /// no cross-namespace reference is allowed (never more access for an unreadable kind).
    pub fn grants_note(&self) -> String {
        self.unavailable(Kind::ReferenceGrant)
            .map(|why| format!("; ReferenceGrants cannot be read ({why}), so no cross-namespace reference is allowed"))
            .unwrap_or_default()
    }

    /// Marks `kind` unreadable (with `why`) or readable again.
    pub fn set_unavailable(&mut self, kind: Kind, why: Option<&str>) {
        match why {
            Some(why) if self.unavailable.get(&kind).is_none_or(|w| &**w != why) => {
                self.unavailable.insert(kind, Arc::from(why));
            }
            Some(_) => {}
            None => {
                self.unavailable.remove(&kind);
            }
        }
    }

    /// Every unreadable kind, with why (not recorded: for the source and the admin API).
    pub fn unavailable_kinds(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.unavailable.iter().map(|(k, r)| (*k, &**r))
    }

    /// The EndpointSlices of Service `svc`, in key order (a recorded read: [`objects::Read::SlicesOf`]).
    pub fn slices_of<'a>(
        &'a self,
        svc: &ObjectKey,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<EndpointSlice>)> + 'a {
        objects::record(|| objects::Read::SlicesOf(svc.clone()));
        self.slices_by_service
            .get(svc)
            .into_iter()
            .flatten()
            .filter_map(|k| self.endpoint_slices.peek(k).map(|s| (k, s)))
    }

    pub(crate) fn insert_slice(&mut self, key: ObjectKey, slice: Arc<EndpointSlice>) -> bool {
        let old = self.endpoint_slices.insert(key.clone(), slice.clone());
        self.unindex_slice(&key, old.as_deref());
        if let Some(svc) = slice_service(&key, &slice) {
            self.slices_by_service.entry(svc).or_default().insert(key);
        }
        old.is_some()
    }

    pub(crate) fn remove_slice(&mut self, key: &ObjectKey) -> bool {
        let old = self.endpoint_slices.remove(key);
        self.unindex_slice(key, old.as_deref());
        old.is_some()
    }

    fn unindex_slice(&mut self, key: &ObjectKey, old: Option<&EndpointSlice>) {
        let Some(svc) = old.and_then(|s| slice_service(key, s)) else {
            return;
        };
        if let Some(set) = self.slices_by_service.get_mut(&svc) {
            set.remove(key);
            if set.is_empty() {
                self.slices_by_service.remove(&svc);
            }
        }
    }
}

/// One parsed object of any supported kind.
#[derive(Debug, Clone)]
pub enum Object {
    GatewayClass(GatewayClass),
    Gateway(Gateway),
    HttpRoute(HttpRoute, HttpRouteExtras),
    GrpcRoute(GrpcRoute),
    ReferenceGrant(ReferenceGrant),
    BackendTlsPolicy(BackendTlsPolicy),
    XBackend(XBackend),
    Backend(Backend),
    EgBackend(EgBackend),
    Service(Service),
    EndpointSlice(EndpointSlice),
    /// Boxed: a Pod type is large even when trimmed (its spec is inline).
    Pod(Box<Pod>),
    Secret(Secret),
    ConfigMap(ConfigMap),
    ClusterTrustBundle(ClusterTrustBundle),
    Namespace(Namespace),
}
