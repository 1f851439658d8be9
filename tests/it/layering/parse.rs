//! Reading the crate for the layering check: the module tree from `src/lib.rs`, code without comments
//! and literals, and the paths in it.

use std::path::Path;

use super::Source;

/// Every file of the crate, from `src/lib.rs` through its `mod` declarations.
pub fn crate_sources(root: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    walk(root, &root.join("lib.rs"), Vec::new(), &mut out);
    out
}

fn walk(root: &Path, file: &Path, module: Vec<String>, out: &mut Vec<Source>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let code = strip(&text);
    // Where `mod x;` looks for its file: next to lib.rs / mod.rs, else in a directory named after the file.
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
        _ => file.with_extension(""),
    };
    for (name, path_attr) in mod_declarations(&text, &code) {
        let mut child = module.clone();
        child.push(name.clone());
        let child_file = match path_attr {
            Some(p) => file.parent().unwrap().join(p),
            None if dir.join(format!("{name}.rs")).exists() => dir.join(format!("{name}.rs")),
            None => dir.join(&name).join("mod.rs"),
        };
        walk(root, &child_file, child, out);
    }
    out.push(Source {
        file: file.strip_prefix(root.parent().unwrap()).unwrap_or(file).to_path_buf(),
        module,
        text,
    });
}

/// `mod name;` declarations (not inline `mod name { ... }`), with their `#[path = "..."]` if any.
fn mod_declarations(text: &str, code: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in code.lines().enumerate() {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .unwrap_or(t);
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("mod ") else { continue };
        let Some(name) = rest.trim_end().strip_suffix(';') else {
            continue;
        };
        let path_attr = (0..i).rev().take(3).find_map(|j| {
            let l = lines[j].trim();
            l.strip_prefix("#[path = \"")
                .and_then(|p| p.strip_suffix("\"]"))
                .map(str::to_string)
        });
        out.push((name.trim().to_string(), path_attr));
    }
    out
}

/// The code of a file with comments and the contents of string and char literals blanked out (line
/// structure kept, so line numbers still point at the source).
pub fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            while i < b.len() && !b[i..].starts_with(b"*/") {
                out.push(if b[i] == b'\n' { '\n' } else { ' ' });
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' || (b[i] == b'r' && b.get(i + 1) == Some(&b'"')) {
            let raw = b[i] == b'r';
            i += if raw { 2 } else { 1 };
            out.push_str("\"\"");
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && !raw {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
        } else {
            // Code outside comments and strings that is not ASCII (a char literal, say) is no path: a
            // space keeps the text ASCII, so byte offsets into it are always char boundaries.
            out.push(if b[i].is_ascii() { b[i] as char } else { ' ' });
            i += 1;
        }
    }
    out
}

/// The segments of the path starting at `s` (`super::super::x::y`), the first identifier of each item of
/// a `{...}` group that directly follows the crate root (`crate::{a, b::c}` gives `a`, `b`), and the
/// path's length.
pub fn path_at(s: &str) -> (Vec<String>, Vec<String>, usize) {
    let mut segments = Vec::new();
    let mut i = 0;
    loop {
        let ident: String = s[i..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            break;
        }
        i += ident.len();
        segments.push(ident);
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            break;
        }
    }
    let mut groups = Vec::new();
    if s[i..].starts_with('{') {
        let mut depth = 0;
        let mut item = String::new();
        for (j, c) in s[i..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 1 && (c == ',' || c == '{') || depth == 0 {
                let first: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !first.is_empty() {
                    groups.push(first);
                }
                item.clear();
                if depth == 0 {
                    i += j;
                    break;
                }
            } else if depth == 1 {
                item.push(c);
            }
        }
    }
    (segments, groups, i)
}

/// The absolute module path `segments` names from `module` (`None` when it climbs out of the crate);
/// empty when it names the crate root itself (the caller then looks at the group that follows).
pub fn resolve(segments: &[String], module: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}
