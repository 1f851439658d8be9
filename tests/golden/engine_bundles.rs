//! ClusterTrustBundles followed incrementally: editing, emptying, deleting and restoring a bundle that a
//! BackendTLSPolicy and an XBackend both name — in `caCertificateRefs` or in `clusterTrustBundleRef` —
//! re-translates both (the engine learns the dependency from what they read), leaving the engine equal to
//! a rebuild at every step.

use pier::model::objects::Kind;
use pier::model::{Model, Object, ObjectKey};
use pier::options::Options;
use pier::translate::engine::Engine;

use super::engine::difference;

/// Cases whose policy and XBackend name the bundle [`NAME`]: in `caCertificateRefs`, then in
/// `clusterTrustBundleRef`.
const CASES: [&str; 2] = [
    "backendtlspolicy-cluster-trust-bundle",
    "backendtlspolicy-cluster-trust-bundle-ref",
];
const NAME: &str = "pier.dev:example:roots";

fn bundle(pem: &str) -> Object {
    let text = format!(
        "apiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {{name: {NAME:?}}}\n\
         spec: {{trustBundle: {pem:?}}}\n"
    );
    let parsed = pier::model::yaml::parse("bundle.yaml", &text).expect("the bundle parses");
    parsed.objects.into_iter().map(|(_, o)| o).next().expect("one bundle")
}

#[test]
fn cluster_trust_bundle_edits_are_followed_incrementally() {
    for case in CASES {
        follow_bundle_edits(case);
    }
}

fn follow_bundle_edits(case: &str) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let input = std::fs::read_to_string(format!("{dir}/{case}/input.yaml")).expect("the case's input");
    let opts = Options::default();
    let mut model: Model = pier::model::load::parse_texts(&[("input.yaml".into(), input)])
        .expect("the case parses")
        .model;
    let mut engine = Engine::with(model.clone(), opts.clone());
    let demo_ca = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/upstream-certs/ca.crt"))
        .expect("the demo CA");
    let key = ObjectKey::cluster(NAME);
    // `Some(bundle)`: written; `None`: deleted.
    let steps = [
        ("the bundle's CA changes", Some(bundle(&demo_ca))),
        ("the bundle is emptied", Some(bundle(""))),
        ("the bundle is deleted", None),
        ("the bundle is back", Some(bundle(&demo_ca))),
    ];
    for (what, edit) in steps {
        let before = engine.translation();
        match edit {
            Some(b) => {
                model.upsert(b);
            }
            None => {
                model.remove(Kind::ClusterTrustBundle, &key);
            }
        }
        engine.update(model.clone());
        if let Some(diff) = difference(&engine, &model, &opts) {
            panic!("{case}: after {what}:\n{diff}");
        }
        // Rendered (resources and statuses): emptied and deleted serve alike but say different things.
        assert_ne!(
            before.document(None).expect("renders"),
            engine.translation().document(None).expect("renders"),
            "{case}: {what}: the output changes"
        );
    }
}
