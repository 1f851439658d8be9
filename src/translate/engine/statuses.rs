//! The statuses side of an update: each status an update touched, recomputed on its own.

use std::sync::Arc;

use super::status::Subject;
use super::{Dirty, Engine};
use crate::gateway::MAX_ROUTE_PARENTS;
use crate::gateway::backend_tls;
use crate::gateway::backends;
use crate::gateway::spec::RouteKind;
use crate::gateway::status::{ObjectStatus, StatusBody};
use crate::model::ObjectKey;

impl Engine {
    /// Recomputes the statuses `dirty` names; true if any changed.
    pub(super) fn refresh_statuses(&mut self, mut dirty: Dirty) -> bool {
        let controller = self.opts.controller_name.clone();
        let mut changed = dirty.classes;
        for key in &dirty.gateways {
            let s = self.gateways.get(key).map(|s| s.status.clone());
            changed |= self.statuses.set(Subject::Gateway(key.clone()), s);
        }
        for (kind, key) in &dirty.routes {
            let s = self.route_status(*kind, key);
            changed |= self.statuses.set(Subject::Route(*kind, key.clone()), s);
        }
        for target in &dirty.backends {
            dirty
                .policies
                .extend(self.policy_targets.get(target).into_iter().flatten().cloned());
        }
        for (kind, key) in &dirty.backends {
            let s = self
                .evaluations
                .get(&(*kind, key.clone()))
                .and_then(|ev| backends::verdict::status_of(*kind, key, ev, &self.refs.view, &controller));
            changed |= self.statuses.set(Subject::Backend(*kind, key.clone()), s);
        }
        for key in &dirty.policies {
            let s = self
                .policies
                .verdicts
                .get(key)
                .and_then(|v| backend_tls::status_of(key, v, &self.refs.view, &controller));
            changed |= self.statuses.set(Subject::Policy(key.clone()), s);
        }
        changed
    }

    /// A route's `status.parents`: its entries for every pier Gateway it names, in Gateway order. When
    /// one Gateway holds the route and adds nothing for proxyless clients, that is its slot's list, which
    /// the status shares rather than copies (at 10,000 routes 2.6 MiB, Massif).
    fn route_status(&self, kind: RouteKind, key: &ObjectKey) -> Option<ObjectStatus> {
        let known = self.routes.get(&(kind, key.clone()))?;
        let per_gateway: Vec<_> = known
            .gateways
            .iter()
            .filter_map(|gw| self.gateways.get(gw))
            .filter_map(|state| {
                let slot = state.slot(kind, key)?;
                Some((&slot.result.parents, state.proxyless_condition(slot, known.generation)))
            })
            .collect();
        let parents = match per_gateway.as_slice() {
            [] => return None,
            [(parents, None)] if parents.len() <= MAX_ROUTE_PARENTS => Arc::clone(parents),
            _ => per_gateway
                .iter()
                .flat_map(|(parents, proxyless)| {
                    parents.iter().cloned().map(move |mut p| {
                        if p.conditions.first().is_some_and(|c| c.is_true()) {
                            p.conditions.extend(proxyless.clone());
                        }
                        p
                    })
                })
                .take(MAX_ROUTE_PARENTS)
                .collect(),
        };
        if parents.is_empty() {
            return None;
        }
        Some(ObjectStatus::new(
            crate::api::consts::GATEWAY_V1,
            kind.name(),
            key,
            StatusBody::Route { parents },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::status::StatusBody;

    const INPUT: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: a, namespace: infra}
spec: {gatewayClassName: pier, listeners: [{name: http, protocol: HTTP, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: b, namespace: infra}
spec: {gatewayClassName: pier, listeners: [{name: http, protocol: HTTP, port: 8081}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: one, namespace: infra}
spec: {parentRefs: [{name: a}], rules: [{backendRefs: [{name: s, port: 80}]}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: both, namespace: infra}
spec: {parentRefs: [{name: a}, {name: b}], rules: [{backendRefs: [{name: s, port: 80}]}]}
";

    fn parents(engine: &Engine, name: &str) -> Arc<[crate::gateway::status::RouteParentStatus]> {
        let key = ObjectKey::new("infra", name);
        match engine.route_status(RouteKind::Http, &key).expect("a status").status {
            StatusBody::Route { parents } => parents,
            other => panic!("not a route's status: {other:?}"),
        }
    }

    /// The shared list is the slot's own; a route two Gateways hold gets a list of its own with both.
    #[test]
    fn a_route_status_shares_its_one_gateways_list() {
        let loaded = crate::model::load::parse_texts(&[("in.yaml".into(), INPUT.into())]).expect("parses");
        let engine = Engine::with(loaded.model, Default::default());
        let slot = |gw: &str, name: &str| {
            let state = &engine.gateways[&ObjectKey::new("infra", gw)];
            Arc::clone(
                &state
                    .slot(RouteKind::Http, &ObjectKey::new("infra", name))
                    .expect("a slot")
                    .result
                    .parents,
            )
        };

        let one = parents(&engine, "one");
        assert!(
            Arc::ptr_eq(&one, &slot("a", "one")),
            "one Gateway: the slot's list, shared"
        );

        let both = parents(&engine, "both");
        let (a, b) = (slot("a", "both"), slot("b", "both"));
        assert!(
            Arc::ptr_eq(&a, &slot("a", "one")),
            "two routes one Gateway accepts alike: one list in both slots"
        );
        assert_eq!(both.len(), 2);
        assert!(!Arc::ptr_eq(&both, &a) && !Arc::ptr_eq(&both, &b));
        assert_eq!(
            both.to_vec(),
            [a.to_vec(), b.to_vec()].concat(),
            "both Gateways' entries, in order"
        );
    }

    fn xbackend_route(i: usize, gw: &str) -> String {
        format!(
            "---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {{name: x{i}, namespace: infra}}
spec: {{type: ExternalHostname, externalHostname: {{hostname: x{i}.example.com}}, port: {{number: 80}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r{i}, namespace: infra}}
spec:
  parentRefs: [{{name: {gw}}}]
  rules: [{{backendRefs: [{{group: gateway.networking.x-k8s.io, kind: XBackend, name: x{i}}}]}}]
"
        )
    }

    /// Backends with equal ancestor lists share one; a Backend another Gateway uses has its own.
    #[test]
    fn equal_backend_ancestor_lists_are_shared() {
        let text = [
            INPUT.to_string(),
            xbackend_route(1, "a"),
            xbackend_route(2, "a"),
            xbackend_route(3, "b"),
        ]
        .concat();
        let loaded = crate::model::load::parse_texts(&[("in.yaml".into(), text)]).expect("parses");
        let engine = Engine::with(loaded.model, Default::default());
        let ancestors = |name: &str| {
            let status = engine
                .statuses()
                .map()
                .values()
                .find(|s| s.kind == "XBackend" && &*s.metadata.name == name)
                .expect("an XBackend status");
            match &status.status {
                StatusBody::Backend { ancestors } => Arc::clone(ancestors),
                other => panic!("not a Backend's status: {other:?}"),
            }
        };
        let (one, two, three) = (ancestors("x1"), ancestors("x2"), ancestors("x3"));
        assert_eq!(&*one[0].parent_ref.name, "a");
        assert!(Arc::ptr_eq(&one, &two), "equal lists: one shared list");
        assert_eq!(&*three[0].parent_ref.name, "b");
        assert!(!Arc::ptr_eq(&one, &three), "another Gateway: a list of its own");
        assert_eq!(
            one.iter().map(|a| &a.conditions).collect::<Vec<_>>(),
            three.iter().map(|a| &a.conditions).collect::<Vec<_>>(),
            "the same conditions, on different ancestors"
        );
    }
}
