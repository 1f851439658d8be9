//! Entry point for the ADS fuzz target (`fuzz/fuzz_targets/ads_requests.rs`), built with the `fuzzing`
//! feature only: decodes arbitrary bytes as a sequence of requests of one mode and drives that mode's
//! state machine against a published snapshot, the way a stream does, with every client string passed
//! through `untrusted`. What it checks is that nothing panics, that responses only ever carry the
//! snapshot's own resources, and that client strings come out single-line and bounded.

use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest};
use prost::Message;

use super::cache::Snapshot;
use super::delta::Delta;
use super::sotw::{Sotw, SotwResponse};
use super::stream::Machine;
use super::untrusted;
use crate::envoy::Resources;

/// Runs `data` (length-prefixed request messages; the first byte picks the mode) against `resources`.
pub fn drive(data: &[u8], resources: &Resources) {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let snapshot = Arc::new(Snapshot::build("fuzz/gw", resources));
    let names: Vec<String> = snapshot_names(resources);
    let mut messages = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        messages.push(&tail[..len]);
        rest = &tail[len..];
    }
    if mode % 2 == 0 {
        let carried = |r: &SotwResponse| r.message().resources.iter().filter_map(any_name).collect();
        run::<Sotw>(
            &messages,
            &snapshot,
            &names,
            |b| DiscoveryRequest::decode(b).ok(),
            carried,
        );
    } else {
        let carried = |r: &DeltaDiscoveryResponse| r.resources.iter().map(|x| x.name.clone()).collect();
        run::<Delta>(
            &messages,
            &snapshot,
            &names,
            |b| DeltaDiscoveryRequest::decode(b).ok(),
            carried,
        );
    }
}

fn run<M: Machine>(
    messages: &[&[u8]],
    snapshot: &Arc<Snapshot>,
    names: &[String],
    decode: impl Fn(&[u8]) -> Option<M::Request>,
    carried: impl Fn(&M::Response) -> Vec<String>,
) {
    let mut machine = M::default();
    let mut events = Vec::new();
    for bytes in messages {
        let Some(request) = decode(bytes) else { continue };
        if let Some(node) = M::node(&request) {
            for s in [&node.id, &node.cluster] {
                let shown = untrusted::short(s);
                assert!(!shown.contains('\n') && shown.chars().count() <= untrusted::MAX_CHARS + 32);
            }
        }
        let _ = M::names(&request);
        machine.on_request(request, &mut events);
        machine.plan_mut().set_latest(snapshot.clone());
        for (_, response) in machine.flush(&mut events) {
            for name in carried(&response) {
                assert!(
                    names.contains(&name),
                    "a response carried {name:?}, not in the snapshot"
                );
            }
        }
        events.clear();
    }
}

fn snapshot_names(r: &Resources) -> Vec<String> {
    let mut out: Vec<String> = r.clusters.iter().map(|c| c.name.clone()).collect();
    out.extend(r.endpoints.iter().map(|e| e.cluster_name.clone()));
    out.extend(r.listeners.iter().map(|l| l.name.clone()));
    out.extend(r.routes.iter().map(|x| x.name.clone()));
    out.extend(r.secrets.iter().map(|s| s.name.clone()));
    out
}

fn any_name(any: &envoy_types::pb::google::protobuf::Any) -> Option<String> {
    use crate::envoy::pb::{cluster, endpoint, listener, route, tls};
    let v = any.value.as_slice();
    match any.type_url.rsplit('/').next()? {
        "envoy.config.cluster.v3.Cluster" => cluster::Cluster::decode(v).ok().map(|c| c.name),
        "envoy.config.endpoint.v3.ClusterLoadAssignment" => {
            endpoint::ClusterLoadAssignment::decode(v).ok().map(|c| c.cluster_name)
        }
        "envoy.config.listener.v3.Listener" => listener::Listener::decode(v).ok().map(|l| l.name),
        "envoy.config.route.v3.RouteConfiguration" => route::RouteConfiguration::decode(v).ok().map(|r| r.name),
        "envoy.extensions.transport_sockets.tls.v3.Secret" => tls::Secret::decode(v).ok().map(|s| s.name),
        _ => None,
    }
}
