//! The fuzz targets' properties, run in CI as property tests (the fuzz targets in `fuzz/` run the same
//! checks for as long as one lets them, on nightly): ADS requests built from random names, types,
//! nonces, versions and node strings — and random bytes — never make a stream panic or send a resource
//! outside its Gateway's snapshot; random mutations of the golden inputs never make the loader or the
//! translator panic, and translation stays deterministic.

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DiscoveryRequest};
use pier::xds::XdsType;
use proptest::prelude::*;
use prost::Message;

fn type_url() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(XdsType::ALL.map(|t| t.type_url().to_string()).to_vec()),
        ".{0,20}".prop_map(String::from),
    ]
}

fn names() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(
        prop_oneof![Just("*".to_string()), "[a-z/0-9\\n]{0,12}".prop_map(String::from)],
        0..6,
    )
}

fn node() -> impl Strategy<Value = Option<Node>> {
    proptest::option::of(
        ("\\PC{0,20}", "(fuzz/gw|other/gw|\\PC{0,10})").prop_map(|(id, cluster)| Node {
            id,
            cluster,
            ..Default::default()
        }),
    )
}

fn sotw() -> impl Strategy<Value = Vec<u8>> {
    (type_url(), names(), "[0-9a-z]{0,6}", "[0-9]{0,3}", node()).prop_map(
        |(type_url, resource_names, version_info, response_nonce, node)| {
            DiscoveryRequest {
                type_url,
                resource_names,
                version_info,
                response_nonce,
                node,
                ..Default::default()
            }
            .encode_to_vec()
        },
    )
}

fn delta() -> impl Strategy<Value = Vec<u8>> {
    (type_url(), names(), names(), "[0-9]{0,3}", node()).prop_map(
        |(type_url, subscribe, unsubscribe, response_nonce, node)| {
            DeltaDiscoveryRequest {
                type_url,
                resource_names_subscribe: subscribe,
                resource_names_unsubscribe: unsubscribe,
                response_nonce,
                node,
                ..Default::default()
            }
            .encode_to_vec()
        },
    )
}

/// The fuzz target's input format: a mode byte, then length-prefixed messages.
fn frame(mode: u8, messages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![mode];
    for m in messages.iter().filter(|m| m.len() < 256) {
        out.push(m.len() as u8);
        out.extend(m);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn sotw_streams_hold_their_invariants(messages in proptest::collection::vec(sotw(), 1..12)) {
        pier::xds::fuzz::drive(&frame(0, &messages), &resources());
    }

    #[test]
    fn delta_streams_hold_their_invariants(messages in proptest::collection::vec(delta(), 1..12)) {
        pier::xds::fuzz::drive(&frame(1, &messages), &resources());
    }

    #[test]
    fn random_bytes_are_survived(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        pier::xds::fuzz::drive(&data, &resources());
    }

    #[test]
    fn mutated_manifests_never_panic_and_translate_deterministically(
        case in 0usize..1000, edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let mut text = golden_input(case).into_bytes();
        for (at, byte) in edits {
            if !text.is_empty() {
                let i = at % text.len();
                text[i] = byte;
            }
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        if let Ok(loaded) = pier::model::load::parse_texts(&[("input.yaml".to_string(), text)]) {
            let opts = pier::Options::default();
            let render = |t: &pier::Translation| t.document(None).ok();
            prop_assert_eq!(render(&pier::translate(&loaded.model, &opts)), render(&pier::translate(&loaded.model, &opts)));
        }
    }
}

fn resources() -> pier::envoy::Resources {
    static R: std::sync::OnceLock<pier::envoy::Resources> = std::sync::OnceLock::new();
    R.get_or_init(pier::translate::sample_resources).clone()
}

fn golden_input(i: usize) -> String {
    static INPUTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let inputs = INPUTS.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path().join("input.yaml"))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        paths.into_iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
    });
    inputs[i % inputs.len()].clone()
}
