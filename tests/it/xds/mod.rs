//! The ADS server over loopback: the real tonic server, driven by envoy-types' client the way Envoy 1.40
//! drives it, in state-of-the-world ([`sotw`]) and incremental ([`delta`]) mode.

mod delta;
mod sotw;
