//! The fast reader against serde-saphyr: every answer it gives is serde-saphyr's (checked inside
//! `fast::document` in debug builds, which every test runs), and it leaves to serde-saphyr exactly
//! what it cannot read the same way. `tests/it/yaml_reader.rs` reads every YAML file in the repository
//! through it.

use serde_json::{Value, json};

use super::super::fast;

const BUDGET: (usize, usize) = (1 << 20, 1 << 20);

fn fast(text: &str) -> Option<Value> {
    fast::document(text, BUDGET).map(|(value, _)| value)
}

fn slow(text: &str) -> Value {
    serde_saphyr::from_str_with_options(text, super::super::read::yaml_options_default())
        .expect("serde-saphyr reads it")
}

#[test]
fn reads_manifests_as_serde_saphyr_does() {
    let manifest = r#"
apiVersion: gateway.networking.k8s.io/v1   # a comment
kind: HTTPRoute
metadata:
  name: r-1
  labels: {app.kubernetes.io/name: web, "quoted key": 'single', "": empty-key}
  annotations:
    note: |
      two
      lines
    folded: >
      one
      line
spec:
  parentRefs: [{name: edge, namespace: infra, port: 443}]
  hostnames: [h-1.example.com, "*.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    timeouts: {request: 10s, backendRequest: 1.5s}
    backendRefs:
    - {name: web, port: 8080, weight: -3}
    - name: v6
      port: 0
  addresses: [10.0.0.1, "::1", 1.5, 0x1F, 1_000, 007, +5, .5, 1e3, -0, 123456789012345678901234]
  words: [yes, no, on, off, y, n, True, FALSE, Null, ~, null, "true", inf, nan, .inf2]
  multi: this plain scalar
    goes on
  empty:
  escaped: "tab\there \u00e9"
"#;
    let value = fast(manifest).expect("the common manifest takes the fast path");
    assert_eq!(value, slow(manifest));
    assert_eq!(value["spec"]["rules"][0]["backendRefs"][0]["port"], json!(8080));
    assert_eq!(value["spec"]["words"][0], json!("yes"), "YAML 1.2 booleans only");
}

#[test]
fn dotted_numerals_are_strings_as_serde_saphyr_reads_them() {
    for t in [
        "10.1.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "1.2.3",
        "1..2",
        "1.2.",
        "01.02.03",
        "1.2.3.4.5.6.7.8",
    ] {
        let text = format!("v: {t}\n");
        assert_eq!(fast(&text), Some(slow(&text)), "{t}");
        assert_eq!(fast(&text), Some(json!({"v": t})), "{t}");
    }
    // One dot is a float's, or not a number, by serde-saphyr's rules: still its call.
    for t in ["1.5", "1.", "1.5e3", "1.2e3.4"] {
        let text = format!("v: {t}\n");
        assert_eq!(fast(&text), Some(slow(&text)), "{t}");
    }
}

#[test]
fn empty_documents_are_null() {
    for text in ["", "# only a comment\n", "   \n", "---\n", "--- # c\n...\n"] {
        assert_eq!(fast(text), Some(Value::Null), "{text:?}");
    }
}

#[test]
fn leaves_to_serde_saphyr_what_it_cannot_read_the_same_way() {
    let cases = [
        ("an anchor", "a: &x 1\nb: *x\n"),
        ("a tag", "a: !!str 1\n"),
        ("a custom tag", "a: !thing 1\n"),
        ("a merge key", "base: {a: 1}\nm: {<<: {b: 2}}\n"),
        ("a duplicate key", "a: 1\na: 2\n"),
        ("a null key", "~: 1\n"),
        ("a numeric key", "8080: web\n"),
        ("a collection as key", "? [a, b]\n: 1\n"),
        ("a directive", "%YAML 1.2\n---\na: 1\n"),
        ("two documents", "a: 1\n---\nb: 2\n"),
        ("a syntax error", "a: [1, 2\n"),
        ("tab indentation", "a:\n\tb: 1\n"),
        ("a non-finite float", "a: .nan\n"),
        ("an overflowing float", "a: 1e999\n"),
    ];
    for (what, text) in cases {
        assert_eq!(fast(text), None, "{what}");
    }
    let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
    assert_eq!(fast(&deep), None, "deep nesting");
}

#[test]
fn a_document_near_its_budget_is_serde_saphyrs_call() {
    let text = format!("k: [{}]\n", vec!["1"; 1_000].join(","));
    assert!(fast::document(&text, (10_000, 10_000)).is_some());
    assert_eq!(fast::document(&text, (1_500, 10_000)), None, "values");
    assert_eq!(fast::document(&text, (10_000, 2)), None, "scalar bytes");
}

/// YAML pieces: structure, every kind of scalar, and what the fast reader must leave alone.
pub(super) const PIECES: &[&str] = &[
    "a",
    "b",
    "k8s.io/name",
    ": ",
    ":",
    "\n",
    "\n  ",
    "\n    ",
    "- ",
    "-",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "? ",
    "1",
    "-2",
    "0",
    "007",
    "1.5",
    "1e3",
    "0x1F",
    "+5",
    ".5",
    "1_0",
    "10.0.0.1",
    "1.2.3",
    "1..2",
    "10s",
    "-.inf",
    ".nan",
    "\"q\"",
    "\"\\t\\u00e9\"",
    "'s'",
    "''",
    "~",
    "null",
    "Null",
    "true",
    "True",
    "yes",
    "off",
    "#c ",
    " #c",
    "&x ",
    "*x",
    "!!str ",
    "!t ",
    "|\n  lit\n",
    ">-\n  fold\n",
    "<<",
    "\t",
    " ",
    "...",
    "---",
    "%YAML 1.2\n",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 3_000, failure_persistence: None, ..Default::default() })]

    #[test]
    fn any_text_it_reads_reads_as_serde_saphyr_reads_it(picks in proptest::collection::vec(0..PIECES.len(), 0..24)) {
        let text: String = picks.iter().map(|&i| PIECES[i]).collect();
        if let Some(value) = fast(&text) {
            let slow = serde_saphyr::from_str_with_options::<Value>(&text, super::super::read::yaml_options_default());
            proptest::prop_assert_eq!(slow.ok(), Some(value), "{:?}", text);
        }
    }
}
