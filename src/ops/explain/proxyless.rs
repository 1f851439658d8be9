//! The proxyless half of a Gateway in an explanation (`docs/proxyless-grpc.md`): each `xds:///HOST:PORT`
//! target a gRPC client can ask for, and what each entry of its route configuration does for that
//! client — for a GRPCRoute, its own entries only. Read from the `proxyless` part of the Gateway's
//! document (`/debug/config_dump`, or the offline translation), like everything else here.

use serde_json::Value;

use super::model::{ProxylessEntry, ProxylessTarget};
use crate::ir::names;

/// The targets of the Gateway document `doc`; with `route` (`(namespace, name)` of a GRPCRoute), those
/// that serve one of its entries, with only its entries.
pub fn targets(doc: &Value, route: Option<(&str, &str)>) -> Vec<ProxylessTarget> {
    let served: Served = doc["proxyless"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?, ca_instance(c))))
        .collect();
    let configs = doc["proxyless"]["routes"].as_array().into_iter().flatten();
    configs
        .filter_map(|rc| {
            let name = rc["name"].as_str()?;
            let entries: Vec<ProxylessEntry> = rc["virtual_hosts"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|vh| vh["routes"].as_array().into_iter().flatten())
                .filter(|r| owned_by(r, route))
                .map(|r| entry(r, &served))
                .collect();
            (!entries.is_empty()).then(|| ProxylessTarget {
                target: format!("xds:///{name}"),
                listener: name.to_string(),
                entries,
            })
        })
        .collect()
}

/// The clusters gRPC clients are given, each with the certificate provider a client must declare to
/// reach it (TLS clusters, `envoy::proxyless::tls`).
type Served<'a> = std::collections::BTreeMap<&'a str, Option<&'a str>>;

fn ca_instance(cluster: &Value) -> Option<&str> {
    cluster
        .pointer("/transport_socket/typed_config/common_tls_context/validation_context/ca_certificate_provider_instance/instance_name")
        .and_then(Value::as_str)
}

fn owned_by(r: &Value, route: Option<(&str, &str)>) -> bool {
    let Some((ns, name)) = route else { return true };
    r["name"]
        .as_str()
        .and_then(names::parse_route)
        .is_some_and(|n| n.route_kind == "grpcroute" && n.namespace == ns && n.name == name)
}

fn entry(r: &Value, served: &Served) -> ProxylessEntry {
    let m = &r["match"];
    let path = ["path", "prefix"]
        .iter()
        .find_map(|k| m[*k].as_str().map(|v| format!("{k} {v}")))
        .or_else(|| m["safe_regex"]["regex"].as_str().map(|v| format!("regex {v}")))
        .unwrap_or_else(|| "any path".to_string());
    let headers = m["headers"].as_array().map_or(0, Vec::len);
    let matches = if headers > 0 {
        format!("{path}, {headers} header match{}", if headers == 1 { "" } else { "es" })
    } else {
        path
    };
    ProxylessEntry {
        name: r["name"].as_str().unwrap_or_default().to_string(),
        matches,
        action: action(r, served),
    }
}

/// A cluster gRPC clients are given, or one they are not (its calls fail).
fn cluster(name: &str, served: &Served) -> String {
    match served.get(name) {
        _ if name == names::INVALID_BACKEND_CLUSTER => "an UNAVAILABLE share (refused: see the conditions)".to_string(),
        Some(None) => name.to_string(),
        Some(Some(instance)) => format!(
            "{name} [TLS: only clients declaring certificate provider {instance:?} reach it, others get UNAVAILABLE]"
        ),
        None => format!("{name} [not offered to gRPC clients: UNAVAILABLE]"),
    }
}

fn action(r: &Value, served: &Served) -> String {
    let route = &r["route"];
    if let Some(c) = route["cluster"]
        .as_str()
        .filter(|c| *c != names::INVALID_BACKEND_CLUSTER)
    {
        return format!("cluster {}", cluster(c, served));
    }
    if let Some(ws) = route["weighted_clusters"]["clusters"].as_array() {
        let shares: Vec<String> = ws
            .iter()
            .map(|w| {
                format!(
                    "{} ({})",
                    cluster(w["name"].as_str().unwrap_or("?"), served),
                    w["weight"]
                )
            })
            .collect();
        return format!("split: {}", shares.join(", "));
    }
    "fails with UNAVAILABLE (refused: see the conditions)".to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_routes_entries_per_target() {
        let tls = json!({"common_tls_context": {"validation_context": {
            "ca_certificate_provider_instance": {"instance_name": "ca/configmap/default/ca"}}}});
        let doc = json!({"proxyless": {"clusters": [{"name": "service/default/a/80"},
            {"name": "a", "transport_socket": {"typed_config": tls}}], "routes": [
            {"name": "echo.example:8080", "virtual_hosts": [{"routes": [
                {"name": "grpcroute/default/echo/rule/0/match/0", "match": {"path": "/e.E/Say"},
                 "route": {"cluster": "service/default/a/80"}},
                {"name": "grpcroute/default/other/rule/0/match/0", "match": {"prefix": "/"},
                 "route": {"cluster": "service/default/b/80"}},
                {"name": "grpcroute/default/echo/rule/1/match/0",
                 "match": {"prefix": "/e.E/", "headers": [{"name": "x"}]},
                 "direct_response": {"status": 503}}]}]},
            {"name": "other.example:8080", "virtual_hosts": [{"routes": [
                {"name": "grpcroute/default/other/rule/0/match/0", "match": {"prefix": "/"},
                 "route": {"weighted_clusters": {"clusters": [{"name": "a", "weight": 3}, {"name": "b", "weight": 1}]}}}]}]}
        ]}});
        let echo = targets(&doc, Some(("default", "echo")));
        assert_eq!(echo.len(), 1, "{echo:?}");
        assert_eq!(echo[0].target, "xds:///echo.example:8080");
        let shown: Vec<(&str, &str)> = echo[0]
            .entries
            .iter()
            .map(|e| (e.matches.as_str(), e.action.as_str()))
            .collect();
        assert_eq!(shown[0], ("path /e.E/Say", "cluster service/default/a/80"));
        assert_eq!(shown[1].0, "prefix /e.E/, 1 header match");
        assert!(shown[1].1.starts_with("fails with UNAVAILABLE"));
        let all = targets(&doc, None);
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[1].entries[0].action,
            "split: a [TLS: only clients declaring certificate provider \"ca/configmap/default/ca\" reach it, \
             others get UNAVAILABLE] (3), b [not offered to gRPC clients: UNAVAILABLE] (1)"
        );
        assert!(targets(&json!({}), None).is_empty());
    }
}
