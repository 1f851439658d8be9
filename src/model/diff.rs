//! Object-level differences between two models, and moving one object's state from one model to
//! another: what NACK containment (`runtime::contain`) bisects over and reverts.
//!
//! An HTTPRoute's extras ([`super::HttpRouteExtras`]) are part of the route here: they are listed as
//! the route and travel with it, so a reverted route never keeps another version's extras.

use std::sync::Arc;

use super::{Kind, Model, ModelKind, ObjectKey, Objects};

/// One object, by kind and key.
pub type ObjectId = (Kind, ObjectKey);

/// Runs `$body` with `$objs` bound to the maps of `$kind` in each of the models given.
macro_rules! with_kind {
    ($kind:expr, $($objs:ident = $model:expr),+ => $body:expr) => {
        match $kind {
            Kind::GatewayClass => { $(let $objs = &$model.gateway_classes;)+ $body }
            Kind::Gateway => { $(let $objs = &$model.gateways;)+ $body }
            Kind::HttpRoute => { $(let $objs = &$model.http_routes;)+ $body }
            Kind::HttpRouteExtras => { $(let $objs = &$model.http_route_extras;)+ $body }
            Kind::GrpcRoute => { $(let $objs = &$model.grpc_routes;)+ $body }
            Kind::ReferenceGrant => { $(let $objs = &$model.reference_grants;)+ $body }
            Kind::BackendTlsPolicy => { $(let $objs = &$model.backend_tls_policies;)+ $body }
            Kind::XBackend => { $(let $objs = &$model.xbackends;)+ $body }
            Kind::Backend => { $(let $objs = &$model.backends;)+ $body }
            Kind::EgBackend => { $(let $objs = &$model.eg_backends;)+ $body }
            Kind::Service => { $(let $objs = &$model.services;)+ $body }
            Kind::EndpointSlice => { $(let $objs = &$model.endpoint_slices;)+ $body }
            Kind::Pod => { $(let $objs = &$model.pods;)+ $body }
            Kind::Secret => { $(let $objs = &$model.secrets;)+ $body }
            Kind::ConfigMap => { $(let $objs = &$model.config_maps;)+ $body }
            Kind::ClusterTrustBundle => { $(let $objs = &$model.cluster_trust_bundles;)+ $body }
            Kind::Namespace => { $(let $objs = &$model.namespaces;)+ $body }
            Kind::Resolution => { $(let $objs = &$model.resolutions;)+ $body }
        }
    };
}

/// Every kind users write, in the order objects are listed. Resolutions (`--resolve-hostnames pier`)
/// are pier's own lookups, not anyone's change: they are never listed, so never quarantined.
const KINDS: [Kind; 17] = [
    Kind::GatewayClass,
    Kind::Gateway,
    Kind::HttpRoute,
    Kind::HttpRouteExtras,
    Kind::GrpcRoute,
    Kind::ReferenceGrant,
    Kind::BackendTlsPolicy,
    Kind::XBackend,
    Kind::Backend,
    Kind::EgBackend,
    Kind::Service,
    Kind::EndpointSlice,
    Kind::Pod,
    Kind::Secret,
    Kind::ConfigMap,
    Kind::ClusterTrustBundle,
    Kind::Namespace,
];

impl Model {
    /// The objects added, removed or replaced between `self` and `other`, in kind then key order
    /// (a route whose extras alone changed is listed once, as the route).
    pub fn changed_objects(&self, other: &Model) -> Vec<ObjectId> {
        let mut out = std::collections::BTreeSet::new();
        for kind in KINDS {
            let listed = if kind == Kind::HttpRouteExtras {
                Kind::HttpRoute
            } else {
                kind
            };
            with_kind!(kind, a = self, b = other => {
                out.extend(a.changed_keys(b).map(|k| (listed, k.clone())));
            });
        }
        out.into_iter().collect()
    }

    /// Whether object `id` has equal contents (or is absent) in both models.
    pub fn same_object(&self, other: &Model, id: &ObjectId) -> bool {
        let (kind, key) = id;
        let same = with_kind!(*kind, a = self, b = other => a.peek(key) == b.peek(key));
        same && (*kind != Kind::HttpRoute || self.same_object(other, &(Kind::HttpRouteExtras, key.clone())))
    }

    /// Sets object `id` to its state in `from`: the same object, or absent if `from` has none.
    pub fn take_object(&mut self, from: &Model, id: &ObjectId) {
        let (kind, key) = id;
        match kind {
            Kind::GatewayClass => take(&mut self.gateway_classes, &from.gateway_classes, key),
            Kind::Gateway => take(&mut self.gateways, &from.gateways, key),
            Kind::HttpRoute | Kind::HttpRouteExtras => {
                take(&mut self.http_routes, &from.http_routes, key);
                take(&mut self.http_route_extras, &from.http_route_extras, key);
            }
            Kind::GrpcRoute => take(&mut self.grpc_routes, &from.grpc_routes, key),
            Kind::ReferenceGrant => take(&mut self.reference_grants, &from.reference_grants, key),
            Kind::BackendTlsPolicy => take(&mut self.backend_tls_policies, &from.backend_tls_policies, key),
            Kind::XBackend => take(&mut self.xbackends, &from.xbackends, key),
            Kind::Backend => take(&mut self.backends, &from.backends, key),
            Kind::EgBackend => take(&mut self.eg_backends, &from.eg_backends, key),
            Kind::Service => take(&mut self.services, &from.services, key),
            // Slices go through the model so its by-Service index stays true.
            Kind::EndpointSlice => match from.endpoint_slices.peek(key) {
                Some(slice) => {
                    self.insert_slice(key.clone(), slice.clone());
                }
                None => {
                    self.remove_slice(key);
                }
            },
            Kind::Pod => take(&mut self.pods, &from.pods, key),
            Kind::Secret => take(&mut self.secrets, &from.secrets, key),
            Kind::ConfigMap => take(&mut self.config_maps, &from.config_maps, key),
            Kind::ClusterTrustBundle => take(&mut self.cluster_trust_bundles, &from.cluster_trust_bundles, key),
            Kind::Namespace => take(&mut self.namespaces, &from.namespaces, key),
            Kind::Resolution => take(&mut self.resolutions, &from.resolutions, key),
        }
    }
}

fn take<T: ModelKind>(into: &mut Objects<T>, from: &Objects<T>, key: &ObjectKey) {
    match from.peek(key) {
        Some(obj) => {
            into.insert(key.clone(), Arc::clone(obj));
        }
        None => {
            into.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::load;

    fn model(yaml: &str) -> Model {
        load::parse_texts(&[("t.yaml".into(), yaml.into())])
            .expect("loads")
            .model
    }

    const BASE: &str = "
apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec: {rules: [{backendRefs: [{name: a, port: 80}]}]}
";

    #[test]
    fn changes_are_listed_and_taken_back_one_object_at_a_time() {
        let old = model(BASE);
        let new = model(&format!(
            "{BASE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: b, namespace: ns}}\n"
        ));
        let changed = old.changed_objects(&new);
        // Every object of a reparsed model is a new `Arc`: all three are listed, once each.
        assert_eq!(
            changed,
            [
                (Kind::HttpRoute, ObjectKey::new("ns", "r")),
                (Kind::Service, ObjectKey::new("ns", "a")),
                (Kind::Service, ObjectKey::new("ns", "b")),
            ]
        );
        let b = (Kind::Service, ObjectKey::new("ns", "b"));
        let a = (Kind::Service, ObjectKey::new("ns", "a"));
        assert!(old.same_object(&new, &a), "same contents");
        assert!(!old.same_object(&new, &b));
        let mut reverted = new.clone();
        reverted.take_object(&old, &b);
        assert!(
            reverted.services.peek(&b.1).is_none(),
            "an added object is taken back out"
        );
        reverted.take_object(&new, &b);
        assert!(reverted.same_object(&new, &b));
        assert_eq!(reverted.changed_objects(&new), Vec::<ObjectId>::new());
    }
}
