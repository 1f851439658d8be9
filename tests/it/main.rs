//! The integration tests, in one test crate (one build, one link): each former `tests/<name>.rs` is a module
//! here, and the support modules are compiled once. `tests/golden.rs` and the e2e suite (`e2e/`) are crates
//! of their own. Every test target gets pier's `testkit` feature from the self dev-dependency in Cargo.toml.
//!
//! Run one area with a filter on the module path: `cargo test --test it xds::`, `cargo test --test it
//! kube::status::`, `cargo test --test it cli::`.
//!
//! | module | what it checks |
//! |---|---|
//! | [`xds`] | the ADS server over loopback, SotW and delta; mTLS, authorization and client bounds |
//! | [`security_cli`] | `pier certs`, `pier bootstrap` with mTLS, `pier serve` refusing plaintext beyond loopback |
//! | [`kube`] | the runtime against the fake API server; the `deploy/` manifests |
//! | [`diff`] | `pier diff`: reviewed outputs, exit codes, flags, a `git:REF` side |
//! | [`cli`] | `pier translate` and `pier bootstrap` as a user runs them |
//! | [`explain`] | `pier explain`: golden explanations (`testdata/explain/`), offline and online alike |
//! | [`dashboard`] | the Grafana dashboard and `docs/operations.md` name only metrics a live `/metrics` has |
//! | [`resolve_cli`] | `pier translate --resolve-hostnames pier` against a loopback DNS responder |
//! | [`proxy_status`] | CSDS on the xDS port and `pier proxy-status`, a synced and a NACKing proxy |
//! | [`serve_inputs`] | `pier serve` against config files and admin requests an outsider controls |
//! | [`demo`] | `pier demo --once` (built with the `demo` feature) |
//! | [`compose`] | `docker-compose.yaml` up on locally built images: every upstream through Envoy, a hot edit, a clean `down` |
//! | [`upstream_cli`] | `pier upstream`, the compose stack's demo servers (built with the `demo` feature) |
//! | [`envoy_validate`] | every IR variant accepted by `envoy --mode validate` |
//! | [`authority_guard`] | the DynamicResolver authority guard, live in Envoy |
//! | [`re2_size`] | pier's RE2 program-size bound never exceeds Envoy's own figure |
//! | [`route_features_live`] | redirects, CORS, mirrors, timeouts, retries, live in Envoy |
//! | [`layering`] | the core never reaches an edge, `gateway` never reaches `envoy`, the core does no I/O |
//! | [`conventions`] | one module layout, one test layout, files ≤ 400 lines, product functions ≤ 80 |
//!
//! Support: [`support`] (fixed test PKI), [`xds_support`] (ADS harness and proxies), [`kube_support`]
//! (pier in Kubernetes mode), [`fake_apiserver`].
//!
//! Tests share this process, so none may depend on process-wide state: no `std::env::set_var` (child
//! processes get their environment through `Command::env`), only idempotent global set-up (the rustls
//! crypto provider, the tracing subscriber via `try_init`), and ephemeral loopback ports everywhere except
//! the demo's fixed upstream addresses, which no other test uses. `kube::memory` measures the RSS of a
//! `pier` child process, not of this one, so other tests running beside it do not skew it.

mod authority_guard;
mod cli;
mod compose;
mod conventions;
mod dashboard;
#[cfg(feature = "demo")]
mod demo;
mod diff;
mod doc_paths;
mod envoy_validate;
mod explain;
mod fake_apiserver;
mod kube;
mod kube_support;
mod layering;
mod oversize;
mod proxy_status;
mod re2_size;
mod replicas;
mod resolve_cli;
mod route_features_live;
mod security_cli;
mod serve_inputs;
mod support;
#[cfg(feature = "demo")]
mod upstream_cli;
mod xds;
mod xds_support;
mod yaml_reader;
