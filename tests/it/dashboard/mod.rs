//! The Grafana dashboard (`deploy/grafana/pier-dashboard.json`) and the metric reference
//! (`docs/operations.md`) name only what pier exports, and every family pier exports is on both.
//!
//! What pier exports: every `registry.register(...)` under `src/` (name, type from the field's declared
//! type, label names from its label struct), held against a real `/metrics` — pier's runtime in
//! Kubernetes mode (so the status writer's families are registered) with `--resolve-hostnames pier` (so
//! the resolver's are), after its first translation and one proxy's NACK. Every family on `/metrics`
//! must be registered with that type and those labels, and every registered family must be on
//! `/metrics` unless it is a labelled `Family` with no series yet (no refusal happened, no name was
//! looked up), which the encoder leaves out.
//!
//! Every PromQL expression of the dashboard (panel targets and template variables) is parsed: each
//! metric it selects must be a series of an exported family with the suffix the family's type gives it
//! (`_total` for a counter; `_bucket`, `_sum`, `_count` for a histogram); each label it matches or groups
//! by must be one of that family's (or `instance` / `job`, which Prometheus adds); each literal label
//! value one seen on `/metrics` or a string literal in `src/`. Counters and histogram series are read
//! only through `rate` / `irate` / `increase`, gauges never are, and `_bucket` only under
//! `histogram_quantile`. A self-test feeds the checks planted mistakes, so a check that stopped
//! checking fails too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::fake_apiserver::FakeApiServer;
use crate::kube_support::ads::Proxy;
use crate::kube_support::{GW, Pier, WAIT, base_model, settings};

mod promql;
use promql::{Matcher, check, check_variable, matchers, parse};

const DASHBOARD: &str = include_str!("../../../deploy/grafana/pier-dashboard.json");
const OPERATIONS: &str = include_str!("../../../docs/operations.md");

/// Labels Prometheus adds to every series it scrapes.
const TARGET_LABELS: [&str; 2] = ["instance", "job"];
/// PromQL functions and aggregations an expression may call.
const FUNCTIONS: [&str; 13] = [
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "topk",
    "rate",
    "irate",
    "increase",
    "histogram_quantile",
    "count_over_time",
    "max_over_time",
    "clamp_min",
];
/// Functions that read a counter's (or a histogram series') increase.
const COUNTER_FUNCTIONS: [&str; 3] = ["rate", "irate", "increase"];
/// Keywords followed by a list of label names.
const GROUPING: [&str; 6] = ["by", "without", "on", "ignoring", "group_left", "group_right"];
/// Other keywords.
const KEYWORDS: [&str; 5] = ["and", "or", "unless", "bool", "offset"];

/// One family pier registers.
#[derive(Debug, Default)]
struct Family {
    /// `counter`, `gauge` or `histogram`.
    kind: String,
    /// Its label names (`le` aside), from its label struct.
    labels: BTreeSet<String>,
    /// A `Family` of labelled series: not on `/metrics` until its first series exists.
    labelled: bool,
    /// Label values seen on `/metrics`.
    values: BTreeSet<String>,
}

/// What pier exports: its families, by the series names each gives.
struct Exported {
    families: BTreeMap<String, Family>,
    /// Series name → (family, suffix).
    series: BTreeMap<String, (String, &'static str)>,
    /// Every Rust file under `src/`, for string literals.
    sources: Vec<(String, String)>,
}

impl Exported {
    /// The families `sources` register (each `registry.register("name", "help", x.field.clone())`, with
    /// the declared type of `field` and the fields of its label struct), checked against `metrics`, a live
    /// `/metrics` in Prometheus text: every family there must be registered with the same type and labels,
    /// and every registered family must be there unless it is a `Family` with no series yet (the
    /// encoder leaves those out).
    fn new(metrics: &str, sources: Vec<(String, String)>) -> Result<Exported, String> {
        let register = regex::Regex::new(
            r#"registry\.register\(\s*"(pier_[a-z0-9_]+)",\s*"(?:[^"\\]|\\.)*",\s*\w+\.(\w+)\.clone\(\),?\s*\)"#,
        )
        .unwrap();
        let label_struct = |text: &str, name: &str| {
            let body = regex::Regex::new(&format!(r"(?s)struct\s+{name}\s*\{{(.*?)\}}")).unwrap();
            let field = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?(?:r#)?([a-z_][a-z0-9_]*)\s*:").unwrap();
            body.captures(text).map(|c| {
                field
                    .captures_iter(&c[1])
                    .map(|f| f[1].to_string())
                    .collect::<BTreeSet<_>>()
            })
        };
        let mut families: BTreeMap<String, Family> = BTreeMap::new();
        for (path, text) in &sources {
            let registered = register.captures_iter(text).collect::<Vec<_>>();
            if registered.len() != text.matches("registry.register(").count() {
                return Err(format!("{path}: a registry.register( call this test cannot read"));
            }
            for c in registered {
                let (name, field) = (&c[1], &c[2]);
                let decl = regex::Regex::new(&format!(
                    r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?{field}:\s*([A-Za-z][A-Za-z0-9_<>, ]*?)\s*,?\s*$"
                ))
                .unwrap();
                let ty = decl
                    .captures(text)
                    .map(|d| d[1].to_string())
                    .ok_or(format!("{path}: no declared type for {name}'s field {field}"))?;
                let kind = ["Histogram", "Counter", "Gauge"]
                    .into_iter()
                    .find(|k| ty.contains(k))
                    .ok_or(format!("{path}: {name} is a {ty}"))?
                    .to_lowercase();
                let mut family = Family {
                    kind,
                    ..Family::default()
                };
                if let Some(labels) = ty.strip_prefix("Family<") {
                    let name = labels.split(',').next().unwrap_or_default().trim();
                    family.labels = label_struct(text, name).ok_or(format!("{path}: no label struct {name}"))?;
                    family.labelled = true;
                }
                if families.insert(name.to_string(), family).is_some() {
                    return Err(format!("{name} is registered twice"));
                }
            }
        }
        let mut series = BTreeMap::new();
        for (name, f) in &families {
            let suffixes: &[&'static str] = match f.kind.as_str() {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            for s in suffixes {
                series.insert(format!("{name}{s}"), (name.clone(), *s));
            }
        }
        let mut live = BTreeSet::new();
        for line in metrics.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or(format!("cannot read {line:?}"))?;
                match families.get(name) {
                    Some(f) if f.kind == kind => live.insert(name.to_string()),
                    Some(f) => return Err(format!("{name} is a {kind} on /metrics, a {} in src/", f.kind)),
                    None => return Err(format!("{name} is on /metrics but registered nowhere in src/")),
                };
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let name_end = line.find(['{', ' ']).unwrap_or(line.len());
            let name = &line[..name_end];
            let (family, _) = series
                .get(name)
                .ok_or(format!("the sample {name} is of no registered family"))?;
            let f = families.get_mut(family).unwrap();
            if line[name_end..].starts_with('{') {
                let close = line.rfind('}').ok_or(format!("cannot read {line:?}"))?;
                for Matcher { label, value, .. } in matchers(&line[name_end + 1..close])? {
                    if label == "le" {
                        continue;
                    }
                    if !f.labels.contains(&label) {
                        return Err(format!("{name} has the label {label} on /metrics, not in src/"));
                    }
                    f.values.insert(value);
                }
            }
        }
        for (name, f) in &families {
            if !live.contains(name) && !f.labelled {
                return Err(format!("{name} is registered in src/ but not on /metrics"));
            }
        }
        Ok(Exported {
            families,
            series,
            sources,
        })
    }

    fn labels(&self, family: &str) -> &BTreeSet<String> {
        &self.families[family].labels
    }

    /// Whether pier produces `value` as a label value of `family`: seen on `/metrics`, or a string
    /// literal in `src/`.
    fn knows_value(&self, family: &str, value: &str) -> bool {
        self.families[family].values.contains(value)
            || self
                .sources
                .iter()
                .any(|(_, text)| text.contains(&format!("\"{value}\"")))
    }
}

/// Every expression of the dashboard: (where, expr, is a template variable).
fn expressions(dashboard: &Value) -> Vec<(String, String, bool)> {
    fn panels(list: &Value, out: &mut Vec<(String, String, bool)>) {
        for p in list.as_array().into_iter().flatten() {
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = t["expr"].as_str() {
                    let title = p["title"].as_str().unwrap_or_default();
                    let place = format!("panel {title:?} {}", t["refId"].as_str().unwrap_or_default());
                    out.push((place, expr.to_string(), false));
                }
            }
            panels(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    panels(&dashboard["panels"], &mut out);
    for v in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        let query = v["query"]["query"].as_str().or(v["query"].as_str());
        if let Some(q) = query {
            out.push((
                format!("variable {}", v["name"].as_str().unwrap_or_default()),
                q.to_string(),
                true,
            ));
        }
    }
    out
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

/// Everything wrong with the dashboard and with `docs/operations.md` against `exported`.
fn audit(dashboard: &Value, operations: &str, exported: &Exported) -> Vec<String> {
    let mut problems = Vec::new();
    let mut on_dashboard = BTreeSet::new();
    let exprs = expressions(dashboard);
    if exprs.is_empty() {
        problems.push("the dashboard has no expression".to_string());
    }
    for (place, expr, variable) in &exprs {
        let found = if *variable {
            check_variable(expr, exported)
        } else {
            check(expr, exported)
        };
        problems.extend(found.into_iter().map(|p| format!("{place}: {p}\n    in {expr}")));
        if !variable && let Ok(p) = parse(expr) {
            on_dashboard.extend(
                p.selected
                    .iter()
                    .filter_map(|s| exported.series.get(&s.metric))
                    .map(|s| s.0.clone()),
            );
        }
    }
    let in_docs: BTreeSet<String> = regex::Regex::new(r"\bpier_[a-z0-9_]*[a-z0-9]")
        .unwrap()
        .find_iter(operations)
        .map(|m| m.as_str().to_string())
        .collect();
    for name in &in_docs {
        if !exported.series.contains_key(name) && !exported.families.contains_key(name) {
            problems.push(format!("docs/operations.md names {name}, which pier does not export"));
        }
    }
    for family in exported.families.keys() {
        if !on_dashboard.contains(family) {
            problems.push(format!("{family} is exported but on no dashboard panel"));
        }
        if !in_docs
            .iter()
            .any(|n| exported.series.get(n).is_some_and(|s| &s.0 == family) || n == family)
        {
            problems.push(format!("{family} is exported but not in docs/operations.md"));
        }
    }
    problems
}

/// pier's `/metrics` in Kubernetes mode with `--resolve-hostnames pier`, after its first translation
/// and a proxy's NACK.
async fn live_metrics() -> String {
    let api = FakeApiServer::start(&[]).await;
    api.apply_yaml(&base_model());
    let mut options = pier::Options::default();
    options.guardrails.allow_loopback = true;
    options.resolution.mode = pier::options::ResolveMode::Pier;
    let pier = Pier::start_with(settings(&api, "dashboard", &[]), Duration::from_millis(30), options).await;
    let mut proxy = Proxy::clusters(pier.xds, GW).await;
    proxy.recv().await;
    proxy.nack("", "rejected by the dashboard test").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let metrics = loop {
        let text = pier::testkit::http::get(pier.admin, &pier.admin.to_string(), "/metrics")
            .await
            .expect("the admin API answers")
            .body;
        if pier.ready().await && text.contains("pier_xds_nacks_total{type=\"clusters\"}") {
            break text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no translation and NACK within {WAIT:?}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop(proxy);
    pier.stop().await;
    api.shutdown().await;
    metrics
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_the_operations_doc_name_only_what_pier_exports() {
    let metrics = live_metrics().await;
    // The status writer's and the resolver's families are registered in this mode.
    for family in ["# TYPE pier_status_leader gauge", "# TYPE pier_dns_stale_names gauge"] {
        assert!(metrics.contains(family), "{family} on /metrics:\n{metrics}");
    }
    let src = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let exported = Exported::new(&metrics, src).unwrap_or_else(|e| panic!("{e}\n/metrics:\n{metrics}"));
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    assert_eq!(dashboard["__inputs"][0]["name"], "DS_PROMETHEUS");
    let problems = audit(&dashboard, OPERATIONS, &exported);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[cfg(test)]
mod planted;
