//! What review should catch in a change, read off the two translations rather than the manifests (so a
//! ReferenceGrant deleted elsewhere, or a Service's port renamed, is caught too):
//!
//! - **TLS turned off or loosened** on a cluster that exists on both sides: its TLS transport socket
//!   gone; certificate verification (the trusted CA) gone; SAN checks dropped; SNI dropped; the client
//!   certificate no longer presented; the minimum TLS version lowered. A changed CA is flagged too: a
//!   wider trust is a loosening, and the diff cannot tell which way it went.
//! - **Traffic newly refused by the guardrails**: a condition with reason `DestinationNotAllowed` that
//!   the old side did not have.
//! - **A backend share turning into 500s**: a route entry that forwarded and now answers 500/503
//!   itself, or whose share naming a backend that cannot be used (`pier/invalid-backend-ref`) grew.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::status::Conditions;

/// The name every unusable backendRef's weighted share points at (see `ir::names`).
const INVALID_BACKEND: &str = crate::ir::names::INVALID_BACKEND_CLUSTER;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagKind {
    TlsDowngrade,
    GuardrailRefusal,
    BackendErrors,
}

/// Something review should look at, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Flag {
    pub kind: FlagKind,
    /// The Gateway (resources) or object (statuses) concerned.
    pub scope: String,
    pub what: String,
}

/// TLS of each cluster present on both sides of one Gateway.
pub fn tls(gateway: &str, old: &Value, new: &Value, out: &mut Vec<Flag>) {
    let new_clusters = by_name(new, "clusters", "name");
    for (name, before) in by_name(old, "clusters", "name") {
        let Some(after) = new_clusters.get(&name) else { continue };
        let (a, b) = (upstream_tls(before), upstream_tls(after));
        let Some(a) = a else { continue };
        let flag = |what: String| Flag {
            kind: FlagKind::TlsDowngrade,
            scope: gateway.to_string(),
            what: format!("cluster {name}: {what}"),
        };
        let Some(b) = b else {
            out.push(flag(
                "TLS turned off: traffic to this backend now goes in plaintext".into(),
            ));
            continue;
        };
        out.extend(loosened(a, b).into_iter().map(flag));
    }
}

/// Each way `b` checks less than `a`.
fn loosened(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let (ca, cb) = (trust(a), trust(b));
    match (&ca, &cb) {
        (Some(_), None) => out.push("the server certificate is no longer verified (no trusted CA)".into()),
        (Some(x), Some(y)) if x != y => out.push(format!("trusted CA changed: {x} → {y}")),
        _ => {}
    }
    let (sa, sb) = (sans(a), sans(b));
    let dropped: Vec<&Value> = sa.iter().filter(|s| !sb.contains(s)).collect();
    if !dropped.is_empty() {
        out.push(format!("SAN checks dropped: {}", compact(&dropped)));
    }
    if a.get("sni").is_some() && b.get("sni").is_none() {
        out.push(format!("SNI no longer sent (was {})", a["sni"]));
    }
    let certs = |v: &Value| {
        v["common_tls_context"]["tls_certificate_sds_secret_configs"]
            .as_array()
            .map_or(0, Vec::len)
    };
    if certs(a) > 0 && certs(b) == 0 {
        out.push("the client certificate is no longer presented".into());
    }
    let version = |v: &Value| {
        v["common_tls_context"]["tls_params"]["tls_minimum_protocol_version"]
            .as_str()
            .map(str::to_string)
    };
    if let (Some(x), y) = (version(a), version(b))
        && y.as_ref().is_none_or(|y| rank(y) < rank(&x))
    {
        out.push(format!(
            "minimum TLS version lowered: {x} → {}",
            y.unwrap_or_else(|| "Envoy's default".into())
        ));
    }
    out
}

fn rank(version: &str) -> u8 {
    match version {
        "TLSv1_3" => 4,
        "TLSv1_2" => 3,
        "TLSv1_1" => 2,
        "TLSv1_0" => 1,
        _ => 0,
    }
}

fn compact(values: &[&Value]) -> String {
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

fn upstream_tls(cluster: &Value) -> Option<&Value> {
    let socket = cluster.get("transport_socket")?;
    (socket["name"] == "envoy.transport_sockets.tls").then(|| &socket["typed_config"])
}

fn validation(tls: &Value) -> &Value {
    let common = &tls["common_tls_context"];
    if common.get("combined_validation_context").is_some() {
        &common["combined_validation_context"]
    } else {
        common
    }
}

/// Where the trusted CA comes from: an SDS secret name, or an inline/file source.
fn trust(tls: &Value) -> Option<String> {
    let v = validation(tls);
    if let Some(name) = v["validation_context_sds_secret_config"]["name"].as_str() {
        return Some(name.to_string());
    }
    let inline = v
        .get("default_validation_context")
        .or_else(|| v.get("validation_context"))?;
    inline.get("trusted_ca").map(Value::to_string)
}

fn sans(tls: &Value) -> Vec<Value> {
    let v = validation(tls);
    let inline = v
        .get("default_validation_context")
        .or_else(|| v.get("validation_context"));
    inline
        .and_then(|i| i["match_typed_subject_alt_names"].as_array())
        .cloned()
        .unwrap_or_default()
}

/// Conditions refused by a guardrail on the new side that the old side did not have.
pub fn guardrails(old: &BTreeMap<String, Conditions>, new: &BTreeMap<String, Conditions>, out: &mut Vec<Flag>) {
    for (object, conditions) in new {
        for ((scope, ty), c) in conditions {
            let before = old.get(object).and_then(|o| o.get(&(scope.clone(), ty.clone())));
            if c.reason == "DestinationNotAllowed" && before.is_none_or(|b| b.reason != c.reason) {
                let at = if scope.is_empty() {
                    String::new()
                } else {
                    format!(" ({scope})")
                };
                out.push(Flag {
                    kind: FlagKind::GuardrailRefusal,
                    scope: object.clone(),
                    what: format!("{ty}=False{at}: {}", c.message),
                });
            }
        }
    }
}

/// Route entries of one Gateway that now answer errors in place of a backend.
pub fn backend_errors(gateway: &str, old: &Value, new: &Value, out: &mut Vec<Flag>) {
    let before = entries(old);
    for (name, after) in entries(new) {
        let Some(was) = before.get(&name) else { continue };
        let what = match (share(was), share(after)) {
            (Share::Forward(_), Share::Error(status)) => {
                format!("route {name}: now answers {status} for every request (it forwarded before)")
            }
            (Share::Forward(x), Share::Forward(y)) if y > x => {
                format!("route {name}: the share answered 500 grew from {x}% to {y}% (a backendRef no longer resolves)")
            }
            _ => continue,
        };
        out.push(Flag {
            kind: FlagKind::BackendErrors,
            scope: gateway.to_string(),
            what,
        });
    }
}

/// What a route entry does: forward (with the percentage of requests going to an unusable backend), or
/// answer with a status itself.
enum Share {
    Forward(u64),
    Error(u64),
    Other,
}

fn share(route: &Value) -> Share {
    if let Some(status) = route["direct_response"]["status"].as_u64() {
        return if status >= 500 {
            Share::Error(status)
        } else {
            Share::Other
        };
    }
    let action = &route["route"];
    if action.get("cluster").is_some() {
        return Share::Forward(0);
    }
    let Some(clusters) = action["weighted_clusters"]["clusters"].as_array() else {
        return Share::Other;
    };
    let weight = |c: &Value| c["weight"].as_u64().unwrap_or(0);
    let total: u64 = clusters.iter().map(weight).sum();
    let invalid: u64 = clusters
        .iter()
        .filter(|c| c["name"] == INVALID_BACKEND)
        .map(weight)
        .sum();
    Share::Forward((invalid * 100).checked_div(total).unwrap_or(0))
}

/// Every route entry of every route configuration, by `<route config>/<virtual host>/<route name>`.
fn entries(resources: &Value) -> BTreeMap<String, &Value> {
    let mut out = BTreeMap::new();
    for config in resources["routes"].as_array().into_iter().flatten() {
        for vhost in config["virtual_hosts"].as_array().into_iter().flatten() {
            for route in vhost["routes"].as_array().into_iter().flatten() {
                let key = format!(
                    "{}/{}/{}",
                    config["name"].as_str().unwrap_or("?"),
                    vhost["name"].as_str().unwrap_or("?"),
                    route["name"].as_str().unwrap_or("?")
                );
                out.insert(key, route);
            }
        }
    }
    out
}

/// The resources of one type by name.
pub fn by_name<'a>(resources: &'a Value, ty: &str, key: &str) -> BTreeMap<String, &'a Value> {
    resources[ty]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| (r[key].as_str().unwrap_or("?").to_string(), r))
        .collect()
}
