//! Versions follow content; publishing keeps unchanged snapshots, bumps the generation only on change,
//! and dates each type by the publish that changed it.

use super::*;
use crate::envoy::pb::cluster::Cluster;

fn cluster(name: &str, ms: i64) -> Cluster {
    Cluster {
        name: name.to_string(),
        connect_timeout: Some(envoy_types::pb::google::protobuf::Duration { seconds: ms, nanos: 0 }),
        ..Default::default()
    }
}

#[test]
fn versions_follow_content() {
    let a = Resources {
        clusters: vec![cluster("a", 1), cluster("b", 1)],
        ..Default::default()
    };
    let mut b = a.clone();
    b.clusters[1].connect_timeout = Some(envoy_types::pb::google::protobuf::Duration { seconds: 2, nanos: 0 });
    let (sa, sa2, sb) = (
        Snapshot::build("ns/g", &a),
        Snapshot::build("ns/g", &a),
        Snapshot::build("ns/g", &b),
    );
    assert_eq!(sa.type_versions(), sa2.type_versions());
    let (va, vb) = (sa.view(XdsType::Cluster), sb.view(XdsType::Cluster));
    assert_eq!(va.entries["a"].version, vb.entries["a"].version);
    assert_ne!(va.entries["b"].version, vb.entries["b"].version);
    assert_ne!(va.version, vb.version);
    assert_eq!(va.version.len(), 16);
    assert_eq!(sa.version(XdsType::Route), sb.version(XdsType::Route));
}

#[test]
fn endpoint_versions_follow_their_cluster() {
    use crate::envoy::pb::endpoint::ClusterLoadAssignment;
    let cla = ClusterLoadAssignment {
        cluster_name: "a".into(),
        ..Default::default()
    };
    let a = Resources {
        clusters: vec![cluster("a", 1)],
        endpoints: vec![cla],
        ..Default::default()
    };
    let mut b = a.clone();
    b.clusters[0] = cluster("a", 2);
    let (sa, sb) = (Snapshot::build("ns/g", &a), Snapshot::build("ns/g", &b));
    assert_ne!(sa.version(XdsType::Endpoint), sb.version(XdsType::Endpoint));
    assert_eq!(
        sa.view(XdsType::Endpoint).entries["a"].resource(),
        sb.view(XdsType::Endpoint).entries["a"].resource()
    );
}

#[test]
fn publish_keeps_unchanged_snapshots_and_bumps_only_on_change() {
    let cache = SnapshotCache::new();
    assert!(!cache.has_published());
    let rx = cache.subscribe();
    let mut gws = BTreeMap::new();
    gws.insert("ns/a".to_string(), Resources::default());
    let r1 = cache.publish(&gws);
    assert!(cache.has_published());
    assert_eq!((r1.generation, r1.added.clone()), (1, vec!["ns/a".to_string()]));
    let before = cache.get("ns/a").unwrap();
    let r2 = cache.publish(&gws);
    assert_eq!(r2.generation, 1);
    assert!(!r2.changed_anything());
    assert!(Arc::ptr_eq(&before, &cache.get("ns/a").unwrap()));
    let r3 = cache.publish(&BTreeMap::new());
    assert_eq!((r3.generation, r3.removed), (2, vec!["ns/a".to_string()]));
    assert!(cache.get("ns/a").is_none());
    assert_eq!(rx.borrow().number, 2);
}

#[test]
fn each_type_is_dated_by_the_publish_that_last_changed_it() {
    let cache = SnapshotCache::new();
    let rx = cache.subscribe();
    let gateway = |clusters| {
        let res = Resources {
            clusters,
            ..Default::default()
        };
        BTreeMap::from([("ns/g".to_string(), res)])
    };
    cache.publish(&gateway(vec![cluster("a", 1)]));
    let first = cache.get("ns/g").unwrap();
    let first_at = rx.borrow().at;
    assert!(XdsType::ALL.into_iter().all(|ty| first.published(ty) == first_at));

    std::thread::sleep(std::time::Duration::from_millis(2));
    cache.publish(&gateway(vec![cluster("a", 2)]));
    let second = cache.get("ns/g").unwrap();
    let second_at = rx.borrow().at;
    assert!(second_at > first_at);
    assert_eq!(second.published(XdsType::Cluster), second_at, "clusters changed");
    for ty in [XdsType::Endpoint, XdsType::Listener, XdsType::Route, XdsType::Secret] {
        assert_eq!(second.published(ty), first_at, "{ty} did not change");
    }

    // An identical publish keeps the snapshot, its dates and the generation's date.
    cache.publish(&gateway(vec![cluster("a", 2)]));
    assert!(Arc::ptr_eq(&second, &cache.get("ns/g").unwrap()));
    assert_eq!(rx.borrow().at, second_at);
}
