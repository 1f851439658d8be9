//! Kubernetes label selectors (`matchLabels` and `matchExpressions`), for `allowedRoutes` namespace
//! selectors.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Does `labels` satisfy `sel`? An empty selector matches everything, as in Kubernetes.
pub fn matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_ok = sel.match_labels.iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(&e.key),
            "DoesNotExist" => !labels.contains_key(&e.key),
            // An unknown operator selects nothing, rather than everything.
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn selector_semantics() {
        let labels: BTreeMap<String, String> = [("env".to_string(), "prod".to_string())].into();
        let req = |op: &str, vals: &[&str]| LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "env".into(),
                operator: op.into(),
                values: Some(vals.iter().map(|s| s.to_string()).collect()),
            }]),
            ..Default::default()
        };
        assert!(matches(&LabelSelector::default(), &labels));
        assert!(matches(&req("In", &["prod"]), &labels));
        assert!(!matches(&req("NotIn", &["prod"]), &labels));
        assert!(matches(&req("Exists", &[]), &labels));
        assert!(!matches(&req("DoesNotExist", &[]), &labels));
        assert!(!matches(&req("Bogus", &[]), &labels));
    }
}
