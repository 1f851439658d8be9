//! Test material shared across modules that belongs to no one area (the ADS, Kubernetes and fake API
//! server helpers have modules of their own). Loopback servers, the IR builders and the Envoy runner are
//! in [`pier::testkit`].

pub mod https;
pub mod pki;
