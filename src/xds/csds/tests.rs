use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::r#type::matcher::v3::StringMatcher;

use super::*;
use crate::envoy::Resources;
use crate::envoy::pb::cluster::Cluster;
use crate::envoy::pb::tls::Secret;
use crate::xds::Mode;
use crate::xds::clients::{ClientSync, TypeSync};

fn world() -> (Csds, Arc<Clients>) {
    let cache = Arc::new(SnapshotCache::new());
    let res = |c: &str| Resources {
        clusters: vec![Cluster {
            name: c.to_string(),
            ..Default::default()
        }],
        secrets: vec![Secret {
            name: "key".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    cache.publish(&BTreeMap::from([
        ("ns/a".to_string(), res("ca")),
        ("ns/b".to_string(), res("cb")),
    ]));
    let clients = Arc::new(Clients::new());
    (Csds::new(clients.clone(), cache), clients)
}

fn sync(types: &[(XdsType, TypeSync)]) -> ClientSync {
    ClientSync {
        generation: 1,
        promoted: true,
        types: types.iter().copied().collect(),
    }
}

fn granted(gateways: &[&str]) -> Identity {
    Identity::Certificate {
        gateways: gateways.iter().map(|g| g.to_string()).collect::<BTreeSet<_>>(),
        subject: "test".into(),
    }
}

/// `(node, type_url suffix, name, config_status, has contents, error details)` of every entry.
fn entries(r: &ClientStatusResponse) -> Vec<(String, String, String, i32, bool, Option<String>)> {
    let mut out = Vec::new();
    for c in &r.config {
        for g in &c.generic_xds_configs {
            out.push((
                c.node.as_ref().unwrap().id.clone(),
                g.type_url.rsplit('.').next().unwrap().to_string(),
                g.name.clone(),
                g.config_status,
                g.xds_config.is_some(),
                g.error_state.as_ref().map(|e| e.details.clone()),
            ));
        }
    }
    out
}

#[test]
fn states_follow_each_stream_and_secrets_stay_inside() {
    let (csds, clients) = world();
    let a = clients.register("envoy-a", "ns/a", Some("ns/a"), Mode::Sotw, "plaintext");
    let b = clients.register("envoy-b", "ns/b", Some("ns/b"), Mode::Delta, "plaintext");
    clients.sent(a, XdsType::Cluster, "v1");
    clients.acked(a, XdsType::Cluster, "v1");
    clients.sent(a, XdsType::Secret, "v1");
    clients.synced(
        a,
        sync(&[
            (XdsType::Cluster, TypeSync::Applied),
            (XdsType::Secret, TypeSync::Pending),
        ]),
    );
    clients.sent(b, XdsType::Cluster, "v2");
    clients.nacked(b, XdsType::Cluster, "v2", "bad cluster cb");
    clients.synced(b, sync(&[(XdsType::Cluster, TypeSync::Rejected)]));

    let all = csds
        .answer(&ClientStatusRequest::default(), &Identity::Plaintext)
        .unwrap();
    let (synced, stale, error) = (
        ConfigStatus::Synced as i32,
        ConfigStatus::Stale as i32,
        ConfigStatus::Error as i32,
    );
    assert_eq!(
        entries(&all),
        vec![
            ("envoy-a".into(), "Secret".into(), "key".into(), stale, false, None),
            ("envoy-a".into(), "Cluster".into(), "ca".into(), synced, true, None),
            (
                "envoy-b".into(),
                "Cluster".into(),
                "cb".into(),
                error,
                true,
                Some("bad cluster cb".into())
            ),
        ],
        "a secret is listed without its contents; a type never asked for is left out"
    );
    let without = ClientStatusRequest {
        exclude_resource_contents: true,
        ..Default::default()
    };
    let r = csds.answer(&without, &Identity::Plaintext).unwrap();
    assert!(entries(&r).iter().all(|e| !e.4), "exclude_resource_contents");
}

#[test]
fn a_certificate_sees_its_own_gateways_and_matchers_select_nodes() {
    let (csds, clients) = world();
    clients.register("envoy-a", "ns/a", Some("ns/a"), Mode::Sotw, "x");
    clients.register("envoy-b", "ns/b", Some("ns/b"), Mode::Sotw, "x");
    clients.register("stray", "nonsense", None, Mode::Sotw, "x");
    let nodes = |r: ClientStatusResponse| -> Vec<String> { r.config.into_iter().map(|c| c.node.unwrap().id).collect() };
    let all = ClientStatusRequest::default();
    assert_eq!(nodes(csds.answer(&all, &granted(&["ns/b"])).unwrap()), vec!["envoy-b"]);
    assert_eq!(nodes(csds.answer(&all, &granted(&[])).unwrap()), Vec::<String>::new());
    assert_eq!(
        nodes(csds.answer(&all, &Identity::Plaintext).unwrap()),
        vec!["envoy-a", "envoy-b", "stray"]
    );
    let by = |p: MatchPattern, ignore_case| ClientStatusRequest {
        node_matchers: vec![NodeMatcher {
            node_id: Some(StringMatcher {
                match_pattern: Some(p),
                ignore_case,
            }),
            node_metadatas: vec![],
        }],
        ..Default::default()
    };
    let select = |r| nodes(csds.answer(&r, &Identity::Plaintext).unwrap());
    assert_eq!(
        select(by(MatchPattern::Prefix("ENVOY-".into()), true)),
        vec!["envoy-a", "envoy-b"]
    );
    assert_eq!(
        select(by(MatchPattern::Prefix("ENVOY-".into()), false)),
        Vec::<String>::new()
    );
    assert_eq!(select(by(MatchPattern::Exact("stray".into()), false)), vec!["stray"]);
    assert_eq!(select(by(MatchPattern::Suffix("-b".into()), false)), vec!["envoy-b"]);
    let refused = csds.answer(
        &by(MatchPattern::SafeRegex(Default::default()), false),
        &Identity::Plaintext,
    );
    assert_eq!(refused.unwrap_err().code(), tonic::Code::InvalidArgument);
}
