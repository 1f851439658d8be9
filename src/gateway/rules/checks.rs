//! Whether a rule can be served as written: its matches (paths, RE2 syntax) and Gateway API's bounds on
//! its backendRefs. A rule that fails is refused alone, so one tenant's rule never costs another tenant
//! the shared route configuration.

use super::super::spec::{self, PathKind};

/// Gateway API's own bounds on backendRefs (its CRD enforces them; files and older CRDs do not):
/// at most 16 per rule, each weight in 0..=1,000,000. Past them Envoy would refuse the whole route
/// configuration — every tenant's routes — once the weights sum beyond 2^32-1, so the rule is refused
/// alone instead.
pub(super) fn out_of_bounds(rule: &spec::Rule) -> Option<String> {
    const MAX_REFS: usize = 16;
    const MAX_WEIGHT: i32 = 1_000_000;
    if rule.backend_refs.len() > MAX_REFS {
        return Some(format!(
            "{} backendRefs; Gateway API allows at most {MAX_REFS} per rule",
            rule.backend_refs.len()
        ));
    }
    rule.backend_refs.iter().enumerate().find_map(|(i, br)| {
        let w = br.weight?;
        (!(0..=MAX_WEIGHT).contains(&w)).then(|| format!("backendRefs[{i}].weight {w} is outside 0..={MAX_WEIGHT}"))
    })
}

/// Why a rule's matches cannot be served as written, if they cannot (filters: `filters::parse`).
pub(super) fn unsupported(rule: &spec::Rule) -> Option<String> {
    for m in &rule.matches {
        let kind = m.path.as_ref().and_then(|p| p.kind);
        let value = m.path.as_ref().and_then(|p| p.value.as_deref());
        let regex = kind == Some(PathKind::RegularExpression);
        if let Some(v) = value
            && !regex
            && !v.starts_with('/')
        {
            return Some(format!("path {v:?} must start with '/'"));
        }
        let path = value.filter(|_| regex).map(|v| ("path", v));
        let headers = m
            .headers
            .iter()
            .filter(|h| h.regex)
            .map(|h| ("header", h.value.as_str()));
        let query = m
            .query_params
            .iter()
            .filter(|q| q.regex)
            .map(|q| ("query parameter", q.value.as_str()));
        let names = m.headers.iter().map(|h| ("header", &h.name));
        for (what, name) in names.chain(m.query_params.iter().map(|q| ("query parameter", &q.name))) {
            if name.is_empty() || name.len() > 256 || !name.bytes().all(super::super::filters::is_token_byte) {
                let shown: String = name.chars().take(64).collect();
                return Some(format!(
                    "{what} name {shown:?} is not an HTTP token of at most 256 characters"
                ));
            }
        }
        for (what, re) in path.into_iter().chain(headers).chain(query) {
            if let Some(why) = super::super::re2::problem(re) {
                return Some(format!("{what} {why}"));
            }
        }
    }
    None
}
