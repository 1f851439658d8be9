//! Helpers shared by integration tests (`mod support;` in each test crate). Each test crate uses only
//! part of them, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod ir;
pub mod pki;
