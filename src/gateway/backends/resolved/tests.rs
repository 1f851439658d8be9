use std::sync::Arc;

use super::*;
use crate::model::Model;
use crate::options::Options;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn pier_mode(deny: &[&str]) -> Options {
    let mut o = Options::default();
    o.resolution.mode = ResolveMode::Pier;
    o.guardrails.denied_cidrs = deny.iter().map(|c| c.parse().unwrap()).collect();
    o
}

fn target(host: &str, port: u16) -> ir::DnsTarget {
    ir::DnsTarget {
        hostname: host.into(),
        port,
        priority: 0,
    }
}

fn answered(model: &mut Model, host: &str, ips: &[&str]) {
    let addresses = ips.iter().map(|s| ip(s)).collect();
    model.set_resolution(host, Arc::new(Resolution::Answered { addresses }));
}

fn run(model: &Model, opts: &Options, targets: Vec<ir::DnsTarget>) -> (ir::Discovery, Vec<NameReport>) {
    let mut reports = Vec::new();
    let d = discovery(Ctx { model, opts }, targets, &mut reports);
    (d, reports)
}

fn addresses(d: &ir::Discovery) -> Vec<String> {
    let ir::Discovery::Eds { endpoints } = d else {
        panic!("not EDS: {d:?}")
    };
    endpoints
        .iter()
        .map(|e| match &e.address {
            ir::EndpointAddress::Ip(ip, port) => format!("{ip}:{port}"),
            ir::EndpointAddress::Unix(p) => p.clone(),
        })
        .collect()
}

#[test]
fn envoy_mode_keeps_strict_dns_and_reports_nothing() {
    let (d, reports) = run(
        &Model::default(),
        &Options::default(),
        vec![target("api.example.com", 443)],
    );
    assert!(matches!(d, ir::Discovery::Dns { .. }), "{d:?}");
    assert!(reports.is_empty());
    assert_eq!(condition(&reports, 1), None);
}

#[test]
fn denied_answers_are_dropped_by_the_address_policy() {
    let mut model = Model::default();
    answered(
        &mut model,
        "API.example.com.",
        &["203.0.113.7", "169.254.169.254", "10.1.2.3", "::ffff:10.9.9.9"],
    );
    let opts = pier_mode(&["10.0.0.0/8"]);
    let (d, reports) = run(&model, &opts, vec![target("api.example.com", 443)]);
    assert_eq!(addresses(&d), ["203.0.113.7:443"]);
    let rules: Vec<&str> = reports[0].dropped.iter().map(|r| r.rule.name()).collect();
    assert_eq!(rules, ["cloud-metadata", "denied-cidr", "denied-cidr"]);
    let c = condition(&reports, 3).unwrap();
    assert_eq!((c.status, c.reason), (Status::True, BackendReason::Resolved));
    assert!(
        c.message
            .starts_with("api.example.com resolved to 203.0.113.7, dropped 169.254.169.254 (rule cloud-metadata)"),
        "{}",
        c.message
    );
    assert!(c.message.contains("IPv4-mapped form of 10.9.9.9"), "{}", c.message);
}

#[test]
fn every_answer_denied_leaves_no_endpoint_and_a_false_condition() {
    let mut model = Model::default();
    answered(&mut model, "api.example.com", &["127.0.0.9"]);
    let mut opts = pier_mode(&["127.0.0.9/32"]);
    opts.guardrails.allow_loopback = true;
    let (d, reports) = run(&model, &opts, vec![target("api.example.com", 80)]);
    assert!(addresses(&d).is_empty());
    let c = condition(&reports, 1).unwrap();
    assert_eq!((c.status, c.reason), (Status::False, BackendReason::NoAllowedAddress));
}

#[test]
fn unresolved_and_failed_names_serve_nothing() {
    let mut model = Model::default();
    let opts = pier_mode(&[]);
    let (d, reports) = run(&model, &opts, vec![target("api.example.com", 80)]);
    assert!(addresses(&d).is_empty(), "a name never looked up is served nothing");
    let c = condition(&reports, 1).unwrap();
    assert_eq!((c.status, c.reason), (Status::Unknown, BackendReason::NotResolvedYet));

    let failed = Resolution::Failed {
        error: "timed out".into(),
    };
    model.set_resolution("api.example.com", Arc::new(failed));
    let (d, reports) = run(&model, &opts, vec![target("api.example.com", 80)]);
    assert!(addresses(&d).is_empty());
    let c = condition(&reports, 1).unwrap();
    assert_eq!((c.status, c.reason), (Status::False, BackendReason::LookupFailed));
    assert!(c.message.contains("timed out"), "{}", c.message);
}

#[test]
fn a_stale_answer_is_served_and_said_so() {
    let mut model = Model::default();
    let stale = Resolution::Stale {
        addresses: vec![ip("203.0.113.7")],
        error: "SERVFAIL".into(),
    };
    model.set_resolution("api.example.com", Arc::new(stale));
    let (d, reports) = run(&model, &pier_mode(&[]), vec![target("api.example.com", 80)]);
    assert_eq!(addresses(&d), ["203.0.113.7:80"]);
    let c = condition(&reports, 1).unwrap();
    assert_eq!((c.status, c.reason), (Status::True, BackendReason::ServingStaleAnswer));
}

#[test]
fn several_names_share_one_cluster_and_each_is_reported_once() {
    let mut model = Model::default();
    answered(&mut model, "a.example.com", &["203.0.113.1"]);
    answered(&mut model, "b.example.com", &["203.0.113.1", "203.0.113.2"]);
    let targets = vec![
        target("a.example.com", 8443),
        target("b.example.com", 8443),
        target("a.example.com", 8443),
    ];
    let (d, reports) = run(&model, &pier_mode(&[]), targets);
    assert_eq!(addresses(&d), ["203.0.113.1:8443", "203.0.113.2:8443"]);
    assert_eq!(reports.len(), 2);
}

#[test]
fn the_stage_resolves_every_hostname_shape_the_guardrails_allow() {
    let text = r#"
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: a, namespace: ns}
spec: {type: ExternalHostname, externalHostname: {hostname: API.Example.com.}, port: {port: 443}}
---
apiVersion: gateway.networking.k8s.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: ns}
spec: {type: ExternalHostname, externalHostname: {hostname: b.example.com}, port: {port: 443}}
---
apiVersion: gateway.networking.k8s.io/v1alpha1
kind: Backend
metadata: {name: c, namespace: ns}
spec: {destination: {type: FQDN, fqdn: {hostname: c.example.com}}}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: d, namespace: ns}
spec: {endpoints: [{fqdn: {hostname: d.example.com, port: 443}}, {fqdn: {hostname: metadata.google.internal, port: 80}}]}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: e, namespace: ns}
spec: {endpoints: [{ip: {address: 203.0.113.9, port: 443}}]}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: f, namespace: ns}
spec: {type: ExternalHostname, externalHostname: {hostname: kubernetes.default}, port: {port: 443}}
"#;
    let loaded = crate::model::load::parse_texts(&[("t.yaml".to_string(), text.to_string())]).unwrap();
    let names = hostnames(&loaded.model, &pier_mode(&[]));
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        ["api.example.com", "b.example.com", "c.example.com", "d.example.com"]
    );
}
