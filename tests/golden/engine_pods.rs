//! Pods (EndpointSelector `matchLabels`) followed incrementally: each Pod edit — a new Pod, one becoming
//! ready, unready, relabelled, deleted, being deleted — leaves the engine equal to a rebuild.

use pier::model::objects::Kind;
use pier::model::{Model, ObjectKey};
use pier::options::Options;
use pier::translate::engine::Engine;

use super::engine::difference;

const BASE: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\nspec: {controllerName: pier.dev/gateway-controller}\n---\n\
apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec: {gatewayClassName: pier, listeners: [{name: http, protocol: HTTP, port: 8080}]}\n---\n\
apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: echo, namespace: ns}\nspec: {type: EndpointSelector, endpointSelector: {matchLabels: {app: echo}}, port: {number: 8080}}\n---\n\
apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n\
spec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: echo}]}]}\n";

fn pod(name: &str, app: &str, ip: &str, ready: bool, deleting: bool) -> pier::model::Object {
    let del = if deleting {
        ", deletionTimestamp: \"2026-01-01T00:00:00Z\""
    } else {
        ""
    };
    let text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns, labels: {{app: {app}}}{del}}}\n\
         status: {{podIPs: [{{ip: {ip}}}], conditions: [{{type: Ready, status: \"{}\"}}]}}\n",
        if ready { "True" } else { "False" }
    );
    let parsed = pier::model::yaml::parse("pods.yaml", &text).expect("the pod parses");
    parsed.objects.into_iter().map(|(_, o)| o).next().expect("one pod")
}

#[test]
fn pod_edits_are_followed_incrementally() {
    let opts = Options::default();
    let mut model: Model = pier::model::load::parse_texts(&[("base.yaml".into(), BASE.into())])
        .expect("the model parses")
        .model;
    let mut engine = Engine::with(model.clone(), opts.clone());
    // `Some(pod)`: the Pod is written; `None`: Pod `a` is removed.
    let steps = [
        ("a appears unready", Some(pod("a", "echo", "10.0.0.1", false, false))),
        ("a becomes ready", Some(pod("a", "echo", "10.0.0.1", true, false))),
        ("b appears ready", Some(pod("b", "echo", "10.0.0.2", true, false))),
        ("a becomes unready", Some(pod("a", "echo", "10.0.0.1", false, false))),
        ("b is relabelled", Some(pod("b", "other", "10.0.0.2", true, false))),
        ("a is being deleted", Some(pod("a", "echo", "10.0.0.1", true, true))),
        ("a disappears", None),
    ];
    for (what, edit) in steps {
        match edit {
            Some(p) => {
                model.upsert(p);
            }
            None => {
                model.remove(Kind::Pod, &ObjectKey::new("ns", "a"));
            }
        }
        engine.update(model.clone());
        if let Some(diff) = difference(&engine, &model, &opts) {
            panic!("after {what}:\n{diff}");
        }
    }
}
