//! The IR builders live in `pier::testkit::ir`, shared with the library's unit tests. Not every test
//! crate that declares `mod support` builds IR by hand, hence the allowance.

#[allow(unused_imports)]
pub use pier::testkit::ir::*;
