//! PEM private-key blocks taken out of whatever the admin API answers, wherever they sit: in a value, a
//! map key, an error message quoting a file. The search is [`private_keys`]'s, the one the certificate
//! checks use, so what the translator would refuse is also what is never shown.

use axum::Json;
use serde_json::{Map, Value};

use crate::gateway::tls::private_keys;

/// `value` as a JSON response, every private-key block in its strings redacted.
pub fn json(mut value: Value) -> Json<Value> {
    scrub(&mut value);
    Json(value)
}

/// `text` with every private-key block redacted.
pub fn text(text: &str) -> std::borrow::Cow<'_, str> {
    private_keys::redact(text)
}

fn scrub(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = private_keys::redact(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(map) => {
            let keys_clean = map.keys().all(|k| private_keys::blocks(k).is_empty());
            if !keys_clean {
                let old = std::mem::take(map);
                *map = old
                    .into_iter()
                    .map(|(k, v)| (private_keys::redact(&k).into_owned(), v))
                    .collect::<Map<String, Value>>();
            }
            map.values_mut().for_each(scrub);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_anywhere_in_a_value_are_redacted() {
        let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----";
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let Json(v) = json(json!({
            "tls.crt": format!("{cert}{key}\n"),
            "nested": [{"error": format!("bad value {key:?}")}],
            key: 1,
        }));
        let text = v.to_string();
        assert!(!text.contains("MHcCAQEE"), "{text}");
        assert!(text.contains("MIIB"), "certificates stay: {text}");
        assert_eq!(text.matches(private_keys::REDACTED).count(), 3, "{text}");
    }
}
