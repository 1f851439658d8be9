//! GRPCRoute, through the HTTPRoute pipeline.
//!
//! A gRPC call is an HTTP/2 POST to `/{service}/{method}`, and GRPCRoute's parentRefs, hostnames,
//! backendRefs and filters have the shape of HTTPRoute's (its filters are a subset). So rather than a
//! second attachment and rule pipeline, each GRPCRoute is rewritten here into the equivalent HTTPRoute
//! and attached by `routes::attach` as kind `GRPCRoute`, which keeps what differs: its precedence
//! (characters of the matched service, then method — [`GrpcInfo::ranks`]), gRPC `UNAVAILABLE` where an
//! HTTPRoute gets 500 (`ir::Route::grpc`), HTTP/2 to every backend ([`over_http2`]), its status kind,
//! its ReferenceGrant `from` kind, and the rule that an HTTPRoute and a GRPCRoute never share a
//! hostname on a listener.
//!
//! Method matches become path matches:
//! - `Exact` service and method → Exact `/S/M`;
//! - service only → PathPrefix `/S` (element-wise: every method of `S`, nothing of `S2`);
//! - method only → RegularExpression `/[^/]+/M`;
//! - `RegularExpression` → `/{service}/{method}` with `[^/]+` for the part left out.
//!
//! Header matches, filters and backendRefs carry over unchanged (the JSON field names are the same).

use gateway_api::apis::standard::grpcroutes::{GrpcRoute, GrpcRouteRules, GrpcRouteRulesMatchesMethodType};
use gateway_api::apis::standard::httproutes::{HttpRoute, HttpRouteRules, HttpRouteSpec};
use serde_json::{Value, json};

use super::backends::Target;
use crate::ir::UpstreamProtocol;

/// What the HTTPRoute form of a GRPCRoute cannot say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GrpcInfo {
    /// Per rule, per match (one entry for a rule without matches): characters of the matched service
    /// and method, the first two GRPCRoute precedence criteria after hostnames.
    pub ranks: Vec<Vec<(usize, usize)>>,
    /// Per rule: why it cannot be served (its HTTPRoute form is then left without matches and must
    /// not be used).
    pub rule_errors: Vec<Option<String>>,
}

/// The HTTPRoute form of `route` (same metadata) and what it leaves out.
pub fn to_http(route: &GrpcRoute) -> (HttpRoute, GrpcInfo) {
    let mut info = GrpcInfo::default();
    let mut rules = Vec::new();
    for rule in route.spec.rules.iter().flatten() {
        let (http, ranks, error) = match rule_to_http(rule) {
            Ok((http, ranks)) => (http, ranks, None),
            Err(why) => (HttpRouteRules::default(), vec![(0, 0)], Some(why)),
        };
        rules.push(http);
        info.ranks.push(ranks);
        info.rule_errors.push(error);
    }
    let spec = HttpRouteSpec {
        hostnames: route.spec.hostnames.clone(),
        parent_refs: route.spec.parent_refs.as_ref().and_then(|p| convert(p).ok()),
        rules: Some(rules),
    };
    let http = HttpRoute {
        metadata: route.metadata.clone(),
        spec,
        status: None,
    };
    (http, info)
}

fn rule_to_http(rule: &GrpcRouteRules) -> Result<(HttpRouteRules, Vec<(usize, usize)>), String> {
    let mut matches = Vec::new();
    let mut ranks = Vec::new();
    for (mi, m) in rule.matches.iter().flatten().enumerate() {
        let (path, rank) = match &m.method {
            None => (None, (0, 0)),
            Some(method) => {
                let service = method.service.as_deref().filter(|s| !s.is_empty());
                let name = method.method.as_deref().filter(|s| !s.is_empty());
                let regex = method.r#type == Some(GrpcRouteRulesMatchesMethodType::RegularExpression);
                let rank = (service.map_or(0, str::len), name.map_or(0, str::len));
                (
                    method_path(service, name, regex).map_err(|e| format!("matches[{mi}].method.{e}"))?,
                    rank,
                )
            }
        };
        let mut http = json!({});
        if let Some(p) = path {
            http["path"] = p;
        }
        if let Some(h) = &m.headers {
            http["headers"] = serde_json::to_value(h).map_err(|e| format!("matches[{mi}].headers: {e}"))?;
        }
        matches.push(http);
        ranks.push(rank);
    }
    if ranks.is_empty() {
        ranks.push((0, 0));
    }
    let http = HttpRouteRules {
        name: rule.name.clone(),
        matches: if matches.is_empty() {
            None
        } else {
            Some(convert(&matches)?)
        },
        filters: rule.filters.as_ref().map(convert).transpose()?,
        backend_refs: rule.backend_refs.as_ref().map(convert).transpose()?,
        ..Default::default()
    };
    Ok((http, ranks))
}

/// The path match of a gRPC method match, or `None` for "any call".
fn method_path(service: Option<&str>, method: Option<&str>, regex: bool) -> Result<Option<Value>, String> {
    if regex {
        for (field, re) in [("service", service), ("method", method)] {
            if let Some(why) = re.and_then(super::re2::problem) {
                return Err(format!("{field}: {why}"));
            }
        }
        // A part left out matches any one path segment.
        let part = |p: Option<&str>| p.map_or_else(|| "[^/]+".to_string(), |p| format!("(?:{p})"));
        return Ok(match (service, method) {
            (None, None) => None,
            _ => Some(json!({"type": "RegularExpression", "value": format!("/{}/{}", part(service), part(method))})),
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
        (Some(s), Some(m)) => Some(json!({"type": "Exact", "value": format!("/{s}/{m}")})),
        (Some(s), None) => Some(json!({"type": "PathPrefix", "value": format!("/{s}")})),
        (None, Some(m)) => Some(json!({"type": "RegularExpression", "value": format!("/[^/]+/{}", regex::escape(m))})),
        (None, None) => None,
    })
}

/// Re-reads a GRPCRoute part as its HTTPRoute counterpart (same JSON shape by Gateway API design).
fn convert<A: serde::Serialize, B: serde::de::DeserializeOwned>(a: &A) -> Result<B, String> {
    serde_json::to_value(a)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("cannot be read as its HTTPRoute equivalent: {e}"))
}

/// gRPC needs HTTP/2 to the backend. A backend that already speaks it keeps its cluster; one whose
/// cluster speaks HTTP/1.1 or negotiates (a Service without `appProtocol`, a Backend with protocol
/// `HTTP`) gets an HTTP/2 twin — h2 over TLS, h2c (prior knowledge) in cleartext — named after it, so
/// an HTTPRoute and a GRPCRoute can use the same backend side by side.
pub fn over_http2(mut t: Target) -> Target {
    match t.cluster.protocol {
        UpstreamProtocol::Http2 | UpstreamProtocol::H2c => t,
        UpstreamProtocol::Http1 | UpstreamProtocol::Auto => {
            t.cluster.protocol = if t.cluster.tls.is_some() {
                UpstreamProtocol::Http2
            } else {
                UpstreamProtocol::H2c
            };
            t.cluster.name = crate::ir::names::http2_twin(&t.cluster.name);
            t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grpc(yaml: &str) -> GrpcRoute {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn path(route: &HttpRoute, rule: usize, m: usize) -> (String, String) {
        let p = route.spec.rules.as_ref().unwrap()[rule].matches.as_ref().unwrap()[m]
            .path
            .clone()
            .unwrap();
        let v = serde_json::to_value(&p).unwrap();
        (v["type"].as_str().unwrap().into(), v["value"].as_str().unwrap().into())
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
        let (http, info) = to_http(&r);
        assert_eq!(path(&http, 0, 0), ("Exact".into(), "/pkg.Svc/Get".into()));
        assert_eq!(path(&http, 0, 1), ("PathPrefix".into(), "/pkg.Svc".into()));
        assert_eq!(path(&http, 0, 2), ("RegularExpression".into(), "/[^/]+/Get".into()));
        assert_eq!(
            path(&http, 0, 3),
            ("RegularExpression".into(), "/(?:pkg\\..*)/(?:Get|List)".into())
        );
        assert_eq!(
            path(&http, 0, 4),
            ("RegularExpression".into(), "/[^/]+/(?:Li.*)".into())
        );
        let m5 = &http.spec.rules.as_ref().unwrap()[0].matches.as_ref().unwrap()[5];
        assert!(m5.path.is_none(), "a header-only match matches every call");
        assert_eq!(m5.headers.as_ref().unwrap()[0].name, "X-Env");
        assert!(http.spec.rules.as_ref().unwrap()[1].matches.is_none());
        assert_eq!(info.ranks[0], vec![(7, 3), (7, 0), (0, 3), (7, 8), (0, 4), (0, 0)]);
        assert_eq!(info.ranks[1], vec![(0, 0)]);
        assert_eq!(info.rule_errors, vec![None, None]);
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
        let (_, info) = to_http(&r);
        let e0 = info.rule_errors[0].as_deref().unwrap();
        assert!(e0.starts_with("matches[0].method.service: regular expression"), "{e0}");
        let e1 = info.rule_errors[1].as_deref().unwrap();
        assert!(e1.contains("must not contain '/'"), "{e1}");
        assert_eq!(info.rule_errors[2], None);
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
        let (http, _) = to_http(&r);
        let rule = &http.spec.rules.as_ref().unwrap()[0];
        assert_eq!(rule.name.as_deref(), Some("named"));
        assert_eq!(rule.filters.as_ref().unwrap().len(), 1);
        let br = &rule.backend_refs.as_ref().unwrap()[0];
        assert_eq!((br.name.as_str(), br.port, br.weight), ("svc", Some(9000), Some(3)));
        let parent = &http.spec.parent_refs.as_ref().unwrap()[0];
        assert_eq!(parent.section_name.as_deref(), Some("h"));
        assert_eq!(http.spec.hostnames, Some(vec!["grpc.example.com".to_string()]));
    }
}
