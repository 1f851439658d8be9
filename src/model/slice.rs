//! EndpointSlices, as pier keeps them: only what the translator reads of each endpoint — its
//! addresses, its conditions, its hostname and zone.
//!
//! The model holds every EndpointSlice of the cluster, and the `k8s-openapi` type holds every optional
//! field of an endpoint inline (its `targetRef` alone is seven optional strings): 352 bytes an endpoint
//! before any of its strings, 3.7 KB for a slice of eight bare addresses (DHAT of `pier serve` at
//! 10,000 routes, `docs/performance.md`). A real cluster's endpoints also carry a `targetRef`, a
//! `nodeName` and hints, so the cost grows with the cluster rather than with what pier serves. This type
//! reads the same document and drops the rest as it is read, as trimmed Pods do (`model::pod`). Two
//! slices that differ only in what was dropped (a Pod's new resourceVersion in a `targetRef`) compare
//! equal where their metadata is the same, as in a file; from a cluster the slice's own
//! resourceVersion still moves, and the engine finds the same endpoints and pushes nothing.
//!
//! The document is read as the full type reads it: the same field names, and a missing or `null`
//! `metadata`, `addressType`, `endpoints` or endpoint `addresses` taken as empty (the API server
//! validates them; a file's slice without them has no endpoint to serve), so a slice the full type
//! reads is read, and one it refuses is refused.

use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// A `discovery.k8s.io/v1` EndpointSlice, trimmed to what pier reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    #[serde(default, deserialize_with = "or_default")]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "or_default")]
    pub address_type: String,
    #[serde(default, deserialize_with = "or_default")]
    pub endpoints: Vec<Endpoint>,
    pub ports: Option<Vec<EndpointPort>>,
}

/// One endpoint of a slice, trimmed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    #[serde(default, deserialize_with = "or_default")]
    pub addresses: Vec<String>,
    pub conditions: Option<EndpointConditions>,
    pub hostname: Option<String>,
    pub zone: Option<String>,
}

/// A field that is empty when missing or `null`, as `k8s-openapi` reads the slice's required fields.
fn or_default<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document() -> serde_json::Value {
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abc", "namespace": "apps",
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false},
                 "hostname": "web-0", "zone": "z1", "nodeName": "node-1",
                 "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "apps", "uid": "u",
                               "resourceVersion": "17"},
                 "hints": {"forZones": [{"name": "z1"}]}},
                {"addresses": ["10.0.0.2"]}
            ]
        })
    }

    #[test]
    fn reads_what_the_full_type_reads_of_the_fields_pier_uses() {
        let full: k8s_openapi::api::discovery::v1::EndpointSlice = serde_json::from_value(document()).unwrap();
        let trimmed: EndpointSlice = serde_json::from_value(document()).unwrap();
        assert_eq!(trimmed.metadata, full.metadata);
        assert_eq!(trimmed.address_type, full.address_type);
        assert_eq!(trimmed.ports, full.ports);
        assert_eq!(trimmed.endpoints.len(), full.endpoints.len());
        for (t, f) in trimmed.endpoints.iter().zip(&full.endpoints) {
            assert_eq!(
                (&t.addresses, &t.conditions, &t.hostname, &t.zone),
                (&f.addresses, &f.conditions, &f.hostname, &f.zone)
            );
        }
    }

    #[test]
    fn a_change_pier_does_not_read_compares_equal() {
        let mut moved = document();
        moved["endpoints"][0]["targetRef"]["resourceVersion"] = json!("18");
        moved["endpoints"][0]["nodeName"] = json!("node-2");
        let a: EndpointSlice = serde_json::from_value(document()).unwrap();
        let b: EndpointSlice = serde_json::from_value(moved).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn accepts_and_refuses_what_the_full_type_does() {
        type Full = k8s_openapi::api::discovery::v1::EndpointSlice;
        let mut cases = Vec::new();
        for field in ["metadata", "addressType", "endpoints", "ports"] {
            let mut missing = document();
            missing.as_object_mut().unwrap().remove(field);
            let mut null = document();
            null[field] = json!(null);
            cases.extend([missing, null]);
        }
        for (field, bad) in [
            ("addressType", json!(4)),
            ("endpoints", json!({})),
            ("ports", json!("x")),
        ] {
            let mut doc = document();
            doc[field] = bad;
            cases.push(doc);
        }
        let mut bad_endpoint = document();
        bad_endpoint["endpoints"][1]["addresses"] = json!(null);
        cases.push(bad_endpoint.clone());
        bad_endpoint["endpoints"][1]["addresses"] = json!("10.0.0.2");
        cases.push(bad_endpoint);
        for doc in cases {
            let full = serde_json::from_value::<Full>(doc.clone());
            let ours = serde_json::from_value::<EndpointSlice>(doc.clone());
            assert_eq!(full.is_ok(), ours.is_ok(), "{doc}");
            if let (Ok(full), Ok(ours)) = (full, ours) {
                assert_eq!(
                    (ours.address_type, ours.endpoints.len()),
                    (full.address_type, full.endpoints.len())
                );
            }
        }
    }
}
