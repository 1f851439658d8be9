use super::*;
use crate::api::backend::BackendShape;
use crate::api::xbackend::BackendTlsMode;

const ALL_KINDS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: pier
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: g}
spec: {parentRefs: [{name: gw}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: rg}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: app}]
  to: [{group: "", kind: Service}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: tls}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation: {hostname: web.example.com, wellKnownCACertificates: System}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: openai}
spec:
  type: ExternalHostname
  port: {port: 443}
  externalHostname: {hostname: api.openai.com}
  tls: {mode: ServerOnly}
---
apiVersion: gateway.networking.k8s.io/v1alpha1
kind: Backend
metadata: {name: gep}
spec: {type: EndpointSelector, port: {port: 8080}, endpointSelector: {selectorRef: {name: web}}}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: eg}
spec: {endpoints: [{ip: {address: 10.0.0.1, port: 80}}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.7]}]
ports: [{port: 8080}]
---
apiVersion: v1
kind: Secret
metadata: {name: cert}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca}
data: {ca.crt: "-----BEGIN CERTIFICATE-----"}
---
apiVersion: certificates.k8s.io/v1beta1
kind: ClusterTrustBundle
metadata: {name: roots, namespace: ignored}
spec: {signerName: "", trustBundle: "-----BEGIN CERTIFICATE-----"}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
"#;

fn ok(text: &str) -> Parsed {
    parse("t.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn one(text: &str) -> Object {
    let mut parsed = ok(text);
    assert_eq!(parsed.objects.len(), 1, "{:?}", parsed.warnings);
    parsed.objects.remove(0).1
}

fn err(text: &str) -> String {
    parse("examples/x.yaml", text)
        .expect_err("input is invalid")
        .to_string()
}

#[test]
fn every_supported_kind_parses() {
    let parsed = ok(ALL_KINDS);
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let kinds: Vec<_> = parsed.objects.iter().map(|(_, o)| o.kind_name()).collect();
    assert_eq!(
        kinds,
        [
            "GatewayClass",
            "Gateway",
            "HTTPRoute",
            "GRPCRoute",
            "ReferenceGrant",
            "BackendTLSPolicy",
            "XBackend",
            "Backend",
            "Backend.gateway.envoyproxy.io",
            "Service",
            "EndpointSlice",
            "Secret",
            "ConfigMap",
            "ClusterTrustBundle",
            "Namespace",
        ]
    );
    let indices: Vec<_> = parsed.objects.iter().map(|(d, _)| d.index).collect();
    assert_eq!(indices, (0..15).collect::<Vec<_>>());
    for (_, object) in &parsed.objects {
        let meta = object.metadata();
        assert!(meta.name.is_some());
        assert_eq!(
            meta.namespace.is_some(),
            object.is_namespaced(),
            "{}",
            object.kind_name()
        );
    }
}

#[test]
fn kind_table_names_match_object_kind_names() {
    // Messages and duplicate keys must use one vocabulary.
    for text in ALL_KINDS.split("\n---\n") {
        let value: Value = serde_saphyr::from_str(text).unwrap();
        let (api_version, kind) = (value["apiVersion"].as_str().unwrap(), value["kind"].as_str().unwrap());
        let known = kinds::Kind::of(api_version, kind).unwrap();
        assert_eq!(known.name(), one(text).kind_name());
    }
}

#[test]
fn older_versions_map_to_v1_types() {
    let rg = one(
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: rg}\n\
         spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: a}], to: [{group: '', kind: Service}]}\n",
    );
    assert!(matches!(rg, Object::ReferenceGrant(ref g) if g.spec.from[0].namespace == "a"));
    let policy = one(
        "apiVersion: gateway.networking.k8s.io/v1alpha3\nkind: BackendTLSPolicy\nmetadata: {name: p}\n\
         spec: {targetRefs: [{group: '', kind: Service, name: web}], validation: {hostname: h, wellKnownCACertificates: System}}\n",
    );
    assert!(matches!(policy, Object::BackendTlsPolicy(ref p) if p.policy.spec.validation.hostname == "h"));
    let gateway = one(
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: Gateway\nmetadata: {name: g}\n\
         spec: {gatewayClassName: c, listeners: [{name: l, port: 80, protocol: HTTP}]}\n",
    );
    assert!(matches!(gateway, Object::Gateway(_)));
    let bundle = one(
        "apiVersion: certificates.k8s.io/v1alpha1\nkind: ClusterTrustBundle\nmetadata: {name: b, namespace: x}\n\
         spec: {trustBundle: pem}\n",
    );
    assert!(matches!(bundle, Object::ClusterTrustBundle(ref b) if b.spec.trust_bundle == "pem"));
    assert_eq!(bundle.key(), crate::model::ObjectKey::cluster("b"), "cluster-scoped");
    let ga = one(
        "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: b}\n\
         spec: {signerName: example.com/s, trustBundle: pem}\n",
    );
    assert!(matches!(ga, Object::ClusterTrustBundle(ref b) if b.spec.signer_name.as_deref() == Some("example.com/s")));
}

#[test]
fn backend_shape_follows_spec_destination() {
    let draft = one(
        "apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: Backend\nmetadata: {name: d}\n\
         spec:\n  destination:\n    type: FQDN\n    ports: [{port: 443, protocol: HTTPS}]\n    fqdn: {hostname: api.example.com}\n",
    );
    let Object::Backend(draft) = draft else {
        panic!("not a Backend")
    };
    assert!(matches!(draft.spec, BackendShape::Draft(_)));
    let Object::Backend(gep) = one(ALL_KINDS.split("\n---\n").nth(7).unwrap()) else {
        panic!()
    };
    assert!(matches!(gep.spec, BackendShape::Gep(_)));
    // A field of the other shape is an error of the shape the user wrote, not a fallback.
    let e = err(
        "apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: Backend\nmetadata: {name: d}\n\
                 spec: {destination: {type: FQDN}, port: {port: 1}}\n",
    );
    assert!(
        e.contains("(Backend default/d): spec.port: unknown field `port`"),
        "{e}"
    );
}

const XBACKEND: &str = "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\n\
    metadata: {name: openai}\nspec:\n  type: ExternalHostname\n  port: {port: 443}\n";

#[test]
fn unknown_field_names_file_document_object_and_path() {
    let text = format!("# leading comment\n---\n{ALL_KINDS}---\n{XBACKEND}  tls: {{mode: ServerOnly, foo: 1}}\n");
    let e = err(&text);
    assert!(
        e.starts_with("examples/x.yaml: document 15 (XBackend default/openai): spec.tls.foo: unknown field `foo`"),
        "{e}"
    );
}

#[test]
fn bad_enum_value_lists_the_variants() {
    let e = err(&format!("{XBACKEND}  tls: {{mode: Foo}}\n"));
    assert!(
        e.starts_with("examples/x.yaml: document 0 (XBackend default/openai): spec.tls.mode: unknown variant `Foo`"),
        "{e}"
    );
    assert!(e.contains("ServerOnly"), "{e}");
    let ok = one(&format!("{XBACKEND}  tls: {{mode: ClientAndServer}}\n"));
    assert!(
        matches!(ok, Object::XBackend(ref x) if x.spec.tls.as_ref().unwrap().mode == BackendTlsMode::ClientAndServer)
    );
}

#[test]
fn unsupported_kind_is_a_warning() {
    let parsed = ok(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
    );
    assert_eq!(parsed.objects.len(), 1);
    assert_eq!(parsed.warnings.len(), 1);
    assert_eq!(
        parsed.warnings[0].to_string(),
        r#"t.yaml document 0: skipping unsupported kind "Deployment" (apiVersion "apps/v1")"#
    );
}

#[test]
fn missing_api_version_or_kind_or_name_is_an_error() {
    assert_eq!(
        err("kind: Service\nmetadata: {name: s}\n"),
        "examples/x.yaml: document 0: missing apiVersion"
    );
    assert_eq!(
        err("apiVersion: v1\nmetadata: {name: s}\n"),
        "examples/x.yaml: document 0: missing kind"
    );
    assert_eq!(
        err("apiVersion: v1\nkind: Service\n"),
        "examples/x.yaml: document 0 (Service): missing metadata.name"
    );
    assert_eq!(
        err("- a\n- b\n"),
        "examples/x.yaml: document 0: expected a mapping (an object), found a list"
    );
}

#[test]
fn json_input_single_and_concatenated() {
    let text = "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"Service\",\n\t\"metadata\": {\"name\": \"a\"}\n}\n\
                {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"b\"}}";
    let parsed = ok(text);
    assert_eq!(parsed.objects.len(), 2);
    assert_eq!(parsed.objects[1].0, DocRef::new("t.yaml", 1));
    let e = err("{\"apiVersion\": \"v1\",, }");
    assert!(
        e.starts_with("examples/x.yaml: document 0: invalid JSON: ") && e.contains("line 1"),
        "{e}"
    );
}

#[test]
fn kubectl_list_is_expanded_and_items_are_named_in_errors() {
    let list = "apiVersion: v1\nkind: List\nitems:\n\
                - {apiVersion: v1, kind: Service, metadata: {name: a, namespace: n}}\n\
                - {apiVersion: x/v1, kind: Foo, metadata: {name: f}}\n\
                - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n";
    let parsed = ok(list);
    assert_eq!(parsed.objects.len(), 2);
    assert!(parsed.objects.iter().all(|(d, _)| d.index == 0));
    assert!(
        parsed.warnings[0].message.starts_with("items[1]: skipping"),
        "{:?}",
        parsed.warnings
    );
    let e = err(&format!(
        "{list}- {{apiVersion: v1, kind: Service, metadata: {{name: c}}, spec: {{ports: 5}}}}\n"
    ));
    assert!(
        e.starts_with("examples/x.yaml: document 0 items[3] (Service default/c): spec.ports: invalid type"),
        "{e}"
    );
}

#[test]
fn secret_string_data_wins_over_data() {
    let secret = one("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n\
                      data: {a: b2xk, keep: eA==}\nstringData: {a: new, b: two}\n");
    let Object::Secret(secret) = secret else {
        panic!("not a Secret")
    };
    assert!(secret.string_data.is_none());
    let data = secret.data.unwrap();
    let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
    assert_eq!(
        (text("a"), text("b"), text("keep")),
        ("new".into(), "two".into(), "x".into())
    );
}

#[test]
fn namespaces_are_defaulted_and_dropped_for_cluster_scope() {
    let parsed = ok("apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n\
                     apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: ''}\n---\n\
                     apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c, namespace: x}\n\
                     spec: {controllerName: pier.dev/gateway}\n");
    let keys: Vec<_> = parsed.objects.iter().map(|(_, o)| o.key().to_string()).collect();
    assert_eq!(keys, ["default/a", "default/b", "c"]);
    assert_eq!(parsed.objects[0].1.metadata().namespace.as_deref(), Some("default"));
    assert_eq!(parsed.objects[2].1.metadata().namespace, None);
}

#[test]
fn empty_documents_are_skipped_but_counted() {
    // A comment before the first `---` is not a document of its own: indices are the YAML parser's.
    let parsed = ok("# header\n---\n# empty\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n---\n");
    assert_eq!(parsed.objects.len(), 1);
    assert_eq!(parsed.objects[0].0.index, 1);
    assert!(ok("").objects.is_empty());
    assert!(ok("# nothing\n").objects.is_empty());
}

#[test]
fn yaml_syntax_error_reports_line_and_column() {
    let e = err("apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n---\nkey: [unclosed\nother: 1\n");
    assert!(e.starts_with("examples/x.yaml: document 1: invalid YAML: "), "{e}");
    assert!(e.contains("line") && e.contains("column"), "{e}");
}

#[test]
fn merge_keys_and_field_paths_in_core_types() {
    let text = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n\
                spec:\n  ports:\n  - &p {port: 80, protocol: TCP}\n  - {<<: *p, port: \"eighty\"}\n";
    let e = err(text);
    assert!(
        e.starts_with("examples/x.yaml: document 0 (Service default/s): spec.ports[1].port: invalid type"),
        "{e}"
    );
}

#[test]
fn http_route_extras_keep_retry_and_sessions_and_set_aside_unknown_filters() {
    let text = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules:
  - retry: {attempts: 2, codes: [503], backoff: 100ms}
    sessionPersistence: {type: Cookie, sessionName: s}
    filters:
    - {type: ExternalAuth, externalAuth: {protocol: HTTP}}
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: "1"}]}}
    backendRefs:
    - {name: a, port: 80, filters: [{type: FutureFilter}]}
  - backendRefs: [{name: b, port: 80}]
"#;
    let parsed = parse("t.yaml", text).unwrap_or_else(|e| panic!("{e}"));
    let Object::HttpRoute(route, extras) = &parsed.objects[0].1 else {
        panic!("HTTPRoute expected")
    };
    let rules = route.spec.rules.as_deref().unwrap();
    assert_eq!(
        rules[0].filters.as_ref().unwrap().len(),
        1,
        "the unknown filter is set aside"
    );
    assert!(
        rules[0].backend_refs.as_ref().unwrap()[0]
            .filters
            .as_ref()
            .unwrap()
            .is_empty()
    );
    let retry = extras.rules[0].retry.as_ref().unwrap();
    assert_eq!((retry.attempts, retry.codes.clone()), (Some(2), Some(vec![503])));
    assert_eq!(
        extras.rules[0].unknown_filters,
        vec!["ExternalAuth".to_string(), "FutureFilter on backendRefs[0]".to_string()]
    );
    let session = extras.rules[0].session_persistence.as_ref().unwrap();
    assert_eq!(session.session_name.as_deref(), Some("s"));
    assert_eq!(extras.rules[1], crate::model::RuleExtras::default());

    let bad = text.replace("backoff: 100ms", "backof: 100ms");
    let err = parse("t.yaml", &bad).unwrap_err().to_string();
    assert!(err.contains("spec.rules[0].retry"), "{err}");
    let bad = text.replace("sessionName: s", "sessionNam: s");
    let err = parse("t.yaml", &bad).unwrap_err().to_string();
    assert!(err.contains("spec.rules[0].sessionPersistence"), "{err}");
}

#[test]
fn budgets_refuse_alias_bombs_deep_nesting_and_custom_tags() {
    // Each level doubles the size: expanded, this would be 2^30 elements.
    let mut bomb = String::from("a0: &a0 [x, x]\n");
    for i in 1..30 {
        bomb.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}]\n", p = i - 1));
    }
    let e = err(&bomb);
    assert!(e.starts_with("examples/x.yaml: document 0: invalid YAML: "), "{e}");
    let deep = format!("a: {}{}\n", "[".repeat(100), "]".repeat(100));
    assert!(err(&deep).contains("document 0"));
    assert!(err("apiVersion: v1\nkind: !python/object Namespace\n").contains("document 0"));
    assert!(err("a: 1\na: 2\n").contains("duplicate"));
}
