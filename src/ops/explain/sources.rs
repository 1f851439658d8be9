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

use super::Inputs;
use crate::envoy::render;
use crate::gateway::tls::private_keys;
use crate::ops::admin_client::Admin;
use crate::options::{Options, ResolveMode};
use crate::translate::Translation;

/// The documents of a translation, as a running pier would serve them.
pub fn from_translation(t: &Translation) -> Inputs {
    let gateways = t
        .gateways
        .iter()
        .map(|(g, res)| {
            let mut doc = render::resources_to_json(res);
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
        check_errors: BTreeMap::new(),
    }
}

/// Reads and translates `paths` with `opts` (`--resolve-hostnames pier` looks every name up once).
pub fn offline(paths: &[PathBuf], max_file_bytes: usize, opts: &Options) -> Result<Inputs, String> {
    let mut loaded =
        crate::source::files::load_paths_capped(paths, max_file_bytes).map_err(|e| format!("reading input: {e:#}"))?;
    if opts.resolution.mode == ResolveMode::Pier {
        runtime()?.block_on(crate::resolve::resolve_once(&mut loaded.model, opts))?;
    }
    let t = crate::translate(&loaded.model, opts);
    let mut inputs = from_translation(&t);
    inputs.notes = loaded.warnings.iter().map(|w| format!("input: {w}")).collect();
    Ok(inputs)
}

/// Asks the running pier at `admin`: `/debug/status`, then the config dump of `gateway` (or of all).
pub fn online(admin: &Admin, gateway: Option<&str>) -> Result<Inputs, String> {
    runtime()?.block_on(async {
        let status = admin.get_json("/debug/status").await?;
        let gateways: BTreeMap<String, Value> = match gateway {
            Some(g) => match admin.get_json(&format!("/debug/config_dump?gateway={g}")).await {
                Ok(doc) => BTreeMap::from([(g.to_string(), doc)]),
                // Not published: the explanation says so from the statuses alone.
                Err(e) if e.contains("404 Not Found") => BTreeMap::new(),
                Err(e) => return Err(e),
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
    let check_errors = status["check_errors"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(g, errs)| (g.clone(), super::envoy::strings(errs)))
        .collect();
    Inputs {
        objects,
        gateways,
        notes,
        check_errors,
    }
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

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))
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
}
