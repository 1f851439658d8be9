//! Builds the protobuf descriptor set that `envoy::render` uses to print Envoy resources as canonical
//! proto3 JSON. The `.proto` sources come from the envoy-types package itself (its `proto/` folder), found
//! through `cargo metadata`, so the descriptors always match the generated Rust types and nothing from
//! Envoy is copied into this repository. protox is pure Rust: no system `protoc` is needed.

use std::{env, path::PathBuf, process::Command};

use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver, IncludeFileResolver};

/// Every message pier emits (or renders, like the bootstrap) is reachable from these roots.
const ROOTS: &[&str] = &[
    "envoy/config/bootstrap/v3/bootstrap.proto",
    "envoy/config/cluster/v3/cluster.proto",
    "envoy/config/endpoint/v3/endpoint.proto",
    "envoy/config/listener/v3/listener.proto",
    "envoy/config/route/v3/route.proto",
    "envoy/extensions/transport_sockets/tls/v3/tls.proto",
    "envoy/extensions/transport_sockets/tls/v3/secret.proto",
    "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto",
    "envoy/extensions/filters/http/router/v3/router.proto",
    "envoy/extensions/filters/http/dynamic_forward_proxy/v3/dynamic_forward_proxy.proto",
    "envoy/extensions/filters/http/rbac/v3/rbac.proto",
    "envoy/extensions/filters/http/cors/v3/cors.proto",
    "envoy/extensions/filters/http/stateful_session/v3/stateful_session.proto",
    "envoy/extensions/http/stateful_session/cookie/v3/cookie.proto",
    "envoy/extensions/http/stateful_session/header/v3/header.proto",
    "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto",
    "envoy/extensions/upstreams/http/v3/http_protocol_options.proto",
    "envoy/extensions/clusters/dns/v3/dns_cluster.proto",
    "envoy/extensions/clusters/dynamic_forward_proxy/v3/cluster.proto",
    "envoy/extensions/clusters/aggregate/v3/cluster.proto",
    "envoy/extensions/network/dns_resolver/cares/v3/cares_dns_resolver.proto",
    "envoy/admin/v3/config_dump.proto",
    "envoy/service/discovery/v3/discovery.proto",
];

const INCLUDES: &[&str] = &[
    "data-plane-api",
    "xds",
    "googleapis",
    "protoc-gen-validate",
    "opentelemetry-proto",
    "client_model",
    "cel-spec/proto",
];

/// protox resolves a relative type name against every package it has loaded, stricter than protoc:
/// in the DFP cluster proto `common.dynamic_forward_proxy.v3.DnsCacheConfig` then binds to the package
/// `envoy.extensions.clusters.common` (from the DNS cluster proto it imports) and fails. Qualifying that
/// one reference fully, in memory, gives exactly the type protoc picks.
struct QualifyingResolver(ChainFileResolver);

const AMBIGUOUS_FILE: &str = "envoy/extensions/clusters/dynamic_forward_proxy/v3/cluster.proto";

impl FileResolver for QualifyingResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let file = self.0.open_file(name)?;
        if name != AMBIGUOUS_FILE {
            return Ok(file);
        }
        let source = file.source().expect("opened from source").replace(
            " common.dynamic_forward_proxy.v3.DnsCacheConfig ",
            " .envoy.extensions.common.dynamic_forward_proxy.v3.DnsCacheConfig ",
        );
        File::from_source(name, &source)
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let proto_root = envoy_types_proto_dir();
    let mut chain = ChainFileResolver::new();
    for dir in INCLUDES {
        chain.add(IncludeFileResolver::new(proto_root.join(dir)));
    }
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(QualifyingResolver(chain));
    compiler.include_imports(true);
    compiler
        .open_files(ROOTS)
        .unwrap_or_else(|e| panic!("compiling Envoy protos from {}: {e}", proto_root.display()));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("envoy_descriptors.bin");
    std::fs::write(&out, compiler.encode_file_descriptor_set()).expect("write descriptor set");
}

/// The `proto/` folder shipped inside the envoy-types package that this build resolved.
fn envoy_types_proto_dir() -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    // Offline first (no network on a warm machine); online if a dev-only package was never fetched.
    let run = |offline: bool| {
        let mut cmd = Command::new(&cargo);
        cmd.args(["metadata", "--format-version", "1"])
            .current_dir(&manifest_dir);
        if offline {
            cmd.arg("--offline");
        }
        cmd.output().expect("run cargo metadata")
    };
    let mut output = run(true);
    if !output.status.success() {
        output = run(false);
    }
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata JSON");
    let manifest = meta["packages"]
        .as_array()
        .and_then(|pkgs| pkgs.iter().find(|p| p["name"] == "envoy-types"))
        .and_then(|p| p["manifest_path"].as_str())
        .expect("envoy-types is a dependency");
    let dir = PathBuf::from(manifest).parent().expect("manifest dir").join("proto");
    println!("cargo:rerun-if-changed={}", dir.display());
    dir
}
