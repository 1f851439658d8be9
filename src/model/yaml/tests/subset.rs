//! The line reader against serde-saphyr: whatever it answers is serde-saphyr's answer, the documents
//! pier's workloads and `kubectl` write take it, and everything outside its subset is left to the
//! parsers after it.

use serde_json::Value;

use super::super::{split, subset};

pub(super) fn slow(text: &str) -> Result<Value, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, super::super::read::yaml_options_default())
}

/// `text` takes the subset and reads as serde-saphyr reads it.
fn reads(text: &str) -> Value {
    let value = subset::build(text).unwrap_or_else(|| panic!("the line reader takes:\n{text}"));
    assert_eq!(value, slow(text).expect("serde-saphyr reads it"), "{text}");
    value
}

/// One route's file of the scale workload (`testkit::workload`, which this module may not use) and its
/// Gateway, as written there.
pub(super) const WORKLOAD: &str = r#"apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: pier
  listeners:
  - {name: http, protocol: HTTP, port: 8080, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: x-4, namespace: team-4}
spec:
  type: ExternalHostname
  externalHostname: {hostname: x-4.example.com}
  port: {port: 443}
  tls:
    mode: ServerOnly
    validation: {hostname: x-4.example.com, wellKnownCACertificates: System}
---
apiVersion: v1
kind: Service
metadata: {name: s-4, namespace: team-4}
spec:
  ports: [{name: https, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s-4-1, namespace: team-4, labels: {kubernetes.io/service-name: s-4}}
addressType: IPv4
ports: [{name: https, port: 8443}]
endpoints:
- addresses: [10.1.1.1]
- addresses: [10.1.1.2]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: s-4, namespace: team-4}
spec:
  targetRefs: [{group: '', kind: Service, name: s-4}]
  validation: {hostname: s-4.example.com, wellKnownCACertificates: System}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r-4, namespace: team-4}
spec:
  parentRefs: [{name: edge, namespace: infra}]
  hostnames: [h-4.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: x-4}]
  - {backendRefs: [{name: s-4, port: 80}]}
"#;

#[test]
fn workload_documents_take_the_line_reader() {
    let docs = split::documents(WORKLOAD);
    assert_eq!(docs.len(), 7);
    for doc in &docs {
        reads(&doc.text);
    }
}

/// A manifest as `kubectl` and people write them, with every shape the reader takes.
pub(super) const KUBECTL: &str = r#"
# leading comment
apiVersion: v1
kind: Service
metadata:
  name: web   # trailing comment
  namespace: "team-a"
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/part-of: 'shop''s front'
  annotations: {note: plain words here, url: 'http://x.example:80/a#b', "": empty}
    # an indented comment line
spec:
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
  -   name: https
      port: 443
  selector: {app: web}
  empty:
  list: [a, 1, -2, 1.5, true, false, null, ~, yes, on, 10.0.0.1, a b]
  nested: [[1, [2]], {a: [b, {c: d}]}, {}, []]
  flags:
  - true
  - "quoted # not a comment"
  - plain, with a comma
  - -leading-dash
  - x: 1
    y:
    - z
  - {a: b}
  - [c]
  timeout: 10s
  url: http://a.example:8080/path
  neg: -1
"#;

#[test]
fn reads_kubectl_shaped_manifests() {
    let manifest = KUBECTL;
    let value = reads(manifest);
    assert_eq!(value["spec"]["ports"][1]["port"], serde_json::json!(443));
    assert_eq!(value["metadata"]["labels"]["app.kubernetes.io/part-of"], "shop's front");
    assert_eq!(value["spec"]["empty"], Value::Null);
}

#[test]
fn leaves_to_the_parsers_what_it_does_not_read() {
    let cases = [
        ("a block scalar", "a: |\n  x\n"),
        ("a folded scalar", "a: >\n  x\n"),
        ("an anchor", "a: &x 1\nb: *x\n"),
        ("a tag", "a: !!str 1\n"),
        ("a tab", "a:\n\tb: 1\n"),
        ("a carriage return", "a: 1\r\nb: 2\r\n"),
        ("non-ASCII text", "a: é\n"),
        ("a plain scalar over lines", "a: b\n  c\n"),
        ("a flow collection over lines", "a: [1,\n  2]\n"),
        ("a quoted scalar over lines", "a: 'b\n  c'\n"),
        ("an escape", "a: \"b\\tc\"\n"),
        ("a trailing comma", "a: [1, 2,]\n"),
        ("an empty flow entry", "a: [1, , 2]\n"),
        ("an item on the lines below", "a:\n-\n  b: 1\n"),
        ("a compact nested sequence", "- - a\n"),
        ("a key with a space", "a b: 1\n"),
        ("a numeric key", "8080: web\n"),
        ("a null key", "~: 1\n"),
        ("a merge key", "m: {<<: {b: 2}}\n"),
        ("a pair in a flow sequence", "a: [b: c]\n"),
        ("a colon in a flow scalar", "a: [http://x]\n"),
        ("a mapping in a plain value", "a: b: c\n"),
        ("a duplicate key", "a: 1\na: 2\n"),
        ("a duplicate flow key", "a: {b: 1, b: 2}\n"),
        ("over-indented", "a: 1\n  b: 2\n"),
        ("under-indented", "a:\n    b: 1\n  c: 2\n"),
        ("a sequence after a value", "a: 1\n- b\n"),
        ("a scalar root", "just words\n"),
        ("a flow root", "{a: 1}\n"),
        ("a directive", "%YAML 1.2\na: 1\n"),
        ("a complex key", "? a\n: 1\n"),
        ("an unclosed quote", "a: 'b\n"),
        ("text after a quote", "a: 'b' c\n"),
        ("text after a flow collection", "a: [b] c\n"),
        ("a comment without a space", "a: b#c\n"),
        ("an empty document", "\n# only a comment\n"),
        (
            "a key past the parser's lookahead",
            &format!("{}: 1\n", "k".repeat(1_100)),
        ),
        (
            "a flow key past the parser's lookahead",
            &format!("a: {{{}: 1}}\n", "k".repeat(1_100)),
        ),
        (
            "a compact key past the parser's lookahead",
            &format!("- {}: 1\n", "k".repeat(1_100)),
        ),
        ("a deep flow", &format!("a: {}1{}\n", "[".repeat(40), "]".repeat(40))),
    ];
    for (what, text) in cases {
        assert_eq!(subset::build(text), None, "{what}: {text:?}");
    }
}

#[test]
fn keys_within_the_parsers_lookahead_take_the_line_reader() {
    for len in [900, 1_000] {
        let k = "k".repeat(len);
        reads(&format!("{k}: 1\n"));
        reads(&format!("a: {{{k}: 1}}\n"));
        reads(&format!("- {k}: 1\n"));
    }
}
