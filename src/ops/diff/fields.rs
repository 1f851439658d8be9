//! A field-level diff of two JSON documents (Envoy resources as canonical proto3 JSON): one line per
//! leaf that differs, with a path a reader can follow (`.transport_socket.typed_config.sni`). Lists of
//! named objects (`"name"` fields, as Envoy's virtual hosts, routes and filters have) are matched by
//! name, so inserting one virtual host does not show every later one as changed; other lists by index.

use serde::Serialize;
use serde_json::Value;

/// One leaf that differs. `old`/`new` are `None` where the field is absent on that side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
}

/// Every field that differs between `old` and `new`, in document order.
pub fn changes(old: &Value, new: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk("", Some(old), Some(new), &mut out);
    out
}

fn walk(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<FieldChange>) {
    match (old, new) {
        (Some(a), Some(b)) if a == b => {}
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                walk(&format!("{path}.{k}"), a.get(k), b.get(k), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => arrays(path, a, b, out),
        _ => out.push(FieldChange {
            path: if path.is_empty() {
                ".".to_string()
            } else {
                path.to_string()
            },
            old: old.cloned(),
            new: new.cloned(),
        }),
    }
}

fn arrays(path: &str, a: &[Value], b: &[Value], out: &mut Vec<FieldChange>) {
    let named = |v: &[Value]| !v.is_empty() && v.iter().all(|e| e.get("name").is_some_and(Value::is_string));
    if named(a) && named(b) {
        let name = |e: &Value| e["name"].as_str().unwrap_or_default().to_string();
        let mut names: Vec<String> = a.iter().map(name).collect();
        names.extend(b.iter().map(name).filter(|n| !a.iter().any(|e| name(e) == *n)));
        for n in names {
            let find = |v: &[Value]| v.iter().find(|e| name(e) == n).cloned();
            walk(&format!("{path}[{n}]"), find(a).as_ref(), find(b).as_ref(), out);
        }
        return;
    }
    for i in 0..a.len().max(b.len()) {
        walk(&format!("{path}[{i}]"), a.get(i), b.get(i), out);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn leaves_by_path_and_named_lists_by_name() {
        let old = json!({"name": "c", "sni": "a.example.com", "hosts": [{"name": "x", "port": 1}, {"name": "y"}],
            "list": [1, 2]});
        let new = json!({"name": "c", "hosts": [{"name": "w"}, {"name": "x", "port": 2}, {"name": "y"}],
            "list": [1, 3, 4]});
        let got: Vec<(String, Option<Value>, Option<Value>)> = changes(&old, &new)
            .into_iter()
            .map(|c| (c.path, c.old, c.new))
            .collect();
        assert_eq!(
            got,
            vec![
                (".hosts[x].port".into(), Some(json!(1)), Some(json!(2))),
                (".hosts[w]".into(), None, Some(json!({"name": "w"}))),
                (".list[1]".into(), Some(json!(2)), Some(json!(3))),
                (".list[2]".into(), None, Some(json!(4))),
                (".sni".into(), Some(json!("a.example.com")), None),
            ]
        );
        assert!(changes(&old, &old).is_empty());
    }
}
