//! `pier translate` writes its document as it renders it (`Translation::render`, one resource's value
//! at a time). For every case, each Gateway alone and all merged, with and without warnings, the
//! streamed YAML and JSON must be byte-identical to the document built the way it always was — one
//! `serde_json::Value` of `render::resources_to_json`, `proxyless` and `status` — and printed whole.

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

#[test]
fn streamed_document_is_byte_identical_to_the_whole_value() {
    let warned = ["a.yaml document 3: HTTPRoute default/x is defined twice; the later one is used".to_string()];
    let mut checked = 0;
    let all = cases();
    let expected = 2 * all.len();
    for case in all {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let input = std::fs::read_to_string(case.join("input.yaml")).expect("read input");
        let t = crate::translate(&name, &input, &options(&case), &resolutions(&case));
        let selections = std::iter::once(None).chain(t.gateways.keys().map(|g| Some(g.as_str())));
        for gateway in selections {
            let Ok(_) = t.select(gateway) else { continue };
            for warnings in [&[][..], &warned[..]] {
                let doc = t.render(gateway, warnings).expect("renders");
                let reference = whole(&t, gateway, warnings);
                let mut yaml = Vec::new();
                pier::model::yaml::to_yaml_writer(&mut yaml, &doc).expect("yaml");
                let expected = pier::model::yaml::to_yaml(&reference).expect("yaml");
                assert!(
                    String::from_utf8(yaml).expect("utf-8") == expected,
                    "{name} ({gateway:?}): streamed YAML differs from the whole document's"
                );
                assert!(
                    serde_json::to_vec_pretty(&doc).expect("json")
                        == serde_json::to_vec_pretty(&reference).expect("json"),
                    "{name} ({gateway:?}): streamed JSON differs from the whole document's"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= expected, "every case was checked ({checked} documents)");
}
