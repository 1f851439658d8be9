//! [`super::Report`] for people: per Gateway the resources added (`+`), removed (`-`) and changed (`~`,
//! with each field: old → new), then the status conditions, then what review should look at (`!`).

use std::fmt::Write;

use serde_json::Value;

use super::status::Cond;
use super::{FlagKind, Report};

/// Longest value printed in a field change; longer ones are cut (the JSON output has them whole).
const VALUE_CHARS: usize = 160;

pub fn text(r: &Report) -> String {
    let mut out = String::new();
    if r.is_empty() {
        out.push_str("no change: every Gateway's configuration and every status are the same\n");
        return out;
    }
    for g in &r.gateways {
        let _ = writeln!(out, "Gateway {}: {}", g.gateway, g.change);
        for res in &g.resources {
            let sign = match res.change {
                "added" => '+',
                "removed" => '-',
                _ => '~',
            };
            let _ = writeln!(out, "  {sign} {} {}", res.ty, res.name);
            for f in &res.fields {
                let _ = writeln!(
                    out,
                    "      {}: {} → {}",
                    f.path,
                    value(f.old.as_ref()),
                    value(f.new.as_ref())
                );
            }
        }
    }
    if !r.statuses.is_empty() {
        out.push_str("Status:\n");
        for s in &r.statuses {
            let sign = match (&s.old, &s.new) {
                (None, _) => '+',
                (_, None) => '-',
                _ => '~',
            };
            let scope = if s.scope.is_empty() {
                String::new()
            } else {
                format!(" [{}]", s.scope)
            };
            let _ = writeln!(
                out,
                "  {sign} {}{scope} {}: {} → {}",
                s.object,
                s.ty,
                cond(s.old.as_ref()),
                cond(s.new.as_ref())
            );
        }
    }
    if !r.flags.is_empty() {
        out.push_str("Review:\n");
        for f in &r.flags {
            let kind = match f.kind {
                FlagKind::TlsDowngrade => "TLS turned off or loosened",
                FlagKind::GuardrailRefusal => "traffic refused by a guardrail",
                FlagKind::BackendErrors => "a backend share now answers errors",
            };
            let _ = writeln!(out, "  ! {kind} ({}): {}", f.scope, f.what);
        }
    }
    let resources: usize = r.gateways.iter().map(|g| g.resources.len()).sum();
    let _ = writeln!(
        out,
        "{resources} resource change(s) in {} Gateway(s), {} status change(s), {} to review",
        r.gateways.len(),
        r.statuses.len(),
        r.flags.len()
    );
    out
}

fn value(v: Option<&Value>) -> String {
    let Some(v) = v else { return "(absent)".to_string() };
    let s = v.to_string();
    if s.chars().count() > VALUE_CHARS {
        format!("{}…", s.chars().take(VALUE_CHARS).collect::<String>())
    } else {
        s
    }
}

fn cond(c: Option<&Cond>) -> String {
    match c {
        None => "(none)".to_string(),
        Some(c) if c.message.is_empty() => format!("{}/{}", c.status, c.reason),
        Some(c) => format!("{}/{} ({})", c.status, c.reason, c.message),
    }
}
