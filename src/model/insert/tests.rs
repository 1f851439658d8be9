use super::*;
use crate::model::yaml::parse;

fn objects(source: &str, text: &str) -> Vec<(DocRef, Object)> {
    parse(source, text).expect("test input parses").objects
}

const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n";

#[test]
fn duplicate_across_inputs_names_both_places_and_the_later_wins() {
    let mut builder = ModelBuilder::new();
    for (doc, obj) in objects("examples/a.yaml", SVC) {
        assert!(builder.insert(doc, obj).is_none());
    }
    let named_b = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {externalName: b}\n";
    let second = format!("---\n# c\n---\n{named_b}---\n{SVC}");
    let (doc, obj) = objects("examples/b.yaml", &second).remove(0);
    let dup = builder.insert(doc, obj).expect("a duplicate");
    assert_eq!(
        dup.to_string(),
        "Service shop/web is defined twice: examples/a.yaml document 0 and examples/b.yaml document 1; the later one (examples/b.yaml document 1) is used, as kubectl apply -f would leave it"
    );
    assert_eq!(dup.warning().source, "examples/b.yaml");
    let model = builder.finish();
    assert_eq!(model.services.len(), 1);
    let svc = model.services.get(&ObjectKey::new("shop", "web")).unwrap();
    assert_eq!(svc.spec.as_ref().unwrap().external_name.as_deref(), Some("b"));
}

#[test]
fn same_name_in_different_kinds_is_not_a_duplicate() {
    let text = "\
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: api}
spec: {type: ExternalHostname, port: {port: 443}, externalHostname: {hostname: api.example.com}}
---
apiVersion: gateway.networking.k8s.io/v1alpha1
kind: Backend
metadata: {name: api}
spec: {type: ExternalHostname, port: {port: 443}, externalHostname: {hostname: api.example.com}}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: api}
spec: {endpoints: [{fqdn: {hostname: api.example.com, port: 443}}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: api}
";
    let mut builder = ModelBuilder::new();
    for (doc, obj) in objects("k.yaml", text) {
        assert!(builder.insert(doc, obj).is_none());
    }
    assert_eq!(
        builder.origin("Namespace", &ObjectKey::cluster("api")),
        Some(&DocRef::new("k.yaml", 3))
    );
    let model = builder.finish();
    let key = ObjectKey::new("default", "api");
    assert!(model.xbackends.contains_key(&key));
    assert!(model.backends.contains_key(&key));
    assert!(model.eg_backends.contains_key(&key));
    assert!(model.namespaces.contains_key(&ObjectKey::cluster("api")));
}

#[test]
fn upsert_replaces() {
    let mut model = Model::default();
    let (_, obj) = objects("a", SVC).remove(0);
    assert!(!model.upsert(obj.clone()));
    assert!(model.upsert(obj));
    assert_eq!(model.services.len(), 1);
}
