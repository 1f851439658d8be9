//! The checker run on planted sources, so the layering test cannot pass by finding nothing: each rule
//! has a violation it must report and a neighbour it must let through.

use std::path::PathBuf;

use super::{Source, violations};

/// A source file at `module` (`["gateway", "x"]` is `src/gateway/x.rs`) holding `text`.
fn planted(module: &[&str], text: &str) -> Source {
    Source {
        file: PathBuf::from(format!("src/{}.rs", module.join("/"))),
        module: module.iter().map(|s| s.to_string()).collect(),
        text: text.to_string(),
    }
}

/// Each source has a violation mentioning its reason.
fn caught(cases: &[(Source, &str)]) {
    for (source, why) in cases {
        let found = violations(source);
        assert!(
            found.iter().any(|v| v.contains(why)),
            "{:?} in {}: expected a violation mentioning {why}, got {found:?}",
            source.text,
            source.file.display()
        );
    }
}

/// None of the sources has a violation.
fn passed(sources: &[Source]) {
    for source in sources {
        assert_eq!(violations(source), Vec::<String>::new(), "{}", source.text);
    }
}

#[test]
fn the_checker_catches_planted_violations() {
    let cases = [
        (
            planted(&["gateway", "x"], "use crate::xds::cache::SnapshotCache;"),
            "edge `xds`",
        ),
        (
            planted(&["gateway", "x"], "use crate::{ir, runtime::View};"),
            "edge `runtime`",
        ),
        (
            planted(&["gateway", "backends", "x"], "use super::super::super::source::files;"),
            "edge `source`",
        ),
        (
            planted(&["model", "x"], "fn f() { crate::testkit::lo(2); }"),
            "edge `testkit`",
        ),
        (
            planted(&["gateway", "x"], "use crate::envoy::pb::cluster;"),
            "`gateway` uses `envoy`",
        ),
        (
            planted(&["gateway", "x"], "use super::super::envoy::Resources;"),
            "`gateway` uses `envoy`",
        ),
        (
            planted(&["envoy", "x"], "let t = std::time::Instant::now();"),
            "`Instant::now`",
        ),
        (
            planted(&["ir", "x"], "let s = std::fs::read_to_string(p);"),
            "`std::fs`",
        ),
        (planted(&["translate"], "let v = std::env::var(\"X\");"), "`std::env`"),
        (planted(&["options"], "use tokio::sync::watch;"), "`tokio`"),
        (
            planted(&["gateway", "x"], "use crate::{\n    ir,\n    runtime::View,\n};"),
            "edge `runtime`",
        ),
        (
            planted(&["model", "x"], "use std::{collections::BTreeMap, fs};"),
            "`std::fs`",
        ),
        (planted(&["ir", "x"], "use std::{env, fmt};"), "`std::env`"),
        (
            planted(&["envoy", "x"], "use std::net::{IpAddr, TcpStream};"),
            "`std::net::TcpStream`",
        ),
        (
            planted(&["gateway", "x"], "thread_local! { static X: u8 = 0; }"),
            "`thread_local!`",
        ),
        (
            planted(&["gateway", "x"], "use crate::resolve::Resolver;"),
            "edge `resolve`",
        ),
        (
            planted(&["ir", "x"], "use crate::gateway::conditions;"),
            "`ir` uses `gateway`",
        ),
        (
            planted(&["envoy", "x"], "use crate::model::Model;"),
            "`envoy` uses `model`",
        ),
    ];
    caught(&cases);
    // Comments and strings are not code; edges may use anything.
    let clean = [
        planted(&["gateway", "x"], "//! see [`crate::xds`] and `std::fs`\nfn f() {}"),
        planted(&["gateway", "x"], "const S: &str = \"crate::runtime tokio\";"),
        planted(
            &["runtime", "x"],
            "use tokio::sync::watch; use crate::xds::cache::Snapshot;",
        ),
        planted(&["envoy", "x"], "use crate::ir::names;"),
        // Test code may build what it checks from any core module, children of `tests` included.
        planted(&["envoy", "check", "tests", "dfp"], "use crate::gateway::order;"),
    ];
    passed(&clean);
}

#[test]
fn the_checker_catches_planted_edge_violations() {
    let cases = [
        (
            planted(&["xds", "cache"], "use crate::translate::engine::Engine;"),
            "`xds` uses `translate`",
        ),
        (
            planted(
                &["xds", "server"],
                "use crate::{\n    snapshot,\n    runtime::View,\n};",
            ),
            "`xds` uses `runtime`",
        ),
        (
            planted(&["status", "kube"], "use crate::xds::clients::Clients;"),
            "`status` uses `xds`",
        ),
        (
            planted(&["status", "kube"], "use crate::source::kube::Source;"),
            "`status` uses `source`",
        ),
        (
            planted(&["ops", "explain"], "fn f(a: &crate::cli::ExplainArgs) {}"),
            "`ops` uses `cli`",
        ),
        (planted(&["demo"], "use crate::cli::DemoArgs;"), "`demo` uses `cli`"),
        (
            planted(&["snapshot", "x"], "use crate::translate::engine::Engine;"),
            "`snapshot` uses `translate`",
        ),
        (
            planted(&["envoy", "x"], "use crate::snapshot::Res;"),
            "`envoy` uses `snapshot`",
        ),
    ];
    caught(&cases);
    let clean = [
        planted(&["xds", "cache"], "use crate::snapshot::{GatewayOut, Res};"),
        planted(&["status", "kube"], "use crate::{api::kinds, snapshot::StatusSet};"),
        planted(
            &["runtime", "x"],
            "use crate::{translate::engine::Engine, xds::cache, status};",
        ),
    ];
    passed(&clean);
}
