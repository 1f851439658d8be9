//! Per-backendRef filters (`rules[].backendRefs[].filters`).
//!
//! Envoy can change request and response headers per weighted cluster (`ClusterWeight.
//! request_headers_to_add` / `_remove`, `response_headers_to_add` / `_remove`), so `RequestHeaderModifier`
//! and `ResponseHeaderModifier` stay per backend however many backendRefs the rule has. Nothing else can
//! be per cluster: a redirect, a URL rewrite, a mirror or a CORS policy is a property of the whole route.
//! When the rule has exactly one backendRef, its other filters are the same as the rule's (every request
//! of the rule goes to that backend), so they are lifted to the rule — which is how the upstream
//! conformance tests `HTTPRouteBackendRequestRedirect` and `HTTPRouteBackendURLRewrite` use them. With
//! several backendRefs such a filter is refused (the rule is dropped, `PartiallyInvalid`), rather than
//! applied to every backend's share — except `ExtensionRef`, which must never be skipped: it is lifted
//! too, so the whole rule fails closed (500) as an unresolved extension filter requires. Envoy Gateway
//! makes the same split for header modifiers.

use crate::gateway::spec::{self, Filter};
use crate::ir;

/// What a rule's backendRef filters become.
#[derive(Debug, Default)]
pub struct Split {
    /// Filters of the rule's only backendRef that apply to the whole rule.
    pub lifted: Vec<Filter>,
    /// Header changes per backendRef, in backendRef order.
    pub per_backend: Vec<ir::BackendFilters>,
}

pub fn split(rule: &spec::Rule) -> Result<Split, String> {
    let refs = &rule.backend_refs;
    let mut out = Split::default();
    for (i, br) in refs.iter().enumerate() {
        let mut own = ir::BackendFilters::default();
        let mut seen: Vec<&'static str> = Vec::new();
        for f in &br.filters {
            let at = |why: String| format!("backendRef {i} ({}): {why}", br.target.name);
            let is_header = matches!(f, Filter::RequestHeaderModifier(_) | Filter::ResponseHeaderModifier(_));
            if is_header {
                if seen.contains(&f.type_name()) {
                    return Err(at(format!("filter {} is given more than once", f.type_name())));
                }
                seen.push(f.type_name());
                let (request, response) = super::header_modifiers(f).map_err(at)?;
                if let Some(m) = request {
                    own.request_headers = m;
                }
                if let Some(m) = response {
                    own.response_headers = m;
                }
            } else if refs.len() == 1 || matches!(f, Filter::ExtensionRef(_)) {
                // An unresolvable ExtensionRef must not be skipped; failing the whole rule closed is the
                // nearest Envoy can do for one backend's share.
                out.lifted.push(f.clone());
            } else {
                return Err(at(format!(
                    "filter {} can only be served on a rule with a single backendRef (Envoy changes only \
                     headers per weighted backend)",
                    f.type_name()
                )));
            }
        }
        out.per_backend.push(own);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(yaml: &str) -> spec::Rule {
        crate::gateway::spec::http::rule(&serde_saphyr::from_str(yaml).unwrap(), Default::default())
    }

    #[test]
    fn headers_stay_per_backend_and_the_rest_lifts_from_a_single_backend() {
        let s = split(&rule(
            "{backendRefs: [{name: a, port: 80, filters: [
                {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: '1'}]}},
                {type: URLRewrite, urlRewrite: {hostname: b.example}}]}]}",
        ))
        .unwrap();
        assert_eq!(s.per_backend.len(), 1);
        assert_eq!(s.per_backend[0].request_headers.set, vec![("x".into(), "1".into())]);
        assert_eq!(s.lifted.len(), 1);
        assert_eq!(s.lifted[0].type_name(), "URLRewrite");
    }

    #[test]
    fn whole_route_filters_need_a_single_backend() {
        let err = split(&rule(
            "{backendRefs: [{name: a, port: 80}, {name: b, port: 80, filters: [
                {type: RequestRedirect, requestRedirect: {scheme: https}}]}]}",
        ))
        .unwrap_err();
        assert!(err.starts_with("backendRef 1 (b): filter RequestRedirect"), "{err}");
        let s = split(&rule(
            "{backendRefs: [{name: a, port: 80}, {name: b, port: 80, filters: [
                {type: ExtensionRef, extensionRef: {group: x.example, kind: Y, name: z}}]}]}",
        ))
        .unwrap();
        assert_eq!(s.lifted[0].type_name(), "ExtensionRef", "fails the rule closed");
        let err = split(&rule(
            "{backendRefs: [{name: a, port: 80, filters: [
                {type: ResponseHeaderModifier, responseHeaderModifier: {remove: [x]}},
                {type: ResponseHeaderModifier, responseHeaderModifier: {remove: [y]}}]}]}",
        ))
        .unwrap_err();
        assert!(err.contains("more than once"), "{err}");
    }
}
