//! The Kubernetes source's event handling, without an API server.

use super::*;

fn cfg() -> SourceConfig {
    SourceConfig {
        namespaces: vec![],
        debounce: Debounce {
            quiet: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        },
        retry_max: Duration::from_millis(1),
    }
}

#[test]
fn reference_grant_v1beta1_counts_only_where_v1_is_not_served() {
    let mut src = Source::new(&cfg());
    let v1 = src
        .parts
        .iter()
        .position(|p| p.kind.name == "ReferenceGrant" && p.kind.version == "v1")
        .unwrap();
    let beta = src
        .parts
        .iter()
        .position(|p| p.kind.name == "ReferenceGrant" && p.kind.version == "v1beta1")
        .unwrap();
    let grant = "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g, namespace: a}\n\
                 spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: b}], to: [{group: '', kind: Service}]}\n";
    let obj = crate::model::yaml::parse("t", grant).unwrap().objects.remove(0).1;
    src.parts[beta].objects.upsert(obj);
    src.parts[beta].sync = Sync::Synced;
    src.parts[v1].sync = Sync::Missing;
    assert_eq!(src.build().reference_grants.len(), 1, "v1 not served: v1beta1 is read");
    src.parts[v1].sync = Sync::Synced;
    assert_eq!(src.build().reference_grants.len(), 0, "v1 served: it alone is read");
}

fn object(text: &str) -> DynamicObject {
    let v: serde_json::Value = serde_saphyr::from_str(text).unwrap();
    serde_json::from_value(v).unwrap()
}

fn index_of(src: &Source, name: &str) -> usize {
    src.parts.iter().position(|p| p.kind.name == name).unwrap()
}

/// The model moved event by event equals the one assembled from the watches, references included.
#[test]
fn events_move_the_model_as_a_rebuild_would() {
    let mut src = Source::new(&cfg());
    for i in 0..src.parts.len() {
        src.apply(i, Ok(watcher::Event::Init));
        src.apply(i, Ok(watcher::Event::InitDone));
    }
    let gw = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: a}\n\
              spec: {gatewayClassName: pier, listeners: [{name: h, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: c}]}}]}\n";
    let gw2 = gw.replace("name: c}", "name: d}");
    let secret = |n: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {n}, namespace: a}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: YQ==, tls.key: YQ==}}\n"
        )
    };
    let (g, s) = (index_of(&src, "Gateway"), index_of(&src, "Secret"));
    let steps: Vec<(usize, watcher::Event<DynamicObject>)> = vec![
        (s, watcher::Event::Apply(object(&secret("c")))),
        (g, watcher::Event::Apply(object(gw))),
        (s, watcher::Event::Apply(object(&secret("d")))),
        (g, watcher::Event::Apply(object(&gw2))),
        (g, watcher::Event::Delete(object(&gw2))),
        (s, watcher::Event::Delete(object(&secret("c")))),
    ];
    let check = |src: &mut Source| {
        src.published = true;
        if src.merged.is_none() {
            src.merged = Some(Merged::rebuild(src.build()));
        }
        src.trim(false);
        let built = src.build();
        let merged = src.merged.as_ref().unwrap();
        assert_eq!(merged.model(), &built);
        let refs: BTreeSet<Ref> = merged.referenced().cloned().collect();
        assert_eq!(refs, store::referenced(&built));
    };
    check(&mut src);
    for (i, ev) in steps {
        src.apply(i, Ok(ev));
        check(&mut src);
    }
    // The Gateway that referenced `d` is gone: its data is dropped, in the watch and the model.
    let d = ObjectKey::new("a", "d");
    assert!(src.parts[s].trimmed.contains(&d));
    assert!(
        src.merged
            .as_ref()
            .unwrap()
            .model()
            .secrets
            .peek(&d)
            .unwrap()
            .data
            .is_none()
    );
}
