//! `translate(&Model, &Options) -> Translation`: the one pure function the golden tests pin.
//!
//! It is [`engine::Engine`] run once from the empty model — the same orchestration `pier serve` runs on
//! every change — decoded into plain Envoy resources. Infallible and deterministic: a user mistake is a
//! status condition, never an error, and the same model gives the same bytes.

mod document;
pub mod engine;

pub use document::{Document, Selected};

use std::collections::BTreeMap;

use serde_json::Value;

use crate::envoy::Resources;
use crate::gateway::status::ObjectStatus;
use crate::model::Model;
use crate::options::Options;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// Envoy resources per Gateway (`namespace/name`).
    pub gateways: BTreeMap<String, Resources>,
    /// What proxyless gRPC clients are served, per Gateway that serves them anything
    /// (`envoy::proxyless`).
    pub proxyless: BTreeMap<String, Resources>,
    /// Status of every object pier has something to say about, sorted by kind, namespace, name.
    pub statuses: Vec<ObjectStatus>,
}

pub fn translate(model: &Model, opts: &Options) -> Translation {
    engine::Engine::with(model.clone(), opts.clone()).into_translation()
}

/// A small Gateway's resources (the `route-weights` golden input), for the ADS fuzz target and its
/// property test, which need a real snapshot to serve and must not translate one themselves.
#[cfg(any(feature = "fuzzing", feature = "testkit"))]
pub fn sample_resources() -> Resources {
    let yaml = include_str!("../../testdata/route-weights/input.yaml");
    let loaded =
        crate::model::load::parse_texts(&[("input.yaml".to_string(), yaml.to_string())]).expect("sample parses");
    translate(&loaded.model, &Options::default())
        .gateways
        .into_values()
        .next()
        .unwrap_or_default()
}

/// Why [`Translation::resources`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("no pier Gateway {0:?} in the input (pier Gateways: {1:?})")]
    NoSuchGateway(String, Vec<String>),
    /// Two Gateways have a resource of the same type and name with different content (a cluster that
    /// presents one Gateway's client certificate and not the other's, say): a merged view would show one
    /// and silently hide the other.
    #[error(
        "{kind} {name:?} differs between Gateways {first} and {second}, so they cannot be shown merged; translate one Gateway at a time (--gateway)"
    )]
    Conflict {
        kind: &'static str,
        name: String,
        first: String,
        second: String,
    },
}

impl Translation {
    /// The resources of one Gateway, or of all of them merged by name when `gateway` is `None`. A merge
    /// never hides anything: resources that share a name must be identical.
    pub fn resources(&self, gateway: Option<&str>) -> Result<Resources, SelectError> {
        self.select(gateway).map(|s| s.to_resources())
    }

    /// [`resources`](Self::resources), borrowed.
    pub fn select(&self, gateway: Option<&str>) -> Result<Selected<'_>, SelectError> {
        match gateway {
            Some(g) => self
                .gateways
                .get(g)
                .map(Selected::of)
                .ok_or_else(|| SelectError::NoSuchGateway(g.to_string(), self.gateways.keys().cloned().collect())),
            None => merge(&self.gateways),
        }
    }

    /// The `pier translate` document as one value ([`render`](Self::render) without warnings).
    pub fn document(&self, gateway: Option<&str>) -> Result<Value, SelectError> {
        let doc = self.render(gateway, &[])?;
        Ok(serde_json::to_value(&doc).expect("rendered resources and statuses are JSON"))
    }
}

/// Every Gateway's resources in one set, deduplicated by name; a name whose resources differ between
/// Gateways is a conflict.
fn merge(gateways: &BTreeMap<String, Resources>) -> Result<Selected<'_>, SelectError> {
    /// One type's list (`list`), each resource named by `name`.
    fn one<'a, T: PartialEq>(
        gateways: &'a BTreeMap<String, Resources>,
        kind: &'static str,
        list: fn(&Resources) -> &[T],
        name: fn(&T) -> &str,
    ) -> Result<Vec<&'a T>, SelectError> {
        let each = gateways
            .iter()
            .map(|(gw, r)| (gw.as_str(), list(r).iter().map(|x| (name(x), x))));
        merged(kind, each)
    }
    Ok(Selected {
        clusters: one(gateways, "cluster", |r| &r.clusters, |x| &x.name)?,
        endpoints: one(gateways, "ClusterLoadAssignment", |r| &r.endpoints, |x| &x.cluster_name)?,
        listeners: one(gateways, "listener", |r| &r.listeners, |x| &x.name)?,
        routes: one(gateways, "route configuration", |r| &r.routes, |x| &x.name)?,
        secrets: one(gateways, "secret", |r| &r.secrets, |x| &x.name)?,
    })
}

/// One type's resources of every Gateway (`(gateway, [(name, resource)])`), deduplicated by name in
/// name order, remembering which Gateway gave each: a name whose resources differ is a conflict, so a
/// merge never hides anything.
fn merged<'a, 'g, T: PartialEq + ?Sized + 'a, I>(
    kind: &'static str,
    gateways: impl IntoIterator<Item = (&'g str, I)>,
) -> Result<Vec<&'a T>, SelectError>
where
    I: IntoIterator<Item = (&'a str, &'a T)>,
{
    let mut into: BTreeMap<&'a str, (&'a T, &'g str)> = BTreeMap::new();
    for (gw, items) in gateways {
        for (name, item) in items {
            match into.get(name) {
                Some((seen, _)) if *seen == item => {}
                Some((_, first)) => {
                    return Err(SelectError::Conflict {
                        kind,
                        name: name.to_string(),
                        first: first.to_string(),
                        second: gw.to_string(),
                    });
                }
                None => {
                    into.insert(name, (item, gw));
                }
            }
        }
    }
    Ok(into.into_values().map(|(item, _)| item).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::pb::cluster::Cluster;

    fn gateway(clusters: &[(&str, u64)]) -> Resources {
        Resources {
            clusters: clusters
                .iter()
                .map(|(name, timeout)| Cluster {
                    name: name.to_string(),
                    connect_timeout: Some(crate::envoy::pb::protobuf::Duration {
                        seconds: *timeout as i64,
                        nanos: 0,
                    }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn merging_gateways_never_hides_a_difference() {
        let mut t = Translation::default();
        t.gateways
            .insert("ns/a".into(), gateway(&[("shared", 1), ("only-a", 1)]));
        t.gateways
            .insert("ns/b".into(), gateway(&[("shared", 1), ("only-b", 2)]));
        let merged = t.resources(None).expect("identical shared cluster merges");
        let names: Vec<&str> = merged.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["only-a", "only-b", "shared"]);

        t.gateways.insert("ns/c".into(), gateway(&[("shared", 5)]));
        let err = t.resources(None).unwrap_err();
        assert_eq!(
            err,
            SelectError::Conflict {
                kind: "cluster",
                name: "shared".into(),
                first: "ns/a".into(),
                second: "ns/c".into()
            }
        );
        assert!(err.to_string().contains("--gateway"), "{err}");
        assert!(t.resources(Some("ns/c")).is_ok(), "one Gateway at a time still works");
        assert!(matches!(t.resources(Some("ns/x")), Err(SelectError::NoSuchGateway(..))));
    }

    /// The connect timeout is decided in the IR (`ir::Cluster::connect_timeout_ms`), from the options.
    #[test]
    fn the_connect_timeout_option_reaches_every_cluster() {
        let text = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\n\
                    spec: {controllerName: pier.dev/gateway-controller}\n---\n\
                    apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n\
                    spec: {gatewayClassName: pier, listeners: [{name: http, protocol: HTTP, port: 8080}]}\n---\n\
                    apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: default}\n\
                    spec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{name: a, port: 80}]}]}\n---\n\
                    apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\nspec: {ports: [{port: 80}]}\n";
        let loaded = crate::model::load::parse_texts(&[("t.yaml".to_string(), text.to_string())]).unwrap();
        let opts = crate::Options {
            connect_timeout_ms: 2_500,
            ..Default::default()
        };
        let t = translate(&loaded.model, &opts);
        let clusters = &t.gateways["default/gw"].clusters;
        assert!(!clusters.is_empty());
        for c in clusters {
            let d = c.connect_timeout.unwrap();
            assert_eq!((d.seconds, d.nanos), (2, 500_000_000), "{}", c.name);
        }
    }
}
