//! Gateways whose latest translation pier refuses to publish, and the status that says so.
//!
//! A Gateway is refused when its new resources fail the integrity check (`envoy::check`: a route to a
//! cluster that does not exist, say — a pier bug, never a user's), or when one of its responses would
//! be larger than its proxies accept (`--xds-max-response-bytes`) or, for what its proxyless gRPC
//! clients are served, larger than they accept (`--xds-max-grpc-response-bytes`, gRPC's 4 MiB): a
//! client that receives an oversized response drops the stream, reconnects, is sent the same response
//! and drops it again, for good, while pier's side sees nothing but reconnects. Refusing it at
//! translation turns that into one clear condition. Its proxies and clients keep the configuration last
//! published for it (or get none, if none was): the two halves come from one translation and are
//! published together, so an oversized gRPC half holds back Envoy's as well rather than serve the
//! Envoy half of one translation beside the gRPC half of another.
//!
//! A gRPC client asks for its resources by name, so its response holds what its listener reaches, at
//! most the whole half: the half's size is the bound judged, which can refuse a half no single client
//! would be sent whole (the message says which type and how to raise the limit).
//!
//! The Gateway's status carries `Programmed=False` with reason `Invalid` and the refusal (the largest
//! resource named, for a size); `/debug/status` lists it under `check_errors`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::gateway::conditions::{Condition, GatewayReason, GatewayType};
use crate::gateway::status::{StatusBody, StatusMeta};
use crate::snapshot::StatusSet;
use crate::snapshot::{GatewayOut, Res};
use crate::translate::engine::check::{ResponseSizes, TypeSize, weight};

/// One type's resources in an engine output.
type Resources = imbl::OrdMap<String, Arc<Res>>;

/// Who is sent a response: what a refusal calls them, and the option that raises their limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receivers {
    Envoy,
    Grpc,
}

impl Receivers {
    fn said(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Receivers::Envoy => ("", "its proxies", "--xds-max-response-bytes"),
            Receivers::Grpc => ("proxyless gRPC ", "its gRPC clients", "--xds-max-grpc-response-bytes"),
        }
    }
}

/// The first response of `out` over `limit` bytes, said the way an operator needs it: which type, how
/// large, the limit and its option, and the largest resource of that type.
pub fn oversize(sizes: &ResponseSizes, out: &GatewayOut, to: Receivers, limit: usize) -> Option<String> {
    let types: [(&str, TypeSize, &Resources); 5] = [
        ("clusters", sizes.clusters, &out.clusters),
        ("endpoints", sizes.endpoints, &out.endpoints),
        ("listeners", sizes.listeners, &out.listeners),
        ("routes", sizes.routes, &out.routes),
        ("secrets", sizes.secrets, &out.secrets),
    ];
    let (ty, size, map) = types.into_iter().find(|(_, size, _)| size.bytes > limit)?;
    // Only when refusing: a walk of the type's resources.
    let (name, largest) = map
        .iter()
        .map(|(name, res)| (name, weight(name, res)))
        .max_by_key(|(name, w)| (*w, std::cmp::Reverse(*name)))?;
    let (half, receivers, option) = to.said();
    Some(format!(
        "its {half}{ty} response would be {} ({} resources), over the {} {receivers} accept ({option}); \
         the largest is {name:?} ({})",
        bytes(size.bytes),
        size.resources,
        bytes(limit),
        bytes(largest),
    ))
}

/// `statuses` with each refused Gateway's `Programmed` condition saying why it was not published.
pub fn overlay(statuses: &StatusSet, refused: &BTreeMap<String, Vec<String>>) -> StatusSet {
    let mut out = statuses.clone();
    for (gateway, errors) in refused {
        let Some((namespace, name)) = gateway.split_once('/') else {
            continue;
        };
        let meta = StatusMeta {
            namespace: Some(namespace.into()),
            name: name.into(),
        };
        let found = out
            .iter()
            .find(|(k, _)| k.0 == "Gateway" && k.2 == meta)
            .map(|(k, v)| (k.clone(), v.clone()));
        let Some((key, old)) = found else { continue };
        let mut status = (*old).clone();
        if let StatusBody::Gateway { conditions, .. } = &mut status.status {
            let generation = conditions.first().map_or(0, |c| c.observed_generation);
            let message = format!(
                "pier did not publish this Gateway's latest configuration, and its proxies keep the one last \
                 published for it (if any): {}",
                errors.join("; ")
            );
            let condition = Condition::fail(GatewayType::Programmed, GatewayReason::Invalid, message, generation);
            match conditions.iter_mut().find(|c| c.type_ == GatewayType::Programmed) {
                Some(c) => *c = condition,
                None => conditions.push(condition),
            }
        }
        out.insert(key, Arc::new(status));
    }
    out
}

/// `n` bytes for people: `812 B`, `3.9 KiB`, `38.2 MiB`.
fn bytes(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} B")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{:.1} MiB", f / KIB / KIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::pb::cluster::Cluster;
    use crate::snapshot as out;
    use crate::translate::engine::check::GatewayCheck;

    fn clusters(names: &[(&str, usize)]) -> GatewayOut {
        let clusters = names
            .iter()
            .map(|(n, pad)| Cluster {
                name: n.to_string(),
                alt_stat_name: "x".repeat(*pad),
                ..Default::default()
            })
            .collect();
        out::pack(
            "ns/gw",
            &crate::envoy::Resources {
                clusters,
                ..Default::default()
            },
        )
    }

    #[test]
    fn names_the_type_the_limit_and_the_largest_resource() {
        let gw = clusters(&[("a", 10), ("big", 5000), ("c", 10)]);
        let mut check = GatewayCheck::default();
        check.check(&gw).unwrap();
        let sizes = check.sizes();
        assert_eq!(sizes.clusters.resources, 3);
        assert!(
            oversize(&sizes, &gw, Receivers::Envoy, sizes.clusters.bytes).is_none(),
            "at the limit is fine"
        );
        let message = oversize(&sizes, &gw, Receivers::Envoy, 4096).expect("over");
        assert!(message.starts_with("its clusters response would be 5."), "{message}");
        assert!(message.contains("(3 resources), over the 4.0 KiB its proxies accept (--xds-max-response-bytes)"));
        assert!(message.ends_with("the largest is \"big\" (5.0 KiB)"), "{message}");
        // The sizes follow the output: a removal shrinks the clusters' response.
        check.check(&clusters(&[("a", 10), ("c", 10)])).unwrap();
        assert_eq!(check.sizes().clusters.resources, 2);
        assert!(check.sizes().clusters.bytes < 4096);
    }

    /// The gRPC half is weighed apart from Envoy's, and its refusal names gRPC's option.
    #[test]
    fn the_grpc_half_is_weighed_on_its_own() {
        let half = clusters(&[("grpc-a", 10), ("grpc-big", 6000)]);
        let gw = GatewayOut {
            grpc: Some(Box::new(half.clone())),
            ..clusters(&[("envoy", 10)])
        };
        let mut check = GatewayCheck::default();
        check.check(&gw).unwrap();
        assert_eq!(check.sizes().clusters.resources, 1);
        assert_eq!(check.grpc_sizes().clusters.resources, 2);
        assert!(oversize(&check.sizes(), &gw, Receivers::Envoy, 4096).is_none());
        let message = oversize(&check.grpc_sizes(), &half, Receivers::Grpc, 4096).expect("over");
        assert!(
            message.starts_with("its proxyless gRPC clusters response would be 6.1 KiB (2 resources)"),
            "{message}"
        );
        assert!(message.contains("over the 4.0 KiB its gRPC clients accept (--xds-max-grpc-response-bytes)"));
        assert!(message.ends_with("the largest is \"grpc-big\" (6.0 KiB)"), "{message}");
        // A Gateway that stops serving gRPC clients weighs nothing there.
        check.check(&clusters(&[("envoy", 10)])).unwrap();
        assert_eq!(check.grpc_sizes(), ResponseSizes::default());
    }
}
