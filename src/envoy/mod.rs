//! IR → Envoy protos. One builder file per xDS type, `names` for every resource name, `render` for
//! canonical proto3 JSON, `check` for referential integrity. Builders decide *how* Envoy is configured;
//! *what* is configured was decided in `gateway/`.

pub mod names;
