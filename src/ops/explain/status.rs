//! Reading pier's status documents (`pier translate`'s `status`, `/debug/status`'s `objects`: the same
//! `ObjectStatus` serialisation) and saying, for each condition, whether it is a problem and what to
//! change.
//!
//! The advice is keyed on the reason (and, for the destination guardrails, on the rule the message
//! names), because that is what pier's status vocabulary guarantees; messages are for people and only
//! consulted to pick among rules.

use std::collections::BTreeSet;

use serde_json::Value;

use super::model::{ConditionView, ObjectConditions, State};

/// Kinds whose `ns/name` a status message may name: backendRef targets, and the policies a route's
/// ResolvedRefs says it ignored.
const REF_KINDS: [&str; 4] = ["Service", "XBackend", "Backend", "BackendTLSPolicy"];

/// `kind`, `apiVersion`, `namespace/name` of a status object.
pub fn identity(obj: &Value) -> (&str, &str, String) {
    let meta = &obj["metadata"];
    let ns = meta["namespace"].as_str().unwrap_or_default();
    let name = meta["name"].as_str().unwrap_or_default();
    (
        obj["kind"].as_str().unwrap_or_default(),
        obj["apiVersion"].as_str().unwrap_or_default(),
        format!("{ns}/{name}"),
    )
}

/// The API group of an `apiVersion` (`""` for the core group).
pub fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The Gateways (`ns/name`) an object's status names as parents or ancestors.
pub fn gateways_of(obj: &Value) -> BTreeSet<String> {
    scoped_lists(&obj["status"])
        .filter_map(|(r, _)| r.map(gateway_key))
        .collect()
}

/// `ns/name` of a parentRef/ancestorRef.
fn gateway_key(r: &Value) -> String {
    format!(
        "{}/{}",
        r["namespace"].as_str().unwrap_or_default(),
        r["name"].as_str().unwrap_or_default()
    )
}

/// Each list of conditions in a status with the reference it is scoped to (`None`: the object's own).
fn scoped_lists(status: &Value) -> impl Iterator<Item = (Option<&Value>, &Value)> {
    let own = status.get("conditions").map(|c| (None, c));
    let scoped = ["parents", "ancestors"].into_iter().flat_map(move |key| {
        status[key].as_array().into_iter().flatten().map(|p| {
            let r = p.get("parentRef").or_else(|| p.get("ancestorRef"));
            (r, &p["conditions"])
        })
    });
    own.into_iter().chain(scoped)
}

/// The conditions of `obj`, one entry per scope; scopes on a Gateway outside `only` are left out.
pub fn conditions_of(obj: &Value, only: Option<&BTreeSet<String>>) -> Vec<ObjectConditions> {
    let (kind, api_version, key) = identity(obj);
    let (namespace, name) = key.split_once('/').unwrap_or_default();
    let entry = |scope: Option<String>, conditions: &Value| ObjectConditions {
        kind: kind.to_string(),
        api_version: api_version.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        scope,
        conditions: conditions.as_array().into_iter().flatten().map(condition).collect(),
    };
    let mut out = Vec::new();
    for (r, conditions) in scoped_lists(&obj["status"]) {
        let scope = r.map(gateway_key);
        if scope.as_ref().is_some_and(|g| only.is_some_and(|o| !o.contains(g))) {
            continue;
        }
        out.push(entry(scope.map(|g| format!("Gateway {g}")), conditions));
    }
    for l in obj["status"]["listeners"].as_array().into_iter().flatten() {
        let scope = format!("listener {}", l["name"].as_str().unwrap_or_default());
        out.push(entry(Some(scope), &l["conditions"]));
    }
    out
}

fn condition(c: &Value) -> ConditionView {
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    let (type_, status, reason, message) = (s("type"), s("status"), s("reason"), s("message"));
    let state = state(&type_, &status, &reason);
    let hint = (state != State::Ok)
        .then(|| advice(&reason, &message))
        .flatten()
        .map(str::to_string);
    ConditionView {
        type_,
        status,
        reason,
        message,
        state,
        hint,
    }
}

/// Positive-polarity types are healthy when True, the others (Conflicted, ...) when False; a few
/// reasons mean "works, but" whatever the polarity says.
fn state(type_: &str, status: &str, reason: &str) -> State {
    let unhealthy = match type_ {
        "Accepted" | "ResolvedRefs" | "Programmed" | "Resolved" | "pier.dev/ProxylessGRPC" => status != "True",
        "Conflicted" | "PartiallyInvalid" | "Deprecated" | "pier.dev/EnvoyRejected" => status == "True",
        _ => false,
    };
    match (type_, reason) {
        // Envoy serves the route whole; only proxyless gRPC clients miss what the message lists.
        ("Deprecated" | "pier.dev/ProxylessGRPC", _) | (_, "ServingStaleAnswer") if unhealthy => State::Warning,
        (_, "ListenersNotValid") => State::Warning,
        _ if unhealthy => State::Problem,
        _ => State::Ok,
    }
}

/// What to change for a condition with `reason` and `message`, when pier knows.
pub fn advice(reason: &str, message: &str) -> Option<&'static str> {
    if let Some(rule) = refused_rule(message) {
        return Some(guardrail_advice(rule));
    }
    if message.starts_with("served to proxyless gRPC clients") {
        return Some(
            "proxyless gRPC clients cannot run what the message lists: drop it from the rule or Backend, or send those \
             clients through Envoy (docs/proxyless-grpc.md)",
        );
    }
    if message.contains("DynamicResolver") && message.contains("disabled") {
        return Some(
            "an operator can enable DynamicResolver Backends with --enable-dynamic-resolver (an open forward proxy)",
        );
    }
    reference_advice(reason).or_else(|| shape_advice(reason))
}

/// Reasons about references between objects.
fn reference_advice(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "BackendNotFound" => "create the object, or fix the backendRef's name, namespace or port",
        "RefNotPermitted" => "add a ReferenceGrant in the target's namespace that allows this kind from this namespace",
        "InvalidKind" => "reference a kind pier reads (Service, XBackend, Backend), with its group",
        "InvalidBackend" => "fix the Backend the message names (pier explain backend/NS/NAME or xbackend/NS/NAME)",
        "UnresolvedRefs" => "fix the reference the message names",
        "TargetNotFound" => "point targetRefs at an existing Service, and sectionName at one of its port names",
        "InvalidCertificateRef" => {
            "point certificateRefs at a kubernetes.io/tls Secret holding tls.crt and tls.key (a ReferenceGrant across namespaces)"
        }
        "InvalidClientCertificateRef" => {
            "point the client certificate reference at a Secret with tls.crt and tls.key that pier may read"
        }
        "InvalidCACertificateRef" | "NoValidCACertificate" => {
            "point caCertificateRefs at a ConfigMap or Secret whose ca.crt holds PEM certificates"
        }
        "NotAllowedByListeners" => {
            "allow the route's namespace and kind in the listener's allowedRoutes, or attach to another listener"
        }
        "NoMatchingListenerHostname" => "give the route a hostname that intersects a listener's hostname",
        "NoMatchingParent" => "fix the parentRef's sectionName or port to name a listener of the Gateway",
        "RejectedByProxy" => {
            "Envoy rejected the configuration built from this object; see the message (its last accepted version keeps serving)"
        }
        _ => return None,
    })
}

/// Reasons about an object's own spec.
fn shape_advice(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "Invalid" | "UnsupportedValue" => "change the field the message names",
        "UnsupportedProtocol" => "pier carries HTTP, HTTPS and gRPC: change the protocol the message names",
        "HostnameConflict" => "give the conflicting listeners or routes distinct hostnames",
        "ProtocolConflict" => "listeners that share a port must use the same protocol",
        "Conflicted" => "another policy on the same target takes precedence: remove one, or target different sections",
        "InvalidParameters" => "remove the parametersRef: pier takes no parameters",
        "ListenersNotValid" => "see the listeners' conditions",
        "InvalidRouteKinds" => "list only HTTPRoute and GRPCRoute in the listener's allowedRoutes.kinds",
        "UnsupportedAddress" | "AddressNotAssigned" | "AddressNotUsable" => {
            "remove spec.addresses: the proxies' addresses are set where they are deployed"
        }
        "DraftShape" => {
            "rewrite the Backend in the GEP-4488 shape (spec.type, spec.port, spec.externalHostname, spec.tls)"
        }
        "PortPortShape" => "write spec.port.number instead of spec.port.port",
        "ServingStaleAnswer" | "LookupFailed" => {
            "DNS lookups of the name fail: check the name and pier's resolver (--dns-resolver)"
        }
        "NotResolvedYet" => "wait for pier's first lookup of the name",
        "NoAllowedAddress" => "the name resolves only to addresses the guardrails refuse: point it elsewhere",
        _ => return None,
    })
}

/// The guardrail rule a message says refused a destination (`... refused by rule loopback: ...`).
fn refused_rule(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("refused by rule ")?;
    rest.split([':', ' ', ',', ')']).next().filter(|r| !r.is_empty())
}

/// Rule names are `gateway::policy::Rule::name`'s.
fn guardrail_advice(rule: &str) -> &'static str {
    match rule {
        "loopback" => "loopback is allowed for development only: --allow-loopback (an operator option)",
        "denied-cidr" => "the operator's --deny-cidr covers this address: use another one",
        "cluster-local-hostname" => {
            "reference the Service as a backendRef instead; an operator can lift this for one suffix with --allow-cluster-local-suffix"
        }
        "hostname-not-allowed" => "the operator's --allow-hostname list must include this name",
        "unix-sockets-disabled" => "an operator can allow unix socket endpoints with --allow-unix-sockets",
        "single-label-hostname" => "write the fully qualified name",
        "internal-hostname" => "use a name that resolves publicly",
        "ip-literal-hostname" => "write a hostname, or use an IP endpoint (Envoy Gateway Backend spec.endpoints[].ip)",
        "wildcard-hostname" => "name one host",
        "invalid-hostname" => "fix the hostname (RFC 1123)",
        _ => "no option allows this destination: point the Backend at a routable address",
    }
}

/// Backend objects (`kind`, `ns/name`) a message names, such as `XBackend default/ghost not found`.
pub fn named_refs(message: &str) -> Vec<(String, String)> {
    let words: Vec<&str> = message.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| REF_KINDS.contains(&w[0]))
        .filter_map(|w| {
            let key = w[1].trim_end_matches([':', ';', ',', ')', '.']);
            let (ns, name) = key.split_once('/')?;
            let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            (ok(ns) && ok(name)).then(|| (w[0].to_string(), key.to_string()))
        })
        .collect()
}

/// Every message of `obj`'s conditions with the Gateway (`ns/name`) it is scoped to, if any, and whether
/// the condition is a problem.
pub fn scoped_messages(obj: &Value) -> impl Iterator<Item = (Option<String>, &str, bool)> {
    scoped_lists(&obj["status"]).flat_map(|(r, cs)| {
        let gateway = r.map(gateway_key);
        cs.as_array().into_iter().flatten().filter_map(move |c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default();
            let problem = state(s("type"), s("status"), s("reason")) == State::Problem;
            Some((gateway.clone(), c["message"].as_str()?, problem))
        })
    })
}

/// Every message of `obj`'s conditions, on the Gateways in `only` (all when `None`).
pub fn messages<'a>(obj: &'a Value, only: Option<&'a BTreeSet<String>>) -> impl Iterator<Item = &'a str> {
    scoped_messages(obj)
        .filter(move |(g, _, _)| g.as_ref().is_none_or(|g| only.is_none_or(|o| o.contains(g))))
        .map(|(_, m, _)| m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn problems_follow_each_types_polarity_and_carry_advice() {
        let c = condition(
            &json!({"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound",
            "message": "XBackend default/ghost not found"}),
        );
        assert_eq!(c.state, State::Problem);
        assert!(c.hint.unwrap().starts_with("create the object"));
        let c = condition(&json!({"type": "Conflicted", "status": "False", "reason": "NoConflicts", "message": ""}));
        assert!(c.state == State::Ok && c.hint.is_none());
        let c = condition(&json!({"type": "Deprecated", "status": "True", "reason": "PortPortShape", "message": ""}));
        assert_eq!(c.state, State::Warning);
        assert!(c.hint.unwrap().contains("spec.port.number"));
        let c = condition(
            &json!({"type": "Accepted", "status": "False", "reason": "DestinationNotAllowed",
            "message": "spec.x: destination \"localhost\" refused by rule loopback: loopback addresses ..."}),
        );
        assert!(c.hint.unwrap().contains("--allow-loopback"));
    }

    #[test]
    fn messages_name_backend_objects() {
        assert_eq!(
            named_refs("XBackend default/ghost not found; Backend default/phantom not found"),
            [
                ("XBackend".to_string(), "default/ghost".to_string()),
                ("Backend".to_string(), "default/phantom".to_string())
            ]
        );
        assert_eq!(
            named_refs("Service a/b: cross-namespace reference from HTTPRoute c needs a ReferenceGrant"),
            [("Service".to_string(), "a/b".to_string())]
        );
        assert!(named_refs("spec.port.port is the v1.6.0 shape").is_empty());
    }
}
