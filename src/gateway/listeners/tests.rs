//! Table tests for listener validation: route kinds, certificate references, conflicts.

use super::*;

fn gateway(yaml: &str) -> Gateway {
    serde_saphyr::from_str(yaml).expect("gateway yaml")
}

fn model(yaml: &str) -> Model {
    crate::model::load::parse_texts(&[("t.yaml".to_string(), yaml.to_string())])
        .expect("model yaml")
        .model
}

fn run(model: &Model, gw: &Gateway) -> Vec<ListenerInfo> {
    let key = ObjectKey::new("infra", "gw");
    process(model, &key, gw, &mut SecretSet::new())
}

fn cond(l: &ListenerInfo, t: Type) -> &ListenerCondition {
    l.conditions.iter().find(|c| c.type_ == t).expect("condition present")
}

#[test]
fn route_kinds_table() {
    let kinds = |yaml: &str| -> Vec<RouteKind> { serde_saphyr::from_str(yaml).unwrap() };
    // (allowedRoutes.kinds, supported kinds, InvalidRouteKinds?)
    let table: [(&str, &[&str], bool); 7] = [
        ("[]", &["HTTPRoute", "GRPCRoute"], false),
        ("[{kind: HTTPRoute}]", &["HTTPRoute"], false),
        (
            "[{kind: GRPCRoute, group: gateway.networking.k8s.io}]",
            &["GRPCRoute"],
            false,
        ),
        ("[{kind: HTTPRoute}, {kind: HTTPRoute}]", &["HTTPRoute"], false),
        ("[{kind: InvalidRoute}]", &[], true),
        ("[{kind: InvalidRoute}, {kind: HTTPRoute}]", &["HTTPRoute"], true),
        ("[{kind: HTTPRoute, group: example.com}, {kind: TLSRoute}]", &[], true),
    ];
    for (yaml, want, invalid) in table {
        let (got, c) = route_kinds(Some(&kinds(yaml)), 1);
        assert_eq!(got, want, "{yaml}");
        assert_eq!(c.is_some(), invalid, "{yaml}");
        if let Some(c) = c {
            assert_eq!((c.status, c.reason), (Status::False, Reason::InvalidRouteKinds));
        }
    }
    assert_eq!(route_kinds(None, 1).0, vec!["HTTPRoute", "GRPCRoute"]);
}

#[test]
fn conflicts_refuse_every_indistinct_listener() {
    let gw = gateway(
        "
metadata: {name: gw, namespace: infra, generation: 3}
spec:
  gatewayClassName: pier
  listeners:
  - {name: a, port: 80, protocol: HTTP, hostname: a.example.com}
  - {name: a-again, port: 80, protocol: HTTP, hostname: a.example.com}
  - {name: b, port: 80, protocol: HTTP, hostname: b.example.com}
  - {name: plain, port: 8080, protocol: HTTP}
  - {name: tls, port: 8080, protocol: HTTPS, tls: {certificateRefs: [{name: missing}]}}
  - {name: tcp, port: 8080, protocol: TCP}
",
    );
    let ls = run(&Model::default(), &gw);
    let summary: Vec<(&str, Reason, Reason, bool)> = ls
        .iter()
        .map(|l| {
            (
                l.name.as_str(),
                cond(l, Type::Accepted).reason,
                cond(l, Type::Conflicted).reason,
                l.programmable,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a", Reason::HostnameConflict, Reason::HostnameConflict, false),
            ("a-again", Reason::HostnameConflict, Reason::HostnameConflict, false),
            ("b", Reason::Accepted, Reason::NoConflicts, true),
            ("plain", Reason::ProtocolConflict, Reason::ProtocolConflict, false),
            ("tls", Reason::ProtocolConflict, Reason::ProtocolConflict, false),
            // An unsupported protocol takes no part in conflicts.
            ("tcp", Reason::UnsupportedProtocol, Reason::NoConflicts, false),
        ]
    );
    assert!(
        ls.iter()
            .all(|l| l.conditions.iter().all(|c| c.observed_generation == 3))
    );
    assert!(ls[5].kinds.is_empty(), "an unsupported listener supports no kind");
}

#[test]
fn certificate_refs_table() {
    let model = model(
        "
apiVersion: v1
kind: Secret
metadata: {name: opaque, namespace: infra}
type: Opaque
stringData: {tls.crt: x, tls.key: y}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: infra}]
  to: [{group: '', kind: Secret, name: granted}]
",
    );
    // (certificateRefs entry, reason)
    let table = [
        ("{name: missing}", Reason::InvalidCertificateRef),
        ("{name: opaque}", Reason::InvalidCertificateRef),
        (
            "{name: x, group: wrong.group.company.io}",
            Reason::InvalidCertificateRef,
        ),
        ("{name: x, kind: WrongKind}", Reason::InvalidCertificateRef),
        // Kind is checked before the grant: a ConfigMap elsewhere is invalid, not merely unpermitted.
        (
            "{name: x, kind: ConfigMap, namespace: certs}",
            Reason::InvalidCertificateRef,
        ),
        ("{name: other, namespace: certs}", Reason::RefNotPermitted),
        // Granted, but absent: the grant does not make it valid.
        ("{name: granted, namespace: certs}", Reason::InvalidCertificateRef),
    ];
    for (r, want) in table {
        let gw = gateway(&format!(
            "
metadata: {{name: gw, namespace: infra}}
spec:
  gatewayClassName: pier
  listeners:
  - {{name: https, port: 443, protocol: HTTPS, tls: {{certificateRefs: [{r}]}}}}
"
        ));
        let ls = run(&model, &gw);
        let c = cond(&ls[0], Type::ResolvedRefs);
        assert_eq!((c.status, c.reason), (Status::False, want), "{r}: {}", c.message);
        assert!(!ls[0].programmable, "{r}");
        assert_eq!(ls[0].kinds, vec!["HTTPRoute", "GRPCRoute"], "{r}: kinds stay listed");
    }
}

#[test]
fn attachment_needs_an_accepted_listener_not_a_programmed_one() {
    let gw = gateway(
        "
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: pier
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: missing}]}}
  - {name: tcp, port: 9000, protocol: TCP}
",
    );
    let ls = run(&Model::default(), &gw);
    let got: Vec<(bool, bool)> = ls.iter().map(|l| (l.programmable, l.attachable)).collect();
    // Upstream GatewayWithAttachedRoutes: a route on the HTTPS listener without its certificate is
    // attached (and counted) though nothing is served for it.
    assert_eq!(got, vec![(true, true), (false, true), (false, false)]);

    let refused = gateway(
        "
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: pier
  infrastructure: {parametersRef: {group: invalid.io, kind: InvalidParameters, name: x}}
  listeners:
  - {name: http, port: 80, protocol: HTTP}
",
    );
    let ls = run(&Model::default(), &refused);
    assert!(
        !ls[0].programmable && !ls[0].attachable,
        "nothing attaches to a Gateway pier refuses"
    );
}

#[test]
fn client_certificate_validation_without_a_valid_ca_refuses_https_listeners_only() {
    let gw = gateway(
        "
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: pier
  tls:
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}]
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: missing}]}}
",
    );
    let ls = run(&Model::default(), &gw);
    assert!(ls[0].programmable, "HTTP listeners are unaffected");
    let c = cond(&ls[1], Type::Accepted);
    assert_eq!((c.status, c.reason), (Status::False, Reason::NoValidCACertificate));
    let r = cond(&ls[1], Type::ResolvedRefs);
    assert!(
        r.message.contains("tls.certificateRefs[0]") && r.message.contains("caCertificateRefs[0]"),
        "both problems are reported: {}",
        r.message
    );
    assert!(!ls[1].programmable && !ls[1].attachable);
    assert!(ls[1].client_validation.is_none());
}
