//! The PromQL side of the dashboard check: a small parser for the expressions the dashboard uses
//! (selectors, functions, grouping) and the checks each expression must pass against what pier exports.

use std::collections::BTreeSet;

use super::{COUNTER_FUNCTIONS, Exported, FUNCTIONS, GROUPING, KEYWORDS, TARGET_LABELS};

/// One `label op "value"` of a selector.
#[derive(Debug)]
pub(super) struct Matcher {
    pub(super) label: String,
    /// `=`, `!=`, `=~` or `!~`.
    pub(super) op: String,
    pub(super) value: String,
}

/// The matchers of a list (`a="x", b=~"y|z"`).
pub(super) fn matchers(list: &str) -> Result<Vec<Matcher>, String> {
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
pub(super) struct Selected {
    pub(super) metric: String,
    pub(super) matchers: Vec<Matcher>,
    /// The functions around it, outermost first.
    pub(super) within: Vec<String>,
}

/// What one expression reads.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) selected: Vec<Selected>,
    /// Labels named by `by (...)`, `without (...)`, `on (...)`, ...
    pub(super) grouping: Vec<String>,
}

/// Reads a PromQL expression as far as the checks need: metric names with their matchers and the
/// functions around them, grouping labels. Anything it does not know is an error.
pub(super) fn parse(expr: &str) -> Result<Parsed, String> {
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
pub(super) fn check(expr: &str, exported: &Exported) -> Vec<String> {
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
pub(super) fn check_variable(query: &str, exported: &Exported) -> Vec<String> {
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
