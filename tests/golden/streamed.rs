//! `pier translate` writes its document as it renders it, one resource's value at a time, from the
//! packed resources of an engine that records no dependency index (`Engine::once`, then
//! `Engine::document`); `translate()` runs the full engine, and tests and tools render a
//! `Translation`'s decoded resources (`Translation::render`). For every case, each Gateway alone and all
//! merged, with and without warnings, both must stream YAML and JSON byte-identical to the document
//! built the way it always was — one `serde_json::Value` of `render::resources_to_json`, `proxyless`
//! and `status` — printed whole.

use serde_json::{Value, json};

use crate::cases::{cases, options, resolutions};

/// The document as `pier translate` built it before it streamed: the reference the bytes must match.
fn whole(t: &pier::Translation, gateway: Option<&str>, warnings: &[String]) -> Value {
    let mut doc = pier::envoy::render::resources_to_json(&t.resources(gateway).expect("selectable"));
    let proxyless = match gateway {
        Some(g) => t.proxyless.get(g).cloned(),
        None => {
            let merged = pier::Translation {
                gateways: t.proxyless.clone(),
                ..Default::default()
            };
            Some(merged.resources(None).expect("proxyless merges")).filter(|r| *r != Default::default())
        }
    };
    if let Some(p) = proxyless {
        doc["proxyless"] = pier::envoy::render::resources_to_json(&p);
    }
    doc["status"] = serde_json::to_value(&t.statuses).expect("statuses");
    if !warnings.is_empty() {
        doc["warnings"] = json!(warnings);
    }
    doc
}

/// `doc` written as YAML (serialized, and as `pier translate` writes it, its lists in pieces of one
/// and two items, rendered on every core) and as JSON equals `reference` printed whole.
fn same_bytes(doc: &pier::translate::Document<'_>, reference: &Value) -> Result<(), &'static str> {
    let whole = pier::model::yaml::to_yaml(reference).expect("yaml");
    let mut yaml = Vec::new();
    pier::model::yaml::to_yaml_writer(&mut yaml, doc).expect("yaml");
    if String::from_utf8(yaml).expect("utf-8") != whole {
        return Err("YAML");
    }
    for (piece, window) in [(1, 1), (1, 3), (2, 4)] {
        let mut yaml = Vec::new();
        doc.write_yaml(&mut pier::model::yaml::RootMap::cut(&mut yaml, piece, window))
            .expect("yaml");
        if String::from_utf8(yaml).expect("utf-8") != whole {
            return Err("YAML written in pieces");
        }
    }
    if serde_json::to_vec_pretty(doc).expect("json") != serde_json::to_vec_pretty(reference).expect("json") {
        return Err("JSON");
    }
    Ok(())
}

#[test]
fn streamed_document_is_byte_identical_to_the_whole_value() {
    let warned = ["a.yaml document 3: HTTPRoute default/x is defined twice; the later one is used".to_string()];
    let mut checked = 0;
    let all = cases();
    let expected = 2 * all.len();
    for case in all {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let input = std::fs::read_to_string(case.join("input.yaml")).expect("read input");
        let opts = options(&case);
        let model = crate::model(&name, &input, &resolutions(&case));
        let t = pier::translate(&model, &opts);
        let engine = pier::translate::engine::Engine::once(model, opts);
        let selections = std::iter::once(None).chain(t.gateways.keys().map(|g| Some(g.as_str())));
        for gateway in selections {
            if t.select(gateway).is_err() {
                // A merge conflict: the engine's document must refuse it as well.
                assert!(
                    engine.document(gateway, &[]).is_err(),
                    "{name}: the engine merged a conflict"
                );
                continue;
            }
            for warnings in [&[][..], &warned[..]] {
                let reference = whole(&t, gateway, warnings);
                let decoded = t.render(gateway, warnings).expect("renders");
                if let Err(what) = same_bytes(&decoded, &reference) {
                    panic!(
                        "{name} ({gateway:?}): the streamed {what} of the translation differs from the whole document's"
                    );
                }
                let packed = engine.document(gateway, warnings).expect("renders");
                if let Err(what) = same_bytes(&packed, &reference) {
                    panic!(
                        "{name} ({gateway:?}): the streamed {what} of the engine's packed resources differs from the whole document's"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= expected, "every case was checked ({checked} documents)");
}
