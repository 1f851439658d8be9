//! A route entry for people: what it matches, what it does (clusters and weights, redirect, direct
//! answer) and what else it sets. Fields this module does not know are shown by their Envoy name and
//! JSON rather than dropped, so a new route feature is visible before it is explained.

use serde_json::Value;

use super::envoy::RawEntry;
use super::model::{Action, BackendRef, Entry, Origin};
use crate::ir::names::INVALID_BACKEND_CLUSTER;

/// Entry keys shown elsewhere (the name, match and action).
const SHOWN: [&str; 5] = ["name", "match", "route", "redirect", "direct_response"];
/// Route-action keys shown as backends.
const BACKEND_KEYS: [&str; 3] = ["cluster", "weighted_clusters", "cluster_not_found_response_code"];

/// `origin` gives the object a cluster came from.
pub fn entry(raw: &RawEntry<'_>, origin: impl Fn(&str) -> Option<Origin>) -> Entry {
    let j = raw.json;
    Entry {
        name: j["name"].as_str().unwrap_or_default().to_string(),
        virtual_host: raw.virtual_host.to_string(),
        position: raw.position,
        of: raw.of,
        matches: matches(&j["match"]),
        action: action(j, origin),
        also: j
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !SHOWN.contains(&k.as_str()))
            .flat_map(|(k, v)| entry_extra(k, v))
            .collect(),
    }
}

/// Per-entry settings beside match and action, one line each.
fn entry_extra(key: &str, v: &Value) -> Vec<String> {
    match key {
        "request_headers_to_add" | "response_headers_to_add" => vec![format!("{key}: {}", headers(v))],
        "typed_per_filter_config" => v
            .as_object()
            .into_iter()
            .flatten()
            .map(|(filter, config)| format!("filter {filter}: {}", flat(config)))
            .collect(),
        _ => vec![also(key, v)],
    }
}

/// `X-Added=pier, X-Log=1 (appended)`.
fn headers(v: &Value) -> String {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            let (k, val) = (h["header"]["key"].as_str(), h["header"]["value"].as_str());
            let append = match h["append_action"].as_str() {
                Some("OVERWRITE_IF_EXISTS_OR_ADD") => "",
                Some("ADD_IF_ABSENT") => " (if absent)",
                Some("OVERWRITE_IF_EXISTS") => " (if present)",
                _ => " (appended)",
            };
            format!("{}={}{append}", k.unwrap_or_default(), val.unwrap_or_default())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every cluster an entry sends traffic to, mirrors included.
pub fn clusters(entry: &Value) -> Vec<String> {
    let r = &entry["route"];
    let mut out: Vec<String> = r["cluster"].as_str().map(str::to_string).into_iter().collect();
    for w in r["weighted_clusters"]["clusters"].as_array().into_iter().flatten() {
        out.extend(w["name"].as_str().map(str::to_string));
    }
    for m in r["request_mirror_policies"].as_array().into_iter().flatten() {
        out.extend(m["cluster"].as_str().map(str::to_string));
    }
    out.retain(|c| c != INVALID_BACKEND_CLUSTER);
    out
}

/// The entry answers 500 for some or all of its traffic because a backendRef is invalid.
pub fn has_invalid_share(entry: &Value) -> bool {
    let weighted = entry["route"]["weighted_clusters"]["clusters"].as_array();
    entry["direct_response"]["status"].as_u64() == Some(500)
        || weighted
            .into_iter()
            .flatten()
            .any(|w| w["name"].as_str() == Some(INVALID_BACKEND_CLUSTER))
}

fn matches(m: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (key, v) in m.as_object().into_iter().flatten() {
        let text = |prefix: &str| format!("{prefix} {}", v.as_str().unwrap_or_default());
        match key.as_str() {
            "path" => out.push(text("path =")),
            "prefix" => out.push(text("path starts with")),
            "path_separated_prefix" => out.push(text("path prefix")),
            "safe_regex" => out.push(format!("path regex {}", v["regex"].as_str().unwrap_or_default())),
            "headers" => out.extend(v.as_array().into_iter().flatten().map(|h| named_match("header", h))),
            "query_parameters" => out.extend(v.as_array().into_iter().flatten().map(|q| named_match("query", q))),
            _ => out.push(format!("{key} {v}")),
        }
    }
    if out.is_empty() {
        out.push("everything".to_string());
    }
    out
}

/// `header x-tenant = a`, `query id ~ [0-9]+`, `header x-debug present`.
fn named_match(what: &str, m: &Value) -> String {
    let name = m["name"].as_str().unwrap_or_default();
    let not = if m["invert_match"].as_bool() == Some(true) {
        "not "
    } else {
        ""
    };
    let sm = &m["string_match"];
    let op = if sm.is_object() {
        string_match(sm)
    } else if m.get("present_match").is_some() {
        "present".to_string()
    } else {
        let rest: serde_json::Map<String, Value> = m
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k != "name" && *k != "invert_match")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Value::Object(rest).to_string()
    };
    format!("{what} {name} {not}{op}")
}

fn string_match(sm: &Value) -> String {
    let case = if sm["ignore_case"].as_bool() == Some(true) {
        " (any case)"
    } else {
        ""
    };
    let (op, value) = if let Some(v) = sm["exact"].as_str() {
        ("=", v)
    } else if let Some(v) = sm["prefix"].as_str() {
        ("starts with", v)
    } else if let Some(v) = sm["suffix"].as_str() {
        ("ends with", v)
    } else if let Some(v) = sm["contains"].as_str() {
        ("contains", v)
    } else if let Some(v) = sm["safe_regex"]["regex"].as_str() {
        ("~", v)
    } else {
        return sm.to_string();
    };
    format!("{op} {value}{case}")
}

fn action(entry: &Value, origin: impl Fn(&str) -> Option<Origin>) -> Action {
    if let Some(d) = entry.get("direct_response") {
        return Action::DirectResponse {
            status: d["status"].as_u64().unwrap_or_default(),
        };
    }
    if let Some(r) = entry.get("redirect") {
        return Action::Redirect {
            details: r.as_object().into_iter().flatten().map(|(k, v)| also(k, v)).collect(),
        };
    }
    let Some(r) = entry.get("route") else {
        return Action::Other {
            json: entry.to_string(),
        };
    };
    let backend = |cluster: &str, weight: Option<u64>| BackendRef {
        cluster: cluster.to_string(),
        weight,
        backend: origin(cluster),
        invalid: cluster == INVALID_BACKEND_CLUSTER,
    };
    let mut backends: Vec<BackendRef> = r["cluster"].as_str().map(|c| backend(c, None)).into_iter().collect();
    for w in r["weighted_clusters"]["clusters"].as_array().into_iter().flatten() {
        backends.push(backend(w["name"].as_str().unwrap_or_default(), w["weight"].as_u64()));
    }
    let details = r
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !BACKEND_KEYS.contains(&k.as_str()))
        .map(|(k, v)| route_detail(k, v))
        .collect();
    Action::Forward { backends, details }
}

fn route_detail(key: &str, v: &Value) -> String {
    match key {
        "timeout" if v.as_str() == Some("0s") => "timeout: none (disabled)".to_string(),
        "retry_policy" => format!("retries: {}", flat(v)),
        "request_mirror_policies" => {
            let mirrors: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| {
                    let cluster = m["cluster"].as_str().unwrap_or_default();
                    match m.get("runtime_fraction") {
                        Some(f) => format!("{cluster} ({})", percent(&f["default_value"])),
                        None => cluster.to_string(),
                    }
                })
                .collect();
            format!("mirrors to: {}", mirrors.join(", "))
        }
        _ => also(key, v),
    }
}

/// A `FractionalPercent` as a percentage.
fn percent(f: &Value) -> String {
    let numerator = f["numerator"].as_u64().unwrap_or_default();
    let per_cent = match f["denominator"].as_str() {
        Some("TEN_THOUSAND") => 100,
        Some("MILLION") => 10_000,
        _ => 1,
    };
    let whole = numerator / per_cent;
    let rest = numerator % per_cent;
    if rest == 0 {
        format!("{whole}%")
    } else {
        let digits = per_cent.to_string().len() - 1;
        let decimals = format!("{rest:0digits$}");
        format!("{whole}.{}%", decimals.trim_end_matches('0'))
    }
}

/// `key: value` with a nested object flattened to `k value, ...`.
fn also(key: &str, v: &Value) -> String {
    format!("{key}: {}", flat(v))
}

fn flat(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => m
            .iter()
            .filter(|(k, _)| *k != "@type")
            .map(|(k, v)| format!("{k} {}", flat(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(a) => a.iter().map(flat).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn matches_read_like_the_route() {
        let m = json!({
            "path_separated_prefix": "/api",
            "headers": [
                {"name": "x-tenant", "string_match": {"exact": "a"}},
                {"name": "x-debug", "present_match": true, "invert_match": true}
            ],
            "query_parameters": [{"name": "id", "string_match": {"safe_regex": {"regex": "[0-9]+"}}}]
        });
        assert_eq!(
            matches(&m),
            [
                "header x-tenant = a",
                "header x-debug not present",
                "path prefix /api",
                "query id ~ [0-9]+"
            ]
        );
        assert_eq!(matches(&json!({"prefix": "/"})), ["path starts with /"]);
    }

    #[test]
    fn fractions_read_as_percentages() {
        assert_eq!(percent(&json!({"numerator": 20})), "20%");
        assert_eq!(
            percent(&json!({"numerator": 333333, "denominator": "MILLION"})),
            "33.3333%"
        );
        assert_eq!(
            percent(&json!({"numerator": 1050, "denominator": "TEN_THOUSAND"})),
            "10.5%"
        );
    }

    #[test]
    fn invalid_shares_are_found_and_not_clusters() {
        let e = json!({"route": {"weighted_clusters": {"clusters": [
            {"name": "xbackend/default/real/80", "weight": 80},
            {"name": INVALID_BACKEND_CLUSTER, "weight": 20}
        ]}}});
        assert!(has_invalid_share(&e));
        assert_eq!(clusters(&e), ["xbackend/default/real/80"]);
        assert!(has_invalid_share(&json!({"direct_response": {"status": 500}})));
    }
}
