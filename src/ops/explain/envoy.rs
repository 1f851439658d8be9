//! One Gateway's Envoy resources as `/debug/config_dump` serves them (canonical proto3 JSON with proto
//! field names, the shape `pier translate` prints), indexed by name, and read back into the pieces of
//! an explanation: which listener serves a route configuration, and every route entry with the route,
//! rule and Gateway listener it came from.
//!
//! That provenance is read from the names `ir::names` mints (`httproute/NS/NAME/rule/R/match/M`, virtual
//! hosts `LISTENER/HOSTNAME`, route configurations `NS/GW/PORT[/LISTENER]`), which are stable by design
//! so that an operator can trace a resource to its object.

use std::collections::BTreeMap;

use serde_json::Value;

/// A Gateway's resources, by name.
pub struct GatewayIndex<'a> {
    listeners: &'a [Value],
    routes: &'a [Value],
    pub clusters: BTreeMap<&'a str, &'a Value>,
    pub endpoints: BTreeMap<&'a str, &'a Value>,
    pub secrets: BTreeMap<&'a str, &'a Value>,
}

/// The route and rule a route entry was built from (its name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owner {
    /// `HTTPRoute` or `GRPCRoute`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub rule: usize,
}

/// A route entry and where it sits.
pub struct RawEntry<'a> {
    pub route_config: &'a str,
    pub virtual_host: &'a str,
    /// The Gateway listener (`sectionName`) the virtual host belongs to.
    pub listener: &'a str,
    pub domains: Vec<String>,
    pub position: usize,
    pub of: usize,
    pub json: &'a Value,
    pub owner: Option<Owner>,
}

/// The Envoy listener and filter chain serving a route configuration.
#[derive(Debug, Default)]
pub struct Served {
    pub envoy_listener: String,
    pub address: String,
    pub https: bool,
    pub certificates: Vec<String>,
    pub client_validation: Option<String>,
}

fn list<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc[key].as_array().map_or(&[], Vec::as_slice)
}

fn by_name<'a>(items: &'a [Value], key: &str) -> BTreeMap<&'a str, &'a Value> {
    items.iter().filter_map(|v| Some((v[key].as_str()?, v))).collect()
}

impl<'a> GatewayIndex<'a> {
    pub fn new(doc: &'a Value) -> Self {
        GatewayIndex {
            listeners: list(doc, "listeners"),
            routes: list(doc, "routes"),
            clusters: by_name(list(doc, "clusters"), "name"),
            endpoints: by_name(list(doc, "endpoints"), "cluster_name"),
            secrets: by_name(list(doc, "secrets"), "name"),
        }
    }

    /// Every route entry of every route configuration, in Envoy's order.
    pub fn entries(&self) -> Vec<RawEntry<'a>> {
        let mut out = Vec::new();
        for rc in self.routes {
            let route_config = rc["name"].as_str().unwrap_or_default();
            for vh in rc["virtual_hosts"].as_array().into_iter().flatten() {
                let virtual_host = vh["name"].as_str().unwrap_or_default();
                let domains = strings(&vh["domains"]);
                let routes = vh["routes"].as_array().map_or(&[][..], Vec::as_slice);
                for (i, json) in routes.iter().enumerate() {
                    out.push(RawEntry {
                        route_config,
                        virtual_host,
                        listener: virtual_host.split_once('/').map_or(virtual_host, |(l, _)| l),
                        domains: domains.clone(),
                        position: i + 1,
                        of: routes.len(),
                        json,
                        owner: json["name"].as_str().and_then(owner),
                    });
                }
            }
        }
        out
    }

    /// The listener whose HTTP connection manager loads `route_config` over RDS.
    pub fn served_by(&self, route_config: &str) -> Option<Served> {
        self.listeners.iter().find_map(|l| {
            let chains = l["filter_chains"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(l.get("default_filter_chain"));
            chains.filter(|c| loads(c, route_config)).map(|c| served(l, c)).next()
        })
    }

    /// The filter chain named after an HTTPS Gateway listener, for a listener with no route entries.
    pub fn https_chain(&self, listener: &str) -> Option<Served> {
        self.listeners.iter().find_map(|l| {
            l["filter_chains"]
                .as_array()?
                .iter()
                .find(|c| c["name"].as_str() == Some(listener) && c.get("transport_socket").is_some())
                .map(|c| served(l, c))
        })
    }
}

/// The route and rule of a route entry, from its name (`ir::names::parse_route`; a name cut by the length
/// cap has none).
fn owner(name: &str) -> Option<Owner> {
    let parsed = crate::ir::names::parse_route(name)?;
    let kind = match parsed.route_kind {
        "httproute" => "HTTPRoute",
        "grpcroute" => "GRPCRoute",
        _ => return None,
    };
    Some(Owner {
        kind: kind.to_string(),
        namespace: parsed.namespace.to_string(),
        name: parsed.name.to_string(),
        rule: parsed.rule,
    })
}

fn loads(chain: &Value, route_config: &str) -> bool {
    chain["filters"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|f| f["typed_config"]["rds"]["route_config_name"].as_str() == Some(route_config))
}

fn served(listener: &Value, chain: &Value) -> Served {
    let sa = &listener["address"]["socket_address"];
    let address = format!(
        "{}:{}",
        sa["address"].as_str().unwrap_or_default(),
        sa["port_value"].as_u64().unwrap_or_default()
    );
    let tls = &chain["transport_socket"]["typed_config"]["common_tls_context"];
    let certificates = tls["tls_certificate_sds_secret_configs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    Served {
        envoy_listener: listener["name"].as_str().unwrap_or_default().to_string(),
        address,
        https: chain.get("transport_socket").is_some(),
        certificates,
        client_validation: client_validation(&tls["combined_validation_context"]),
    }
}

/// How a filter chain checks client certificates (`spec.tls.frontend` of the Gateway).
fn client_validation(combined: &Value) -> Option<String> {
    let ca = combined["validation_context_sds_secret_config"]["name"].as_str()?;
    let insecure =
        combined["default_validation_context"]["trust_chain_verification"].as_str() == Some("ACCEPT_UNTRUSTED");
    Some(if insecure {
        format!(
            "client certificates requested and checked against SDS secret {ca}, but connections without a valid one are let through (AllowInsecureFallback)"
        )
    } else {
        format!("client certificates required, verified against SDS secret {ca}")
    })
}

/// The strings of a JSON array.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_give_route_and_rule() {
        let o = owner("grpcroute/default/api/rule/3/match/0").unwrap();
        assert_eq!((o.kind.as_str(), o.name.as_str(), o.rule), ("GRPCRoute", "api", 3));
        assert!(owner("httproute/default/api/rule/3").is_none());
        assert!(owner("httproute/default/aaaa#0123456789abcdef").is_none());
    }
}
