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

const DASHBOARD: &str = include_str!("../../deploy/grafana/pier-dashboard.json");
const OPERATIONS: &str = include_str!("../../docs/operations.md");

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

/// One `label op "value"` of a selector.
#[derive(Debug)]
struct Matcher {
    label: String,
    /// `=`, `!=`, `=~` or `!~`.
    op: String,
    value: String,
}

/// The matchers of a list (`a="x", b=~"y|z"`).
fn matchers(list: &str) -> Result<Vec<Matcher>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = list.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
            i += 1;
        }
        if i == chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        let label: String = chars[start..i].iter().collect();
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let op_start = i;
        while i < chars.len() && "=!~".contains(chars[i]) {
            i += 1;
        }
        let op: String = chars[op_start..i].iter().collect();
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if label.is_empty() || !["=", "!=", "=~", "!~"].contains(&op.as_str()) || chars.get(i) != Some(&'"') {
            return Err(format!("cannot read the matchers {{{list}}}"));
        }
        i += 1;
        let mut value = String::new();
        while i < chars.len() && chars[i] != '"' {
            if chars[i] == '\\' {
                i += 1;
            }
            if let Some(&c) = chars.get(i) {
                value.push(c);
            }
            i += 1;
        }
        if i == chars.len() {
            return Err(format!("unterminated string in {{{list}}}"));
        }
        i += 1;
        out.push(Matcher { label, op, value });
    }
    Ok(out)
}

/// A metric an expression selects.
#[derive(Debug)]
struct Selected {
    metric: String,
    matchers: Vec<Matcher>,
    /// The functions around it, outermost first.
    within: Vec<String>,
}

/// What one expression reads.
#[derive(Debug, Default)]
struct Parsed {
    selected: Vec<Selected>,
    /// Labels named by `by (...)`, `without (...)`, `on (...)`, ...
    grouping: Vec<String>,
}

/// Reads a PromQL expression as far as the checks need: metric names with their matchers and the
/// functions around them, grouping labels. Anything it does not know is an error.
fn parse(expr: &str) -> Result<Parsed, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut parsed = Parsed::default();
    // Open parentheses: the function each belongs to (`None`: plain grouping).
    let mut open: Vec<Option<String>> = Vec::new();
    // A function whose `(` is still to come (`sum by (le) (...)`).
    let mut pending: Option<String> = None;
    let skip_spaces = |mut j: usize| {
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        j
    };
    // The index just past the `close` that ends what starts at `from`.
    let past = |from: usize, close: char| {
        chars[from..]
            .iter()
            .position(|&c| c == close)
            .map(|p| from + p + 1)
            .ok_or(format!("no {close} closes what starts at {from}"))
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if pending.is_some() && c != '(' && !c.is_ascii_alphabetic() {
            return Err(format!("{} without arguments", pending.unwrap_or_default()));
        }
        if "+-*/%^=!<>,".contains(c) {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c == '[' {
            i = past(i, ']')?;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '(' {
            open.push(pending.take());
            i += 1;
        } else if c == ')' {
            open.pop().ok_or("unbalanced )")?;
            i += 1;
        } else if c == '{' {
            return Err("a selector without a metric name".into());
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after = skip_spaces(i);
            if GROUPING.contains(&word.as_str()) {
                if chars.get(after) == Some(&'(') {
                    let end = past(after, ')')?;
                    let list: String = chars[after + 1..end - 1].iter().collect();
                    parsed.grouping.extend(
                        list.split(',')
                            .map(str::trim)
                            .filter(|l| !l.is_empty())
                            .map(str::to_string),
                    );
                    i = end;
                }
            } else if KEYWORDS.contains(&word.as_str()) {
                // Nothing to check.
            } else if pending.is_some() {
                return Err(format!("{} without arguments", pending.unwrap_or_default()));
            } else if FUNCTIONS.contains(&word.as_str()) {
                pending = Some(word);
            } else if chars.get(after) == Some(&'(') {
                return Err(format!("unknown function {word}"));
            } else {
                let mut selected = Selected {
                    metric: word,
                    matchers: Vec::new(),
                    within: open.iter().flatten().cloned().collect(),
                };
                if chars.get(after) == Some(&'{') {
                    let end = past(after, '}')?;
                    let list: String = chars[after + 1..end - 1].iter().collect();
                    selected.matchers = matchers(&list)?;
                    i = end;
                }
                parsed.selected.push(selected);
            }
        } else if c == '$' {
            return Err("a Grafana variable outside a matcher or a range".into());
        } else {
            return Err(format!("unexpected {c:?}"));
        }
    }
    if let Some(f) = pending {
        return Err(format!("{f} without arguments"));
    }
    if !open.is_empty() {
        return Err("unclosed (".into());
    }
    Ok(parsed)
}

/// Everything wrong with `expr` against what pier exports.
fn check(expr: &str, exported: &Exported) -> Vec<String> {
    let parsed = match parse(expr) {
        Ok(p) => p,
        Err(e) => return vec![e],
    };
    let mut problems = Vec::new();
    if parsed.selected.is_empty() {
        problems.push("selects no metric".to_string());
    }
    let mut labels_in_scope: BTreeSet<String> = TARGET_LABELS.iter().map(|l| l.to_string()).collect();
    for s in &parsed.selected {
        let Some((family, suffix)) = exported.series.get(&s.metric) else {
            let hint = match exported.series.get(&format!("{}_total", s.metric)) {
                Some(_) => format!(" (a counter: {}_total)", s.metric),
                None => String::new(),
            };
            problems.push(format!("{} is no series pier exports{hint}", s.metric));
            continue;
        };
        let f = &exported.families[family];
        let labels = exported.labels(family);
        labels_in_scope.extend(labels.iter().cloned());
        if *suffix == "_bucket" {
            labels_in_scope.insert("le".to_string());
        }
        for Matcher { label, op, value } in &s.matchers {
            let known = labels.contains(label)
                || TARGET_LABELS.contains(&label.as_str())
                || (label == "le" && *suffix == "_bucket");
            if !known {
                problems.push(format!("{} has no label {label} (it has {labels:?})", s.metric));
                continue;
            }
            if TARGET_LABELS.contains(&label.as_str()) || value.contains('$') || label == "le" {
                continue;
            }
            let literals: Vec<&str> = match op.as_str() {
                "=" | "!=" => vec![value.as_str()],
                _ => value
                    .split('|')
                    .filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)))
                    .collect(),
            };
            for v in literals {
                if !exported.knows_value(family, v) {
                    problems.push(format!("{}: pier never sets {label}=\"{v}\"", s.metric));
                }
            }
        }
        let counted = f.kind == "counter" || f.kind == "histogram";
        let via_increase = s.within.iter().any(|w| COUNTER_FUNCTIONS.contains(&w.as_str()));
        if counted && !via_increase {
            problems.push(format!(
                "{} is a {} series: read it through rate() or increase()",
                s.metric, f.kind
            ));
        }
        if !counted && via_increase {
            problems.push(format!(
                "{} is a {}: rate() and increase() are for counters",
                s.metric, f.kind
            ));
        }
        if *suffix == "_bucket" && !s.within.iter().any(|w| w == "histogram_quantile") {
            problems.push(format!("{} outside histogram_quantile()", s.metric));
        }
    }
    for label in &parsed.grouping {
        if !labels_in_scope.contains(label) {
            problems.push(format!("groups by {label}, a label of none of the metrics it reads"));
        }
    }
    problems
}

/// A template variable's query: `label_values(SELECTOR, LABEL)` is checked as SELECTOR with a
/// `by (LABEL)`; anything else as PromQL.
fn check_variable(query: &str, exported: &Exported) -> Vec<String> {
    let Some(args) = query
        .trim()
        .strip_prefix("label_values(")
        .and_then(|q| q.strip_suffix(')'))
    else {
        return check(query, exported);
    };
    match args.rsplit_once(',') {
        Some((selector, label)) => check(&format!("max by ({}) ({selector})", label.trim()), exported),
        None => vec![format!("label_values({args}) reads no metric")],
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

/// A metrics module as pier writes them, for the self-test.
const PLANTED_SOURCE: &str = r#"
#[derive(Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TypeLabels {
    r#type: &'static str,
}
#[derive(Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}
struct M {
    pushes: Family<TypeLabels, Counter>,
    refused: Family<ReasonLabels, Counter>,
    took: Histogram,
    up: Gauge,
}
fn new(registry: &mut Registry) {
    registry.register("pier_pushes", "Pushes", m.pushes.clone());
    registry.register("pier_refused", "Refused, by reason", m.refused.clone());
    registry.register("pier_took", "Time", m.took.clone());
    registry.register(
        "pier_up",
        "Up",
        m.up.clone(),
    );
}
const SEEN: [&str; 2] = ["clusters", "too-many"];
"#;

/// `/metrics` of [`PLANTED_SOURCE`]: `pier_refused` has no series yet, so it is left out.
const PLANTED_METRICS: &str = "# HELP pier_pushes Pushes.\n# TYPE pier_pushes counter\npier_pushes_total{type=\"clusters\"} 1\n\
    # HELP pier_took Time.\n# TYPE pier_took histogram\npier_took_sum 0.5\npier_took_count 1\npier_took_bucket{le=\"+Inf\"} 1\n\
    # HELP pier_up Up.\n# TYPE pier_up gauge\npier_up 1\n# EOF\n";

/// The checks find planted mistakes (on a fixed source file and exposition: no server).
#[test]
fn the_audit_finds_planted_mistakes() {
    let planted = || vec![("planted.rs".to_string(), PLANTED_SOURCE.to_string())];
    let exported = Exported::new(PLANTED_METRICS, planted()).unwrap();
    assert_eq!(exported.families.len(), 4);
    assert_eq!(
        exported.families["pier_refused"].labels,
        BTreeSet::from(["reason".to_string()])
    );
    assert_eq!(exported.families["pier_took"].kind, "histogram");

    // /metrics and the source must agree.
    let unregistered = format!("{PLANTED_METRICS}# TYPE pier_other gauge\npier_other 1\n");
    let missing = PLANTED_METRICS
        .replace("pier_up 1\n", "")
        .replace("# TYPE pier_up gauge\n", "");
    let relabelled = PLANTED_METRICS.replace("{type=", "{kind=");
    for (text, want) in [
        (
            unregistered.as_str(),
            "pier_other is on /metrics but registered nowhere in src/",
        ),
        (missing.as_str(), "pier_up is registered in src/ but not on /metrics"),
        (
            relabelled.as_str(),
            "pier_pushes_total has the label kind on /metrics, not in src/",
        ),
    ] {
        let err = Exported::new(text, planted()).err().unwrap_or_default();
        assert!(err.contains(want), "wanted {want:?}, found {err:?}");
    }

    let ok = [
        r#"sum by (type) (rate(pier_pushes_total{type="clusters", instance=~"$instance"}[5m]))"#,
        r#"sum by (reason) (increase(pier_refused_total{reason=~"too-many|clusters"}[1h]))"#,
        r#"histogram_quantile(0.9, sum by (le) (rate(pier_took_bucket[$__rate_interval])))"#,
        r#"sum(rate(pier_took_sum[5m])) / sum(rate(pier_took_count[5m]))"#,
        r#"max by (job) (pier_up{job=~"$job"})"#,
    ];
    for expr in ok {
        assert_eq!(check(expr, &exported), Vec::<String>::new(), "{expr}");
    }
    assert!(check_variable("label_values(pier_up, instance)", &exported).is_empty());
    let bad = [
        (
            "rate(pier_pushs_total[5m])",
            "pier_pushs_total is no series pier exports",
        ),
        ("rate(pier_pushes[5m])", "(a counter: pier_pushes_total)"),
        (r#"rate(pier_pushes_total{kind="x"}[5m])"#, "has no label kind"),
        (
            r#"rate(pier_pushes_total{type="clusterz"}[5m])"#,
            "never sets type=\"clusterz\"",
        ),
        (
            r#"rate(pier_refused_total{reason=~"too-many|too-few"}[5m])"#,
            "never sets reason=\"too-few\"",
        ),
        ("sum by (reason) (rate(pier_pushes_total[5m]))", "groups by reason"),
        ("sum(pier_pushes_total)", "read it through rate()"),
        ("rate(pier_up[5m])", "rate() and increase() are for counters"),
        ("sum(rate(pier_took_bucket[5m]))", "outside histogram_quantile()"),
        (
            "histogram_quantile(0.9, rate(pier_took[5m]))",
            "pier_took is no series pier exports",
        ),
        (
            "quantile_over_tim(0.9, pier_up[5m])",
            "unknown function quantile_over_tim",
        ),
        ("vector(1)", "unknown function vector"),
        ("1", "selects no metric"),
        ("sum by (le) pier_up", "sum without arguments"),
    ];
    for (expr, want) in bad {
        let found = check(expr, &exported).join("; ");
        assert!(found.contains(want), "{expr}: wanted {want:?}, found {found:?}");
    }

    // The whole audit: a panel reading a misspelled metric, a variable a misspelled label, a doc naming a
    // metric that does not exist, and families on no panel or not in the doc.
    let dashboard = serde_json::json!({
        "panels": [{"type": "row", "panels": [{"title": "t", "targets": [
            {"refId": "A", "expr": "sum(rate(pier_pushes_total[5m]))"},
            {"refId": "B", "expr": "max(pier_upp)"}]}]}],
        "templating": {"list": [{"name": "instance", "query": {"query": "label_values(pier_up, instanse)"}}]}
    });
    let doc = "`pier_pushes_total`, `pier_refused_total{reason}`, `pier_up`, `pier_dwon`";
    let problems = audit(&dashboard, doc, &exported).join("\n");
    for want in [
        "panel \"t\" B: pier_upp is no series pier exports",
        "variable instance: groups by instanse",
        "docs/operations.md names pier_dwon",
        "pier_refused is exported but on no dashboard panel",
        "pier_took is exported but on no dashboard panel",
        "pier_up is exported but on no dashboard panel",
        "pier_took is exported but not in docs/operations.md",
    ] {
        assert!(problems.contains(want), "wanted {want:?} in:\n{problems}");
    }
    assert!(!problems.contains("pier_pushes is exported"), "{problems}");
    assert!(!problems.contains("pier_refused is exported but not in"), "{problems}");
}
