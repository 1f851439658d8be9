//! GRPCRoute → [`RouteSpec`].
//!
//! A gRPC call is an HTTP/2 POST to `/{service}/{method}`, and GRPCRoute's parentRefs, hostnames,
//! backendRefs and filters have the shape of HTTPRoute's (its filters are a subset), so a GRPCRoute is
//! read into the same form and attached by the same code as kind `GRPCRoute`, which keeps what differs:
//! its precedence (characters of the matched service, then method — [`Match::grpc_rank`]), gRPC
//! `UNAVAILABLE` where an HTTPRoute gets 500 (`ir::Route::grpc`), HTTP/2 to every backend
//! (`rules::over_http2`), its status kind, its ReferenceGrant `from` kind, and the rule that an HTTPRoute
//! and a GRPCRoute never share a hostname on a listener.
//!
//! Method matches become path matches:
//! - `Exact` service and method → Exact `/S/M`;
//! - service only → PathPrefix `/S` (element-wise: every method of `S`, nothing of `S2`);
//! - method only → RegularExpression `/[^/]+/M`;
//! - `RegularExpression` → `/{service}/{method}` with `[^/]+` for the part left out.
//!
//! A method match that has no path form (an invalid regex, a `/` in a name) leaves the rule with an
//! [`Rule::error`]; the rule is then dropped with that reason.

use gateway_api::apis::standard::grpcroutes::{
    GrpcRouteParentRefs, GrpcRouteRules, GrpcRouteRulesBackendRefs, GrpcRouteRulesMatches,
    GrpcRouteRulesMatchesHeaders, GrpcRouteRulesMatchesHeadersType, GrpcRouteRulesMatchesMethod,
    GrpcRouteRulesMatchesMethodType, GrpcRouteSpec,
};

use super::convert::{backend_ref_conversion, header_modifier, mirror, parent_ref_conversion};
use super::{Match, PathKind, PathMatch, RouteKind, RouteOrder, RouteSpec, Rule, ValueMatch};
use crate::model::{ObjectKey, Stored};

/// `fn filter(&Filters) -> Filter` over the GRPCRoute type names the calling module aliases.
macro_rules! grpc_filter_conversion {
    () => {
        use super::super::{ExtensionRef, Filter};

        pub(super) fn filter(f: &Filters) -> Filter {
            let Filters {
                extension_ref,
                request_header_modifier,
                request_mirror,
                response_header_modifier,
                r#type,
            } = f;
            match r#type {
                Type::RequestHeaderModifier => Filter::RequestHeaderModifier(
                    request_header_modifier
                        .as_ref()
                        .map(|m| header_modifier!(m, ReqHdr, ReqAdd, ReqSet)),
                ),
                Type::ResponseHeaderModifier => Filter::ResponseHeaderModifier(
                    response_header_modifier
                        .as_ref()
                        .map(|m| header_modifier!(m, ResHdr, ResAdd, ResSet)),
                ),
                Type::RequestMirror => Filter::RequestMirror(
                    request_mirror
                        .as_ref()
                        .map(|m| mirror!(m, Mirror, MirrorRef, Fraction)),
                ),
                Type::ExtensionRef => Filter::ExtensionRef(extension_ref.as_ref().map(
                    |Extension { group, kind, name }| ExtensionRef {
                        group: group.clone(),
                        kind: kind.clone(),
                        name: name.clone(),
                    },
                )),
            }
        }
    };
}

mod rule_filters {
    use super::{header_modifier, mirror};
    use gateway_api::apis::standard::grpcroutes::{
        GrpcRouteRulesFilters as Filters, GrpcRouteRulesFiltersExtensionRef as Extension,
        GrpcRouteRulesFiltersRequestHeaderModifier as ReqHdr, GrpcRouteRulesFiltersRequestHeaderModifierAdd as ReqAdd,
        GrpcRouteRulesFiltersRequestHeaderModifierSet as ReqSet, GrpcRouteRulesFiltersRequestMirror as Mirror,
        GrpcRouteRulesFiltersRequestMirrorBackendRef as MirrorRef,
        GrpcRouteRulesFiltersRequestMirrorFraction as Fraction, GrpcRouteRulesFiltersResponseHeaderModifier as ResHdr,
        GrpcRouteRulesFiltersResponseHeaderModifierAdd as ResAdd,
        GrpcRouteRulesFiltersResponseHeaderModifierSet as ResSet, GrpcRouteRulesFiltersType as Type,
    };

    grpc_filter_conversion!();
}

mod backend_filters {
    use super::{header_modifier, mirror};
    use gateway_api::apis::standard::grpcroutes::{
        GrpcRouteRulesBackendRefsFilters as Filters, GrpcRouteRulesBackendRefsFiltersExtensionRef as Extension,
        GrpcRouteRulesBackendRefsFiltersRequestHeaderModifier as ReqHdr,
        GrpcRouteRulesBackendRefsFiltersRequestHeaderModifierAdd as ReqAdd,
        GrpcRouteRulesBackendRefsFiltersRequestHeaderModifierSet as ReqSet,
        GrpcRouteRulesBackendRefsFiltersRequestMirror as Mirror,
        GrpcRouteRulesBackendRefsFiltersRequestMirrorBackendRef as MirrorRef,
        GrpcRouteRulesBackendRefsFiltersRequestMirrorFraction as Fraction,
        GrpcRouteRulesBackendRefsFiltersResponseHeaderModifier as ResHdr,
        GrpcRouteRulesBackendRefsFiltersResponseHeaderModifierAdd as ResAdd,
        GrpcRouteRulesBackendRefsFiltersResponseHeaderModifierSet as ResSet,
        GrpcRouteRulesBackendRefsFiltersType as Type,
    };

    grpc_filter_conversion!();
}

/// The form of a GRPCRoute.
pub fn route(key: &ObjectKey, route: &crate::api::grpc::GrpcRoute) -> RouteSpec {
    let sessions = &route.sessions;
    let Stored {
        metadata,
        spec: GrpcRouteSpec {
            hostnames,
            parent_refs,
            rules,
        },
    } = &route.route;
    RouteSpec {
        kind: RouteKind::Grpc,
        key: key.clone(),
        generation: metadata.generation.unwrap_or(0),
        order: std::sync::Arc::new(RouteOrder::new(metadata, RouteKind::Grpc, key)),
        parent_refs: parent_refs.iter().flatten().map(parent_ref).collect(),
        hostnames: hostnames.clone().unwrap_or_default(),
        rules: rules
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| Rule {
                session_persistence: sessions.get(i).cloned().flatten(),
                ..rule(r)
            })
            .collect(),
    }
}

parent_ref_conversion!(GrpcRouteParentRefs);

fn rule(r: &GrpcRouteRules) -> Rule {
    let GrpcRouteRules {
        backend_refs,
        filters,
        matches,
        name,
    } = r;
    let matches: Result<Vec<Match>, String> = matches
        .iter()
        .flatten()
        .enumerate()
        .map(|(mi, m)| route_match(m).map_err(|e| format!("matches[{mi}].method.{e}")))
        .collect();
    let (matches, error) = match matches {
        Ok(m) => (m, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    Rule {
        name: name.clone(),
        matches,
        filters: filters.iter().flatten().map(rule_filters::filter).collect(),
        backend_refs: backend_refs.iter().flatten().map(backend_ref).collect(),
        error,
        ..Default::default()
    }
}

backend_ref_conversion!(GrpcRouteRulesBackendRefs);

fn route_match(m: &GrpcRouteRulesMatches) -> Result<Match, String> {
    let GrpcRouteRulesMatches { headers, method } = m;
    let (path, rank) = match method {
        None => (None, (0, 0)),
        Some(GrpcRouteRulesMatchesMethod {
            method,
            service,
            r#type,
        }) => {
            let service = service.as_deref().filter(|s| !s.is_empty());
            let name = method.as_deref().filter(|s| !s.is_empty());
            let regex = *r#type == Some(GrpcRouteRulesMatchesMethodType::RegularExpression);
            let rank = (service.map_or(0, str::len), name.map_or(0, str::len));
            (method_path(service, name, regex)?, rank)
        }
    };
    let headers = headers
        .iter()
        .flatten()
        .map(|GrpcRouteRulesMatchesHeaders { name, r#type, value }| ValueMatch {
            name: name.clone(),
            value: value.clone(),
            regex: *r#type == Some(GrpcRouteRulesMatchesHeadersType::RegularExpression),
        })
        .collect();
    Ok(Match {
        path,
        headers,
        grpc_rank: Some(rank),
        ..Default::default()
    })
}

/// The path match of a gRPC method match, or `None` for "any call".
fn method_path(service: Option<&str>, method: Option<&str>, regex: bool) -> Result<Option<PathMatch>, String> {
    let path = |kind, value: String| {
        Some(PathMatch {
            kind: Some(kind),
            value: Some(value),
        })
    };
    if regex {
        for (field, re) in [("service", service), ("method", method)] {
            if let Some(why) = re.and_then(super::super::re2::problem) {
                return Err(format!("{field}: {why}"));
            }
        }
        // A part left out matches any one path segment.
        let part = |p: Option<&str>| p.map_or_else(|| "[^/]+".to_string(), |p| format!("(?:{p})"));
        return Ok(match (service, method) {
            (None, None) => None,
            _ => path(
                PathKind::RegularExpression,
                format!("/{}/{}", part(service), part(method)),
            ),
        });
    }
    for (field, v) in [("service", service), ("method", method)] {
        if let Some(v) = v
            && v.contains('/')
        {
            return Err(format!("{field}: {v:?} must not contain '/'"));
        }
    }
    Ok(match (service, method) {
        (Some(s), Some(m)) => path(PathKind::Exact, format!("/{s}/{m}")),
        (Some(s), None) => path(PathKind::PathPrefix, format!("/{s}")),
        (None, Some(m)) => path(PathKind::RegularExpression, format!("/[^/]+/{}", regex::escape(m))),
        (None, None) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::spec::Filter;

    fn grpc(yaml: &str) -> crate::api::grpc::GrpcRoute {
        serde_saphyr::from_str::<gateway_api::apis::standard::grpcroutes::GrpcRoute>(yaml)
            .unwrap()
            .into()
    }

    fn path(spec: &RouteSpec, rule: usize, m: usize) -> (PathKind, String) {
        let p = spec.rules[rule].matches[m].path.clone().unwrap();
        (p.kind.unwrap(), p.value.unwrap())
    }

    #[test]
    fn method_matches_become_paths() {
        let r = grpc(
            "apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
    - matches:
        - method: {service: pkg.Svc, method: Get}
        - method: {service: pkg.Svc}
        - method: {method: Get}
        - method: {type: RegularExpression, service: 'pkg\\..*', method: 'Get|List'}
        - method: {type: RegularExpression, method: 'Li.*'}
        - headers: [{name: X-Env, value: prod}]
    - {}
",
        );
        let key = ObjectKey::new("ns", "r");
        let spec = route(&key, &r);
        assert_eq!(path(&spec, 0, 0), (PathKind::Exact, "/pkg.Svc/Get".into()));
        assert_eq!(path(&spec, 0, 1), (PathKind::PathPrefix, "/pkg.Svc".into()));
        assert_eq!(path(&spec, 0, 2), (PathKind::RegularExpression, "/[^/]+/Get".into()));
        assert_eq!(
            path(&spec, 0, 3),
            (PathKind::RegularExpression, "/(?:pkg\\..*)/(?:Get|List)".into())
        );
        assert_eq!(
            path(&spec, 0, 4),
            (PathKind::RegularExpression, "/[^/]+/(?:Li.*)".into())
        );
        let m5 = &spec.rules[0].matches[5];
        assert!(m5.path.is_none(), "a header-only match matches every call");
        assert_eq!(m5.headers[0].name, "X-Env");
        assert!(spec.rules[1].matches.is_empty());
        let ranks: Vec<(usize, usize)> = spec.rules[0].matches.iter().map(|m| m.grpc_rank.unwrap()).collect();
        assert_eq!(ranks, vec![(7, 3), (7, 0), (0, 3), (7, 8), (0, 4), (0, 0)]);
        assert!(spec.rules.iter().all(|r| r.error.is_none()));
    }

    #[test]
    fn bad_method_matches_refuse_the_rule() {
        let r = grpc(
            "apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
    - matches: [{method: {type: RegularExpression, service: '(unclosed'}}]
    - matches: [{method: {service: 'a/b', method: M}}]
    - matches: [{method: {service: ok.Svc}}]
",
        );
        let key = ObjectKey::new("ns", "r");
        let spec = route(&key, &r);
        let e0 = spec.rules[0].error.as_deref().unwrap();
        assert!(e0.starts_with("matches[0].method.service: regular expression"), "{e0}");
        let e1 = spec.rules[1].error.as_deref().unwrap();
        assert!(e1.contains("must not contain '/'"), "{e1}");
        assert_eq!(spec.rules[2].error, None);
    }

    #[test]
    fn filters_and_backend_refs_carry_over() {
        let r = grpc(
            "apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: h}]
  hostnames: [grpc.example.com]
  rules:
    - name: named
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: y}]}}]
      backendRefs: [{name: svc, port: 9000, weight: 3}]
",
        );
        let key = ObjectKey::new("ns", "r");
        let spec = route(&key, &r);
        let rule = &spec.rules[0];
        assert_eq!(rule.name.as_deref(), Some("named"));
        let Filter::RequestHeaderModifier(Some(m)) = &rule.filters[0] else {
            panic!("{:?}", rule.filters)
        };
        assert_eq!(m.set, vec![("x".to_string(), "y".to_string())]);
        let br = &rule.backend_refs[0];
        assert_eq!(
            (br.target.name.as_str(), br.target.port, br.weight),
            ("svc", Some(9000), Some(3))
        );
        assert_eq!(spec.parent_refs[0].section_name.as_deref(), Some("h"));
        assert_eq!(spec.hostnames, vec!["grpc.example.com".to_string()]);
    }
}
