//! The Envoy descriptor set read as plain protobuf (`prost_types`), for the message table
//! (`src/envoy/render/shape.rs`).
//!
//! Why not prost-reflect's pool: building it resolves and cross-checks every file of the set, which
//! took 13 ms and held about 5 MiB for the life of every process (docs/performance.md, twelfth
//! session), when the table needs only names, field numbers and types. The pool is still built, on first use, where a value is rendered through
//! prost-reflect (`super::pool`): the admin config dump, the goldens, and the rare types the JSON
//! writer leaves to it. A test holds this table equal to the one read off the pool.

use prost::Message as _;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};

/// One message type, with its full name (`package.Outer.Inner`).
pub(crate) struct Msg<'a> {
    pub name: String,
    pub proto: &'a DescriptorProto,
    /// Declared in a `proto3` file (elsewhere a singular scalar field has presence).
    pub proto3: bool,
}

/// One enum type, with its full name.
pub(crate) struct Enum<'a> {
    pub name: String,
    pub proto: &'a EnumDescriptorProto,
}

/// The descriptor set `build.rs` compiled.
pub(crate) fn set() -> FileDescriptorSet {
    FileDescriptorSet::decode(super::DESCRIPTORS).expect("build.rs wrote a valid descriptor set")
}

/// Every message and enum type of `set`, nested ones included, files in order and each file's types
/// depth first.
pub(crate) fn types(set: &FileDescriptorSet) -> (Vec<Msg<'_>>, Vec<Enum<'_>>) {
    let (mut messages, mut enums) = (Vec::new(), Vec::new());
    for file in &set.file {
        let proto3 = file.syntax() == "proto3";
        let scope = file.package();
        for e in &file.enum_type {
            enums.push(Enum {
                name: join(scope, e.name()),
                proto: e,
            });
        }
        for m in &file.message_type {
            walk(scope, m, proto3, &mut messages, &mut enums);
        }
    }
    (messages, enums)
}

fn walk<'a>(scope: &str, m: &'a DescriptorProto, proto3: bool, messages: &mut Vec<Msg<'a>>, enums: &mut Vec<Enum<'a>>) {
    let name = join(scope, m.name());
    for e in &m.enum_type {
        enums.push(Enum {
            name: join(&name, e.name()),
            proto: e,
        });
    }
    for nested in &m.nested_type {
        walk(&name, nested, proto3, messages, enums);
    }
    messages.push(Msg { name, proto: m, proto3 });
}

fn join(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_string()
    } else {
        format!("{scope}.{name}")
    }
}

/// A field's `type_name` as a full name: the set is compiled, so every reference is fully qualified.
pub(crate) fn referenced(type_name: &str) -> &str {
    type_name.strip_prefix('.').unwrap_or(type_name)
}

/// The name prost-reflect gives each number of `e`: it keeps values sorted by number, inserting an
/// alias before the value it shares a number with, and looks a number up by binary search; doing the
/// same picks the same alias.
pub(crate) fn enum_names(e: &EnumDescriptorProto) -> Vec<(i32, &str)> {
    let mut numbers: Vec<(i32, usize)> = Vec::with_capacity(e.value.len());
    for (i, v) in e.value.iter().enumerate() {
        let at = numbers
            .binary_search_by(|(n, _)| n.cmp(&v.number()))
            .unwrap_or_else(|at| at);
        numbers.insert(at, (v.number(), i));
    }
    e.value
        .iter()
        .filter_map(|v| {
            let at = numbers.binary_search_by(|(n, _)| n.cmp(&v.number())).ok()?;
            Some((v.number(), e.value[numbers[at].1].name()))
        })
        .collect()
}

#[cfg(test)]
mod tests;
