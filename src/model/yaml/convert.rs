//! YAML value → JSON value, the way `sigs.k8s.io/yaml` (what kubectl uses) does it: scalar map keys
//! become strings (`80:` → `"80"`), everything else maps one to one. What JSON cannot hold (non-finite
//! floats, mappings as keys, custom tags) is an error naming the path, never silently altered.

use serde_json::{Map, Number, Value};
use serde_yaml::Value as Yaml;

/// Error: (field path like `spec.ports[0]`, message).
pub(super) fn to_json(value: Yaml) -> Result<Value, (String, String)> {
    let mut path = Vec::new();
    convert(value, &mut path).map_err(|message| (render(&path), message))
}

enum Segment {
    Key(String),
    Index(usize),
}

fn render(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() { ".".into() } else { out }
}

/// On error, `path` is left pointing at the offending value.
fn convert(value: Yaml, path: &mut Vec<Segment>) -> Result<Value, String> {
    Ok(match value {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(b),
        Yaml::Number(n) => Value::Number(number(&n)?),
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                path.push(Segment::Index(i));
                out.push(convert(item, path)?);
                path.pop();
            }
            Value::Array(out)
        }
        Yaml::Mapping(mapping) => {
            let mut out = Map::new();
            for (key, item) in mapping {
                let key = key_string(key)?;
                path.push(Segment::Key(key.clone()));
                let item = convert(item, path)?;
                path.pop();
                out.insert(key, item);
            }
            Value::Object(out)
        }
        Yaml::Tagged(tagged) => return Err(format!("YAML tag {} is not supported", tagged.tag)),
    })
}

fn number(n: &serde_yaml::Number) -> Result<Number, String> {
    if let Some(i) = n.as_i64() {
        Ok(i.into())
    } else if let Some(u) = n.as_u64() {
        Ok(u.into())
    } else {
        n.as_f64()
            .and_then(Number::from_f64)
            .ok_or_else(|| format!("{n} is not a finite number, which JSON cannot represent"))
    }
}

fn key_string(key: Yaml) -> Result<String, String> {
    match key {
        Yaml::String(s) => Ok(s),
        Yaml::Null => Ok("null".into()),
        Yaml::Bool(b) => Ok(b.to_string()),
        Yaml::Number(n) => Ok(n.to_string()),
        Yaml::Sequence(_) | Yaml::Mapping(_) | Yaml::Tagged(_) => Err("a mapping key must be a scalar".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Result<Value, (String, String)> {
        to_json(serde_yaml::from_str(text).expect("test YAML is well-formed"))
    }

    #[test]
    fn scalar_keys_become_strings() {
        let value = json("a:\n  80: x\n  true: y\n").unwrap();
        assert_eq!(value, serde_json::json!({"a": {"80": "x", "true": "y"}}));
    }

    #[test]
    fn non_finite_float_names_its_path() {
        let (path, message) = json("spec:\n  ports:\n  - .inf\n").unwrap_err();
        assert_eq!(path, "spec.ports[0]");
        assert!(message.contains("finite"), "{message}");
    }

    #[test]
    fn custom_tag_is_refused() {
        let (path, message) = json("data:\n  x: !secret abc\n").unwrap_err();
        assert_eq!(path, "data.x");
        assert!(message.contains("!secret"), "{message}");
    }
}
