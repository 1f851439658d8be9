//! The streaming writer against serde-saphyr: the same bytes for every value.

use proptest::strategy::Strategy as _;
use serde_json::{Value, json};

use super::super::{to_yaml, to_yaml_writer};

fn streamed(value: &Value) -> String {
    let mut out = Vec::new();
    to_yaml_writer(&mut out, value).expect("writes");
    String::from_utf8(out).expect("utf-8")
}

fn same(value: &Value) {
    assert_eq!(
        streamed(value),
        to_yaml(value).expect("serde-saphyr writes it"),
        "{value}"
    );
}

/// Strings of every style serde-saphyr picks: plain, keyword-like, numeric-like, indicators, quotes,
/// escapes, line breaks, edge spaces, non-ASCII.
const STRINGS: &[&str] = &[
    "",
    "a",
    "web",
    "type.googleapis.com/envoy.config.cluster.v3.Cluster",
    "s-0.example.com",
    "10s",
    "1",
    "-1",
    "0.5",
    "1e3",
    "0x1F",
    "007",
    "1_000",
    "true",
    "True",
    "FALSE",
    "null",
    "Null",
    "~",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "nan",
    ".inf",
    "-.inf",
    "inf",
    "<<",
    "=",
    "-",
    ".",
    "#",
    "?",
    ":",
    "@type",
    "a: b",
    "a:b",
    "a #b",
    "a#b",
    "trailing ",
    " leading",
    "two\nlines",
    "tab\there",
    "it's",
    "say \"hi\"",
    "back\\slash",
    "[x]",
    "{y}",
    "a,b",
    "*star",
    "&amp",
    "!bang",
    "|pipe",
    ">gt",
    "%pct",
    "`tick`",
    "---",
    "...",
    "--- x",
    "é",
    "日本",
    "2001-12-14",
    "12:30:45",
    "1:20",
    "Configuration is served to the Gateway's proxies",
    "h2",
    "http/1.1",
    "/api",
    "*.example.com",
    "x-k8s.io",
    "\u{feff}bom",
    "\u{85}nel",
    "10.1.1.1",
    "1.2.3",
    "1..2",
    "5",
    "10.",
    "a b",
    "a b ",
    "a 'q' b",
    "a \"q\" b",
    "a\\b",
    "Yes man",
    "no way",
    "x: y z",
    "x:",
    "x #y",
    "x#y",
    "x\ty",
    "a,b,c",
    "a [b]",
    "a {b}",
    "a & b",
    "a | b",
    "a > b",
    "a@b",
    "a`b",
    "a%b",
    "a!b",
    "a*b",
    "a?b",
    "a~b",
];

#[test]
fn every_scalar_style_is_serde_saphyrs() {
    for s in STRINGS {
        same(&json!({ *s: *s, "list": [*s, [*s], {*s: [*s]}] }));
        same(&json!([*s]));
    }
    same(&json!({"n": [0, -5, 18446744073709551615u64, -9223372036854775808i64, 0.5, 1e300, -0.0, 2.0]}));
    same(&json!({"b": [true, false, null], "e": {}, "l": [], "ne": [{}, [], [[]], [{}]]}));
    same(&json!({}));
    same(&json!([]));
    same(&json!("root"));
}

fn value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        (0..STRINGS.len()).prop_map(|i| json!(STRINGS[i])),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e6..1e6f64).prop_map(|f| json!(f)),
        any::<bool>().prop_map(|b| json!(b)),
        Just(Value::Null),
    ];
    leaf.prop_recursive(5, 64, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((0..STRINGS.len(), inner), 0..5)
                .prop_map(|e| Value::Object(e.into_iter().map(|(k, v)| (STRINGS[k].to_string(), v)).collect())),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2_000, failure_persistence: None, ..Default::default() })]

    #[test]
    fn any_value_streams_as_serde_saphyr_writes_it(v in value()) {
        proptest::prop_assert_eq!(streamed(&v), to_yaml(&v).expect("serde-saphyr writes it"));
    }
}

/// `entries` written through a [`RootMap`](super::super::RootMap) cut into pieces of `piece` items and
/// windows of `window`: each array value as a list, anything else as an entry.
fn through_root_map(entries: &serde_json::Map<String, Value>, piece: usize, window: usize) -> String {
    let mut out = Vec::new();
    let mut root = super::super::RootMap::cut(&mut out, piece, window);
    for (key, value) in entries {
        match value {
            Value::Array(items) => root.list(key, items),
            other => root.entry(key, other),
        }
        .expect("writes");
    }
    String::from_utf8(out).expect("utf-8")
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, failure_persistence: None, ..Default::default() })]

    /// However the lists are cut, and whichever thread renders a piece, the bytes are the whole
    /// mapping's: lists long enough to be cut many times, of any values, beside other entries.
    #[test]
    fn a_root_map_written_in_pieces_is_the_whole_mappings_yaml(
        entries in proptest::collection::btree_map(
            (0..STRINGS.len()).prop_map(|k| STRINGS[k].to_string()),
            proptest::prop_oneof![value(), proptest::collection::vec(value(), 0..40).prop_map(Value::Array)],
            1..5,
        ),
        piece in 1usize..6,
        window in 1usize..20,
    ) {
        use proptest::prelude::*;
        let map: serde_json::Map<String, Value> = entries.into_iter().collect();
        let whole = to_yaml(&Value::Object(map.clone())).expect("serde-saphyr writes it");
        prop_assert_eq!(through_root_map(&map, piece, window), whole);
    }
}
