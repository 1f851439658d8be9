//! Arbitrary bytes as a sequence of ADS requests (SotW or delta) against a published snapshot: no panic,
//! responses carry only the snapshot's resources, client strings come out escaped and bounded.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

static RESOURCES: OnceLock<pier::envoy::Resources> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let resources = RESOURCES.get_or_init(pier::translate::sample_resources);
    pier::xds::fuzz::drive(data, resources);
});
