//! The audit against planted mistakes: a check that stopped checking fails here.

use super::*;

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
