//! Arbitrary bytes as two manifests (split at the first NUL byte) → an engine that translates the
//! first, updates to the second and back: no panic, and after each update the engine equals a rebuild
//! of the same model (`translate()`, the engine from empty). What `pier serve` does on every change,
//! fed what no hand-written edit sequence thinks of.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pier::translate::engine::Engine;

fn model(bytes: &[u8]) -> Option<pier::model::Model> {
    let text = std::str::from_utf8(bytes).ok()?;
    let name = if bytes.first() == Some(&b'{') { "input.json" } else { "input.yaml" };
    let loaded = pier::model::load::parse_texts(&[(name.to_string(), text.to_string())]).ok()?;
    Some(loaded.model)
}

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|&c| c == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[..0]),
    };
    let (Some(first), Some(second)) = (model(a), model(b)) else { return };
    let opts = pier::Options::default();
    let mut engine = Engine::with(first.clone(), opts.clone());
    engine.update(second.clone());
    assert!(engine.translation() == pier::translate(&second, &opts), "an update differs from a rebuild");
    engine.update(first.clone());
    assert!(engine.translation() == pier::translate(&first, &opts), "an update back differs from a rebuild");
});
