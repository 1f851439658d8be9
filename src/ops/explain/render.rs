//! The explanation as an indented tree for people. Stable: the same explanation prints the same bytes
//! (everything is sorted where the model is built), so its output can be diffed and pinned by tests.

use std::fmt::Write;

use super::model::{
    Action, BackendRef, ClusterView, ConditionView, Discovery, Entry, Explanation, GatewayPath, ListenerPath,
    ObjectConditions, Origin, State, TlsView,
};

/// Two spaces per level.
struct Out(String);

impl Out {
    fn line(&mut self, depth: usize, text: impl AsRef<str>) {
        let _ = writeln!(self.0, "{:width$}{}", "", text.as_ref(), width = depth * 2);
    }
}

pub fn text(e: &Explanation) -> String {
    let mut o = Out(String::new());
    let s = &e.subject;
    let api = s.api_version.as_deref().map(|a| format!(" ({a})")).unwrap_or_default();
    o.line(0, format!("{} {}/{}{api}: {}", s.kind, s.namespace, s.name, summary(e)));
    if e.gateways.is_empty() {
        o.line(0, "");
        o.line(0, "No Gateway's proxies carry it.");
    }
    for g in &e.gateways {
        o.line(0, "");
        gateway(&mut o, g);
    }
    if !e.conditions.is_empty() {
        o.line(0, "");
        o.line(0, "Conditions");
        for c in &e.conditions {
            conditions(&mut o, c);
        }
    }
    if !e.notes.is_empty() {
        o.line(0, "");
        o.line(0, "Notes");
        for n in &e.notes {
            o.line(1, format!("- {n}"));
        }
    }
    o.0
}

/// `2 problems (✗), 1 warning (!)`.
fn summary(e: &Explanation) -> String {
    let count = |n: usize, what: &str, mark: &str| match n {
        0 => None,
        1 => Some(format!("1 {what} ({mark})")),
        n => Some(format!("{n} {what}s ({mark})")),
    };
    let parts: Vec<String> = [count(e.problems, "problem", "✗"), count(e.warnings, "warning", "!")]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        "no problems".to_string()
    } else {
        parts.join(", ")
    }
}

fn gateway(o: &mut Out, g: &GatewayPath) {
    o.line(0, format!("Gateway {}", g.gateway));
    if g.listeners.is_empty() {
        o.line(1, "no route entry on this Gateway concerns it (see the conditions)");
    }
    for l in &g.listeners {
        listener(o, l);
    }
    for c in &g.clusters {
        cluster(o, c);
    }
    for t in &g.proxyless {
        o.line(
            1,
            format!(
                "proxyless gRPC clients: {} (listener and route configuration {})",
                t.target, t.listener
            ),
        );
        for e in &t.entries {
            o.line(2, format!("{}: {} -> {}", e.name, e.matches, e.action));
        }
    }
}

fn listener(o: &mut Out, l: &ListenerPath) {
    let what = match (&l.protocol, &l.address, l.programmed) {
        (Some(p), Some(a), _) => format!("{p} on {a}"),
        (_, _, Some(false)) => "not programmed: no Envoy listener serves it".to_string(),
        // An HTTP listener's Envoy listener is found through its virtual hosts, and it has none.
        _ => "no route entries on it".to_string(),
    };
    let mut names = Vec::new();
    if let Some(n) = &l.envoy_listener {
        names.push(format!("Envoy listener {n}"));
    }
    if let Some(rc) = &l.route_config {
        names.push(format!("route configuration {rc}"));
    }
    if let Some(n) = l.attached_routes {
        names.push(format!("{n} attached route{}", if n == 1 { "" } else { "s" }));
    }
    let names = if names.is_empty() {
        String::new()
    } else {
        format!(" ({})", names.join(", "))
    };
    o.line(1, format!("listener {}: {what}{names}", l.name));
    if !l.hostnames.is_empty() {
        o.line(2, format!("hostnames: {}", l.hostnames.join(", ")));
    }
    if !l.certificates.is_empty() {
        o.line(2, format!("certificates (SDS): {}", l.certificates.join(", ")));
    }
    if let Some(v) = &l.client_validation {
        o.line(2, v);
    }
    for r in &l.routes {
        o.line(2, format!("{} {}/{}", r.kind, r.namespace, r.name));
        for rule in &r.rules {
            o.line(3, format!("rule {}", rule.index));
            for e in &rule.entries {
                entry(o, e);
            }
        }
    }
}

fn entry(o: &mut Out, e: &Entry) {
    o.line(
        4,
        format!("entry {} ({}, {} of {})", e.name, e.virtual_host, e.position, e.of),
    );
    o.line(5, format!("match: {}", e.matches.join(", ")));
    match &e.action {
        Action::Forward { backends, details } => {
            let total: u64 = backends.iter().filter_map(|b| b.weight).sum();
            for b in backends {
                o.line(5, format!("→ {}", backend(b, total)));
            }
            for d in details {
                o.line(5, d);
            }
        }
        Action::Redirect { details } => o.line(5, format!("→ redirect: {}", details.join("; "))),
        Action::DirectResponse { status: 500 } => o.line(
            5,
            "→ answers 500 itself: the rule has no usable backendRef (none, or none resolved: see the conditions)",
        ),
        Action::DirectResponse { status } => o.line(5, format!("→ answers {status} itself")),
        Action::Other { json } => o.line(5, format!("→ {json}")),
    }
    for a in &e.also {
        o.line(5, format!("also {a}"));
    }
}

fn backend(b: &BackendRef, total: u64) -> String {
    let share = match b.weight {
        Some(w) if total > 0 => format!("weight {w} ({}%) ", w * 100 / total),
        Some(w) => format!("weight {w} "),
        None => String::new(),
    };
    if b.invalid {
        return format!("{share}invalid backendRef: this share answers 500 (the route's ResolvedRefs says why)");
    }
    match &b.backend {
        Some(origin) => format!("{share}cluster {} ({})", b.cluster, describe(origin)),
        None => format!("{share}cluster {}", b.cluster),
    }
}

fn describe(o: &Origin) -> String {
    let kind = match o.kind.as_str() {
        "Backend" => "Backend (gateway.networking.k8s.io)",
        "Backend.gateway.envoyproxy.io" => "Backend (gateway.envoyproxy.io)",
        k => k,
    };
    format!("{kind} {}/{} port {}", o.namespace, o.name, o.port)
}

fn cluster(o: &mut Out, c: &ClusterView) {
    let from = c
        .origin
        .as_ref()
        .map(|x| format!(", from {}", describe(x)))
        .unwrap_or_default();
    o.line(1, format!("cluster {}{from}", c.name));
    match &c.discovery {
        Discovery::StrictDns { targets, settings } => {
            let settings = if settings.is_empty() {
                String::new()
            } else {
                format!(" ({})", settings.join(", "))
            };
            o.line(
                2,
                format!("STRICT_DNS: Envoy resolves {}{settings}", targets.join(", ")),
            );
        }
        Discovery::Eds {
            service_name,
            endpoints: Some(e),
        } if e.is_empty() => {
            o.line(
                2,
                format!("EDS {service_name}: no endpoints (every request to it fails)"),
            );
        }
        Discovery::Eds {
            service_name,
            endpoints: Some(e),
        } => {
            o.line(2, format!("EDS {service_name}: {}", e.join(", ")));
        }
        Discovery::Eds {
            service_name,
            endpoints: None,
        } => {
            o.line(
                2,
                format!("EDS {service_name}: no ClusterLoadAssignment is served for it"),
            );
        }
        Discovery::Aggregate { clusters } => {
            o.line(2, format!("AGGREGATE: fails over in order to {}", clusters.join(", ")));
        }
        Discovery::DynamicForwardProxy { dns_cache } => o.line(
            2,
            format!(
                "DYNAMIC_FORWARD_PROXY: connects where the request's authority says (DNS cache {})",
                dns_cache.as_deref().unwrap_or("-")
            ),
        ),
        Discovery::Missing => o.line(2, "not among the Gateway's clusters"),
        Discovery::Other { description } => o.line(2, description),
    }
    let facts = [
        c.protocol.as_ref().map(|p| format!("protocol: {p}")),
        c.connect_timeout.as_ref().map(|t| format!("connect timeout: {t}")),
        (!c.circuit_breakers.is_empty()).then(|| format!("circuit breakers: {}", c.circuit_breakers.join("; "))),
        c.outlier_detection.as_ref().map(|d| format!("outlier detection: {d}")),
    ];
    for f in facts.into_iter().flatten() {
        o.line(2, f);
    }
    match &c.tls {
        Some(t) => tls(o, t),
        None if !matches!(c.discovery, Discovery::Aggregate { .. } | Discovery::Missing) => {
            o.line(2, "upstream TLS: none (plaintext)");
        }
        None => {}
    }
}

fn tls(o: &mut Out, t: &TlsView) {
    o.line(2, "upstream TLS:");
    o.line(3, format!("SNI: {}", t.sni));
    o.line(3, format!("trust: {}", t.trust));
    if !t.san_checks.is_empty() {
        o.line(
            3,
            format!("certificate SAN must match one of: {}", t.san_checks.join("; ")),
        );
    }
    o.line(
        3,
        format!(
            "client certificate: {}",
            t.client_certificate.as_deref().unwrap_or("none")
        ),
    );
    o.line(
        3,
        format!("TLS versions: {}", t.versions.as_deref().unwrap_or("Envoy's defaults")),
    );
    if !t.alpn.is_empty() {
        o.line(3, format!("ALPN: {}", t.alpn.join(", ")));
    }
    for p in &t.parameters {
        o.line(3, p);
    }
}

fn conditions(o: &mut Out, c: &ObjectConditions) {
    let scope = c.scope.as_ref().map(|s| format!(", {s}")).unwrap_or_default();
    o.line(
        1,
        format!("{} {}/{} ({}){scope}", c.kind, c.namespace, c.name, c.api_version),
    );
    for cond in &c.conditions {
        condition(o, cond);
    }
}

fn condition(o: &mut Out, c: &ConditionView) {
    let mark = match c.state {
        State::Ok => "✓",
        State::Warning => "!",
        State::Problem => "✗",
    };
    o.line(
        2,
        format!("{mark} {}={} {}: {}", c.type_, c.status, c.reason, c.message),
    );
    if let Some(h) = &c.hint {
        o.line(3, format!("→ {h}"));
    }
}
