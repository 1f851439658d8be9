//! The engine's incrementality: an update equals a rebuild. `translate()` (what the goldens pin) is the
//! engine run once from the empty model; these tests move an engine through each case one object at a
//! time, in both orders, and through random edit sequences drawn from every case's objects (added,
//! replaced by another object with the same kind and key, deleted). After each step its resources and
//! statuses must equal an engine built from scratch on the same model, and so must its resource
//! versions: versions depend on content only, never on the path that led there.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use pier::model::objects::Kind;
use pier::model::{Model, Object, ObjectKey};
use pier::options::Options;
use pier::snapshot::decode;
use pier::translate::engine::Engine;
use pier::translate::engine::check::GatewayCheck;
use proptest::prelude::*;

use super::cases::{Resolutions, cases, options, resolutions};

/// Every object of every case, and each case's objects and options.
struct Pool {
    objects: Vec<Object>,
    /// Every case's resolutions (what pier's resolver said about a name).
    resolutions: Resolutions,
    cases: Vec<Case>,
}

struct Case {
    name: String,
    objects: Vec<usize>,
    options: Options,
    resolutions: Resolutions,
}

impl Case {
    /// The case's model: its objects and resolutions.
    fn model(&self) -> Model {
        let mut model = Model::default();
        for &i in &self.objects {
            model.upsert(pool().objects[i].clone());
        }
        super::cases::resolve(&mut model, &self.resolutions);
        model
    }
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut pool = Pool {
            objects: Vec::new(),
            resolutions: Vec::new(),
            cases: Vec::new(),
        };
        for dir in cases() {
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(dir.join("input.yaml")).expect("read input");
            let parsed = pier::model::yaml::parse(&name, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let first = pool.objects.len();
            pool.objects.extend(parsed.objects.into_iter().map(|(_, o)| o));
            let resolved = resolutions(&dir);
            pool.resolutions.extend(resolved.iter().cloned());
            pool.cases.push(Case {
                name,
                objects: (first..pool.objects.len()).collect(),
                options: options(&dir),
                resolutions: resolved,
            });
        }
        pool
    })
}

/// Where the engine and a rebuild (`translate()`, the engine from empty) first differ, as a readable diff of the rendered
/// documents.
pub(crate) fn difference(engine: &Engine, model: &Model, opts: &Options) -> Option<String> {
    let expected = pier::translate(model, opts);
    let actual = engine.translation();
    if actual == expected {
        return None;
    }
    let render = |t: &pier::Translation| {
        let mut text = String::new();
        for gw in t.gateways.keys() {
            let doc = t.document(Some(gw)).expect("one Gateway");
            text.push_str(&format!(
                "# Gateway {gw}\n{}\n",
                serde_json::to_string_pretty(&doc).unwrap()
            ));
        }
        text.push_str(&serde_json::to_string_pretty(&t.statuses).unwrap());
        text
    };
    let diff = similar::TextDiff::from_lines(&render(&expected), &render(&actual))
        .unified_diff()
        .context_radius(4)
        .header("rebuilt", "updated")
        .to_string();
    Some(if diff.is_empty() {
        "the translations differ in a way their rendering does not show".to_string()
    } else {
        diff
    })
}

/// The first packed resource that differs between two engines (by version).
pub(crate) fn packed_difference(incremental: &Engine, scratch: &Engine) -> Option<String> {
    use pier::snapshot::{GatewayOut, Res};
    type Map = imbl::OrdMap<String, std::sync::Arc<Res>>;
    let a: Vec<_> = incremental.gateways().collect();
    let b: Vec<_> = scratch.gateways().collect();
    let gws = |v: &[(&ObjectKey, &GatewayOut)]| v.iter().map(|(k, _)| k.to_string()).collect::<Vec<_>>();
    if gws(&a) != gws(&b) {
        return Some(format!("Gateways {:?} against {:?} from scratch", gws(&a), gws(&b)));
    }
    for ((gw, x), (_, y)) in a.iter().zip(&b) {
        let types: [(&str, &Map, &Map); 5] = [
            ("cluster", &x.clusters, &y.clusters),
            ("endpoints", &x.endpoints, &y.endpoints),
            ("listener", &x.listeners, &y.listeners),
            ("route configuration", &x.routes, &y.routes),
            ("secret", &x.secrets, &y.secrets),
        ];
        for (kind, m, n) in types {
            for (name, r) in m.iter() {
                match n.get(name) {
                    None => return Some(format!("Gateway {gw}: {kind} {name} is not there from scratch")),
                    Some(s) if s.version != r.version => {
                        return Some(format!(
                            "Gateway {gw}: {kind} {name} has version {} against {} from scratch",
                            r.version, s.version
                        ));
                    }
                    _ => {}
                }
            }
            if let Some(name) = n.keys().find(|k| !m.contains_key(*k)) {
                return Some(format!("Gateway {gw}: {kind} {name} is missing (there from scratch)"));
            }
        }
    }
    None
}

/// Each case reached one object at a time, in the input's order and in reverse, equals the case
/// translated at once: every intermediate model is a valid input, so the engine may never carry a
/// leftover from an earlier step into the end result.
#[test]
fn each_case_built_one_object_at_a_time_equals_a_rebuild() {
    let mut failures = Vec::new();
    for case in &pool().cases {
        let full = case.model();
        for (order, objects) in [
            ("in order", case.objects.clone()),
            ("reversed", case.objects.iter().rev().copied().collect()),
        ] {
            let mut engine = Engine::new(case.options.clone());
            let mut model = Model::default();
            super::cases::resolve(&mut model, &case.resolutions);
            for i in objects {
                model.upsert(pool().objects[i].clone());
                engine.update(model.clone());
            }
            if let Some(diff) = difference(&engine, &full, &case.options) {
                failures.push(format!("{} ({order}):\n{diff}", case.name));
            } else if let Some(diff) = packed_difference(&engine, &Engine::with(full.clone(), case.options.clone())) {
                failures.push(format!("{} ({order}): {diff}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[derive(Debug, Clone)]
enum Edit {
    /// Puts the pool object at this index (modulo), replacing one with the same kind and key.
    Put(usize),
    /// Deletes the model's object at this index (modulo) of all its objects.
    Delete(usize),
    /// Sets the pool resolution at this index (modulo), or removes that name's when it is already set
    /// so: what the resolver stage does when an answer changes, fails, or a name is no longer used.
    Resolve(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => any::<usize>().prop_map(Edit::Put),
        2 => any::<usize>().prop_map(Edit::Delete),
        1 => any::<usize>().prop_map(Edit::Resolve),
    ]
}

/// Every object of the model by kind and key.
fn present(model: &Model) -> Vec<(Kind, ObjectKey)> {
    fn keys<T: pier::model::objects::ModelKind>(
        out: &mut Vec<(Kind, ObjectKey)>,
        map: &pier::model::objects::Objects<T>,
    ) {
        out.extend(map.keys().map(|k| (T::KIND, k.clone())));
    }
    let mut out = Vec::new();
    keys(&mut out, &model.gateway_classes);
    keys(&mut out, &model.gateways);
    keys(&mut out, &model.http_routes);
    keys(&mut out, &model.grpc_routes);
    keys(&mut out, &model.reference_grants);
    keys(&mut out, &model.backend_tls_policies);
    keys(&mut out, &model.xbackends);
    keys(&mut out, &model.backends);
    keys(&mut out, &model.eg_backends);
    keys(&mut out, &model.services);
    keys(&mut out, &model.endpoint_slices);
    keys(&mut out, &model.secrets);
    keys(&mut out, &model.config_maps);
    keys(&mut out, &model.cluster_trust_bundles);
    keys(&mut out, &model.namespaces);
    out
}

/// The serve pipeline's check, fed each Gateway's changes, against a fresh check of its decoded
/// resources (the property test in `envoy::check` covers broken inputs; this one covers real output).
pub(crate) fn check_difference(engine: &Engine, checks: &mut BTreeMap<String, GatewayCheck>) -> Option<String> {
    let strings = |r: Result<(), Vec<pier::envoy::CheckError>>| -> Vec<String> {
        r.err().unwrap_or_default().iter().map(ToString::to_string).collect()
    };
    checks.retain(|name, _| engine.gateways().any(|(k, _)| k.to_string() == *name));
    for (key, gw) in engine.gateways() {
        let kept = strings(checks.entry(key.to_string()).or_default().check(gw));
        let fresh = strings(pier::envoy::check(&decode(gw)));
        if kept != fresh {
            return Some(format!(
                "Gateway {key}: incremental check {kept:?}, fresh check {fresh:?}"
            ));
        }
    }
    None
}

fn apply(model: &mut Model, edit: &Edit) -> String {
    let pool = pool();
    match edit {
        Edit::Put(i) => {
            let obj = pool.objects[i % pool.objects.len()].clone();
            let what = format!("put {} {}", obj.kind_name(), obj.key());
            model.upsert(obj);
            what
        }
        Edit::Resolve(i) if pool.resolutions.is_empty() => format!("resolve {i} (no resolution in any case)"),
        Edit::Resolve(i) => {
            let (name, r) = &pool.resolutions[i % pool.resolutions.len()];
            let key = pier::model::resolution::key(name);
            if model.resolutions.get(&key).is_some_and(|old| old == r) {
                model.remove(Kind::Resolution, &key);
                format!("unresolve {name}")
            } else {
                model.set_resolution(name, r.clone());
                format!("resolve {name} to {r:?}")
            }
        }
        Edit::Delete(i) => {
            let all = present(model);
            if all.is_empty() {
                return "delete (nothing left)".into();
            }
            let (kind, key) = &all[i % all.len()];
            model.remove(*kind, key);
            format!("delete {kind:?} {key}")
        }
    }
}

fn cases_to_run() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases_to_run(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn engine_follows_random_edits_exactly(start in any::<usize>(), edits in prop::collection::vec(edit(), 1..24)) {
        let pool = pool();
        let case = &pool.cases[start % pool.cases.len()];
        let mut model = case.model();
        let opts = case.options.clone();
        let mut engine = Engine::with(model.clone(), opts.clone());
        let mut steps = vec![format!("start from {}", case.name)];
        let mut checks = BTreeMap::new();
        if let Some(what) = check_difference(&engine, &mut checks) {
            prop_assert!(false, "{}: {what}", steps[0]);
        }
        for e in &edits {
            steps.push(apply(&mut model, e));
            engine.update(model.clone());
            if let Some(diff) = difference(&engine, &model, &opts) {
                prop_assert!(false, "after {}:\n{diff}", steps.join(", "));
            }
            let fresh = Engine::with(model.clone(), opts.clone());
            if let Some(what) = packed_difference(&engine, &fresh) {
                prop_assert!(false, "after {}: {what}", steps.join(", "));
            }
            if let Some(what) = check_difference(&engine, &mut checks) {
                prop_assert!(false, "after {}: {what}", steps.join(", "));
            }
        }
    }
}

/// Services `a` and `b` in one namespace, each routed to, and three EndpointSlices whose
/// `kubernetes.io/service-name` labels are `labels` (`None`: unlabelled), added in `order`.
fn slices_model(labels: [Option<&str>; 3], order: [usize; 3]) -> Model {
    let mut text = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\nspec: {controllerName: pier.dev/gateway-controller}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec: {gatewayClassName: pier, listeners: [{name: http, protocol: HTTP, port: 8080}]}\n",
    );
    for svc in ["a", "b"] {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {svc}, namespace: ns}}\nspec: {{ports: [{{name: http, port: 80}}]}}\n\
             ---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {svc}, namespace: ns}}\n\
             spec: {{parentRefs: [{{name: gw}}], hostnames: [{svc}.example.com], rules: [{{backendRefs: [{{name: {svc}, port: 80}}]}}]}}\n"
        ));
    }
    let mut model = parse(&text);
    let slices = slices(labels);
    for i in order {
        model.upsert(slices[i].clone());
    }
    model
}

/// The three slices, labelled.
fn slices(labels: [Option<&str>; 3]) -> Vec<Object> {
    let text: String = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let labels = label.map_or(String::new(), |s| format!(", labels: {{kubernetes.io/service-name: {s}}}"));
            format!(
                "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: s{i}, namespace: ns{labels}}}\n\
                 addressType: IPv4\nports: [{{name: http, port: 8080}}]\nendpoints: [{{addresses: [10.0.0.{}]}}, {{addresses: [10.0.1.{}]}}]\n",
                9 - i,
                i + 1
            )
        })
        .collect();
    let parsed = pier::model::yaml::parse("slices.yaml", &text).expect("the slices parse");
    parsed.objects.into_iter().map(|(_, o)| o).collect()
}

fn parse(text: &str) -> Model {
    let loaded = pier::model::load::parse_texts(&[("slices.yaml".to_string(), text.to_string())]);
    loaded.expect("the model parses").model
}

/// Finding a Service's endpoints reads "the slices of Service X" (the model's index by label), and the
/// engine records that read: relabelling slices in place retranslates the users of the Services a slice
/// left and joined, matching a rebuild; and endpoint order never depends on the order slices
/// arrived in.
#[test]
fn endpoint_slices_follow_their_service_label_incrementally() {
    let opts = Options::default();
    let steps: [[Option<&str>; 3]; 5] = [
        [Some("a"), Some("b"), Some("a")],
        [Some("b"), Some("b"), Some("a")],
        [Some("b"), None, Some("b")],
        [Some("a"), Some("a"), Some("a")],
        [None, None, None],
    ];
    let mut model = slices_model(steps[0], [0, 1, 2]);
    let mut engine = Engine::with(model.clone(), opts.clone());
    for labels in &steps[1..] {
        let before = engine.translation();
        // Only the slices change: everything else keeps its identity, as in a real edit.
        for slice in slices(*labels) {
            model.upsert(slice);
        }
        engine.update(model.clone());
        assert!(
            engine.translation() != before,
            "{labels:?}: the engine changed no endpoints"
        );
        if let Some(diff) = difference(&engine, &model, &opts) {
            panic!("after labels {labels:?}:\n{diff}");
        }
        let fresh = Engine::with(model.clone(), opts.clone());
        if let Some(what) = packed_difference(&engine, &fresh) {
            panic!("after labels {labels:?}: {what}");
        }
        let reordered = slices_model(*labels, [2, 0, 1]);
        let same = pier::translate(&reordered, &opts) == pier::translate(&model, &opts);
        assert!(same, "{labels:?}: endpoints depend on the order slices arrived in");
    }
}

/// In the cases where pier resolves hostnames, every change of an answer (a new answer, a lookup that
/// fails, a name no longer resolved) retranslates exactly the Backends that use the name: after each,
/// the engine equals an engine built from scratch.
#[test]
fn resolutions_are_followed_incrementally() {
    let pool = pool();
    let resolving = pool
        .cases
        .iter()
        .filter(|c| c.options.resolution.mode == pier::options::ResolveMode::Pier);
    let mut ran = 0;
    for case in resolving {
        let mut model = case.model();
        let mut engine = Engine::with(model.clone(), case.options.clone());
        let mut steps = Vec::new();
        for i in 0..pool.resolutions.len() * 2 {
            steps.push(apply(&mut model, &Edit::Resolve(i * 7)));
            engine.update(model.clone());
            if let Some(diff) = difference(&engine, &model, &case.options) {
                panic!("{} after {}:\n{diff}", case.name, steps.join(", "));
            }
            let fresh = Engine::with(model.clone(), case.options.clone());
            if let Some(what) = packed_difference(&engine, &fresh) {
                panic!("{} after {}: {what}", case.name, steps.join(", "));
            }
        }
        ran += 1;
    }
    assert!(
        ran > 0 || std::env::var("CASE").is_ok(),
        "no golden case resolves hostnames with pier"
    );
}
