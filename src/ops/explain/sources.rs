//! Where the documents come from. Offline, the files are translated as `pier translate` does and
//! rendered into the very shapes the admin API serves (each Gateway's resources as
//! `/debug/config_dump?gateway=` has them, private keys redacted; the statuses as `/debug/status`'s
//! `objects`); online, those two endpoints are asked. Everything after this module is shared, so the
//! two modes can only differ by what pier computed.
//!
//! Offline documents get the admin API's redaction too: private keys out of Envoy's `private_key`
//! fields, and any PEM private-key block out of every string (a status message may quote a file).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::{ExplainError, Inputs};
use crate::envoy::render;
use crate::gateway::tls::private_keys;
use crate::ops::admin_client::{Admin, AdminError};
use crate::options::{Options, ResolveMode};
use crate::translate::Translation;

/// The documents of a translation, as a running pier would serve them.
pub fn from_translation(t: &Translation) -> Inputs {
    let gateways = t
        .gateways
        .iter()
        .map(|(g, res)| {
            let mut doc = render::resources_to_json(res);
            if let Some(p) = t.proxyless.get(g) {
                doc["proxyless"] = render::resources_to_json(p);
            }
            render::redact_private_keys(&mut doc);
            scrub(&mut doc);
            (g.clone(), doc)
        })
        .collect();
    let mut statuses = serde_json::to_value(&t.statuses).expect("statuses serialize");
    scrub(&mut statuses);
    let objects = match statuses {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    Inputs {
        objects,
        gateways,
        notes: Vec::new(),
        gateway_notes: BTreeMap::new(),
    }
}

/// Reads and translates `paths` with `opts` (`--resolve-hostnames pier` looks every name up once).
pub fn offline(paths: &[PathBuf], max_file_bytes: usize, opts: &Options) -> Result<Inputs, ExplainError> {
    let mut loaded = crate::source::files::load_paths_capped(paths, max_file_bytes)?;
    if opts.resolution.mode == ResolveMode::Pier {
        crate::ops::current_thread()?.block_on(crate::resolve::resolve_once(&mut loaded.model, opts))?;
    }
    let t = crate::translate(&loaded.model, opts);
    let mut inputs = from_translation(&t);
    inputs.notes = loaded.warnings.iter().map(|w| format!("input: {w}")).collect();
    Ok(inputs)
}

/// Asks the running pier at `admin`: `/debug/status`, then the config dump of `gateway` (or of all).
pub fn online(admin: &Admin, gateway: Option<&str>) -> Result<Inputs, ExplainError> {
    crate::ops::current_thread()?.block_on(async {
        let status = admin.get_json("/debug/status").await?;
        let gateways: BTreeMap<String, Value> = match gateway {
            Some(g) => match admin.get_json(&format!("/debug/config_dump?gateway={g}")).await {
                Ok(doc) => BTreeMap::from([(g.to_string(), doc)]),
                // Not published: the explanation says so from the statuses alone.
                Err(AdminError::Refused { status: 404, .. }) => BTreeMap::new(),
                Err(e) => return Err(e.into()),
            },
            None => match admin.get_json("/debug/config_dump").await? {
                Value::Object(m) => m.into_iter().collect(),
                _ => BTreeMap::new(),
            },
        };
        Ok(inputs_from_admin(status, gateways))
    })
}

fn inputs_from_admin(mut status: Value, gateways: BTreeMap<String, Value>) -> Inputs {
    let objects = match status["objects"].take() {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    let mut notes: Vec<String> = status["source_warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| Some(format!("input: {}", w.as_str()?)))
        .collect();
    if let Some(e) = status["source_error"].as_str() {
        notes.push(format!(
            "pier's newest read of its source failed, so it serves the last good configuration: {e}"
        ));
    }
    Inputs {
        objects,
        gateways,
        notes,
        gateway_notes: gateway_notes(&status),
    }
}

/// Per Gateway, what `/debug/status` says beside the objects' statuses.
fn gateway_notes(status: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (g, errs) in status["check_errors"].as_object().into_iter().flatten() {
        for e in super::envoy::strings(errs) {
            out.entry(g.clone()).or_default().push(format!(
                "pier's newest translation failed its check, so its proxies keep the last good configuration: {e}"
            ));
        }
    }
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    for q in status["quarantined"].as_array().into_iter().flatten() {
        out.entry(s(q, "gateway")).or_default().push(format!(
            "{} {}/{} is quarantined: a proxy rejected it ({}: {}); its last accepted version keeps serving",
            s(q, "kind"),
            s(q, "namespace"),
            s(q, "name"),
            s(q, "type_url"),
            s(q, "message")
        ));
    }
    let r = &status["unexplained_rejection"];
    if r.is_object() {
        out.entry(s(r, "gateway")).or_default().push(format!(
            "a proxy rejected a push that pier could not pin on one object ({}): {}",
            s(r, "type_url"),
            s(r, "message")
        ));
    }
    out
}

/// Every PEM private-key block in `v`'s strings redacted, as the admin API does.
fn scrub(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = private_keys::redact(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(map) => map.values_mut().for_each(scrub),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn private_keys_are_scrubbed_from_every_string() {
        let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----";
        let mut v = json!({"status": {"conditions": [{"message": format!("bad file {key}")}]}});
        scrub(&mut v);
        assert!(!v.to_string().contains("MHcCAQEE"), "{v}");
    }

    #[test]
    fn the_admin_apis_own_trouble_becomes_notes() {
        let status = json!({
            "objects": [{"kind": "HTTPRoute"}],
            "source_error": "a.yaml: document 0: invalid YAML",
            "source_warnings": ["b.yaml: skipped"],
            "check_errors": {"ns/gw": ["route r names cluster c, which does not exist"]},
            "quarantined": [{"kind": "HttpRoute", "namespace": "ns", "name": "r", "gateway": "ns/gw",
                             "type_url": "routes", "message": "invalid regex"}],
            "unexplained_rejection": {"gateway": "ns/other", "type_url": "clusters", "message": "boom"},
        });
        let inputs = inputs_from_admin(status, BTreeMap::new());
        assert_eq!(inputs.objects.len(), 1);
        assert_eq!(inputs.notes.len(), 2);
        assert!(inputs.notes[1].contains("a.yaml: document 0"));
        let gw = &inputs.gateway_notes["ns/gw"];
        assert!(
            gw[0].contains("failed its check") && gw[1].contains("HttpRoute ns/r is quarantined"),
            "{gw:?}"
        );
        assert!(inputs.gateway_notes["ns/other"][0].contains("could not pin"));
    }
}
