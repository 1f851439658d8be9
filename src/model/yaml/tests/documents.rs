use super::*;

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
    assert_eq!(parsed.objects[0].1.namespace_and_name().0, Some("default"));
    assert_eq!(parsed.objects[2].1.namespace_and_name().0, None);
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
