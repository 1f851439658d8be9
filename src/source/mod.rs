//! Edges that read objects from the outside world and hand the core a [`Model`](crate::model::Model).
//!
//! - [`files`]: YAML/JSON files and directories, read once (`pier translate`, golden tests, and the
//!   directory source's reload).
//! - [`dir`]: the directory source of `pier serve` (files, watched for changes).
//! - [`kube`]: the Kubernetes source of `pier serve --kubernetes` (the API server, watched). Both publish
//!   the same [`SourceState`] stream.
//!
//! Sources own I/O and nothing else: turning texts into a model is [`model::load`](crate::model::load)
//! (which parses with [`model::yaml`](crate::model::yaml)), and applying watch events is
//! [`model::insert`](crate::model::insert), so every source reads objects exactly the same way.

pub mod cache;
pub mod dir;
pub mod files;
pub mod kube;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::model::Model;

/// What a source currently offers: the directory source and the Kubernetes source publish the same
/// state on a latest-value channel, and the pipeline reads nothing else.
#[derive(Debug, Clone, Default)]
pub struct SourceState {
    /// The last complete model; `None` until the first complete read (or, for Kubernetes, the initial sync).
    pub model: Option<Arc<Model>>,
    /// Bumped on every read that produced a new model.
    pub generation: u64,
    /// Why the latest read failed, if it did (the model above is still the last good one).
    pub error: Option<String>,
    /// Warnings of the last good read (unknown kinds skipped, ...).
    pub warnings: Vec<String>,
    /// Files the last good read took objects from (directory source only).
    pub files: Arc<Vec<PathBuf>>,
    /// Kinds the source cannot read now, with why: forbidden, failing, not listed yet (Kubernetes
    /// source only; `source::kube::availability`).
    pub unavailable: Vec<(String, String)>,
}

/// How long a source lets a burst of changes settle before publishing: a quiet period that each new
/// change restarts, bounded by a maximum delay after the first change.
#[derive(Debug, Clone)]
pub struct Debounce {
    pub quiet: Duration,
    pub max_delay: Duration,
}
