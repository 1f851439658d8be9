//! Edges that read objects from the outside world and hand the core a [`Model`](crate::model::Model).
//!
//! - [`files`]: YAML/JSON files and directories, read once (`pier translate`, golden tests, and the
//!   directory source's reload).
//! - [`dir`]: the directory source of `pier serve` (files, watched for changes).
//! - [`kube`]: the Kubernetes source of `pier serve --kubernetes` (the API server, watched). Both publish
//!   the same [`dir::DirState`] stream.
//!
//! Sources own I/O and nothing else: parsing is [`model::yaml`](crate::model::yaml) and model building
//! [`model::insert`](crate::model::insert), so every source reads objects exactly the same way.

pub mod dir;
pub mod files;
pub mod kube;
