//! Arbitrary bytes as a manifest file → the loader → the translator, twice: no panic, and the same
//! input always gives the same output (the translator is pure and deterministic).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let name = if data.first() == Some(&b'{') { "input.json" } else { "input.yaml" };
    let Ok(loaded) = pier::model::load::parse_texts(&[(name.to_string(), text.to_string())]) else { return };
    let opts = pier::Options::default();
    let first = pier::translate(&loaded.model, &opts);
    let second = pier::translate(&loaded.model, &opts);
    let render = |t: &pier::Translation| t.document(None).ok().map(|d| serde_json::to_string(&d).unwrap_or_default());
    assert_eq!(render(&first), render(&second), "translation is not deterministic");
});
