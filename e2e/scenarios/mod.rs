//! The ten scenarios of issue 3 and the route-traffic scenarios of issue 4 (s11–s13: what the golden cases
//! show as configuration, proven through Envoy), one module each. Every module states its claim in its `//!`
//! doc, builds its world with [`crate::harness::scene::Scene`], and runs twice — `sotw` and `delta` —
//! through [`both_modes!`], so a behaviour that only one ADS flavour gets right fails by name.

/// Declares `#[test]`s `sotw` and `delta` that run `$scenario(Mode)` on a multi-threaded runtime (the
/// upstreams and the DNS responder run as tasks beside the test body).
macro_rules! both_modes {
    ($scenario:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sotw() {
            if crate::harness::envoy::skipped() {
                return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
            }
            $scenario(crate::harness::Mode::Sotw).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn delta() {
            if crate::harness::envoy::skipped() {
                return eprintln!("PIER_SKIP_ENVOY=1: skipping an end-to-end scenario");
            }
            $scenario(crate::harness::Mode::Delta).await
        }
    };
}

mod s01_external_hostname_tls;
mod s02_client_and_server;
mod s03_endpoint_slices;
mod s04_policy_eg_draft;
mod s05_weights;
mod s06_guardrail;
mod s07_hot_reload;
mod s08_two_gateways;
mod s09_pier_restart;
mod s10_malformed_file;
mod s11_backend_protocols;
mod s11_https_listeners;
mod s11_listener_isolation;
mod s11_reference_grant;
mod s11_route_filters;
mod s11_route_matching;
mod s12_grpc;
mod s12_grpc_tls;
mod s13_mirror_cors_timeouts;
mod s14_absolute_names;
mod s15_authenticated_xds;
mod s16_nack_containment;
mod s17_pier_resolves_hostnames;
mod s18_pod_selector;
mod s19_backend_protocols_on_the_wire;
mod s20_mcp;
mod s21_proxy_status;
mod s22_cluster_trust_bundle;
mod s23_no_op_pushes;
mod s24_mcp_sdk;
mod s25_session_persistence;
mod s26_proxyless_grpc;

use crate::harness::PierOptions;

/// `pier serve` as most scenarios run it: loopback upstreams allowed (everything here is on 127.0.0.0/8).
fn loopback_allowed() -> PierOptions {
    PierOptions {
        allow_loopback: true,
        ..PierOptions::default()
    }
}
