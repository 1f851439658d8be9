//! The directory source: watches a directory with `notify` and, on every change, re-reads it through a
//! [`DirCache`] — every file is hashed, only files whose bytes changed are parsed, and the model moves by
//! what they changed (same walk and same errors as `pier translate`).
//!
//! Debounce, leading edge first: the first change after a quiet spell is read at once, so an isolated
//! edit waits for nothing. If more events arrive during that read, the directory is read once more at
//! once (they are often the tail of the same write). Changes still arriving after that are coalesced: once they stop for the quiet period (20 ms by default) they are read together, and a
//! steady stream of changes is read at least every max delay (250 ms). An editor's write-rename-chmod
//! sequence or a `kubectl cp` of twenty files therefore costs one read at once and one after it.
//!
//! Writes to files the walk skips (dot-files: the temporary file a tool renames into place, editor swap
//! files) are not changes; the rename that follows is.
//!
//! A read that sees a half-written file fails to parse; it is reported only if no further change
//! arrives within the quiet period (the writer finishing), so a save in progress never shows up as an
//! error. Writers that want all-or-nothing should write a temporary file and rename it into place.
//!
//! Reads that fail (a file that does not parse, a duplicate object) never replace the model: the
//! last good one stays in force and the error — file, document and field — is published beside it,
//! so `/readyz` and `/debug/status` can show it. Nothing is published before the first complete read.
//!
//! A file the reader skips (over `--max-file-bytes`, or a FIFO, a device, a socket) does not fail the
//! read: it is a warning in `/debug/status`, and what it defined when it last read well stays in force
//! (see [`DirCache`]).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::cache::{DirCache, Read};
use super::files::LoadError;
use super::{Debounce, SourceState};

/// Watches `dir` until `shutdown` fires, publishing each read on `tx`. Files over `max_file_bytes` are
/// skipped.
pub async fn run(
    dir: PathBuf,
    max_file_bytes: usize,
    debounce: Debounce,
    tx: watch::Sender<SourceState>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), notify::Error> {
    use notify::Watcher;
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<Changed>();
    // notify calls back on its own thread; it forwards the names that changed, or that it cannot
    // tell (then the next read walks the whole directory).
    let root = dir.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
        Ok(ev) if !matters(&root, &ev) => {}
        Ok(ev) if ev.need_rescan() || ev.paths.is_empty() => {
            let _ = ev_tx.send(Changed::All);
        }
        Ok(ev) => {
            let _ = ev_tx.send(Changed::Paths(ev.paths));
        }
        Err(error) => {
            warn!(%error, "file watcher error; reading the whole directory");
            let _ = ev_tx.send(Changed::All);
        }
    })?;
    watcher.watch(&dir, notify::RecursiveMode::Recursive)?;
    info!(dir = %dir.display(), quiet_ms = debounce.quiet.as_millis() as u64, max_delay_ms = debounce.max_delay.as_millis() as u64, "watching config directory");

    let mut reader = Reader {
        cache: None,
        dir: dir.clone(),
        max_file_bytes,
        pending: Pending::default(),
    };
    let first = reader.read().await;
    publish(first, &tx);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return Ok(()),
            ev = ev_rx.recv() => match ev {
                None => return Ok(()),
                Some(ev) => reader.pending.add(ev),
            },
        }
        drain(&mut ev_rx, &mut reader.pending);
        let mut result = reader.read().await;
        // Events that arrive during a read may be the tail of the change it already saw (a close
        // after a write): one more read at once tells, and only a change that is still going on
        // after that waits for the quiet period.
        let mut at_once = 1;
        loop {
            let more = drain(&mut ev_rx, &mut reader.pending);
            let error = match result {
                Ok(read) => {
                    publish(Ok(read), &tx);
                    if !more {
                        break;
                    }
                    if at_once > 0 {
                        at_once -= 1;
                        result = reader.read().await;
                        continue;
                    }
                    None
                }
                Err(e) => Some(e),
            };
            let Some(settled) = settle(&mut ev_rx, &mut reader.pending, &debounce, &mut shutdown, more).await else {
                return Ok(());
            };
            if let Some(error) = error.filter(|_| !settled) {
                // Nothing more came: the error is real, not a write in progress.
                publish(Err(error), &tx);
                break;
            }
            result = reader.read().await;
        }
    }
}

/// Whether an event can change what a read finds. Writing a file the walk skips (a dot-file, such as the
/// temporary file a tool renames into place, or an editor's swap file) cannot; renaming and removing
/// anything can (a mounted ConfigMap swaps its `..data` link by a rename), and so can any event notify
/// cannot attribute.
fn matters(root: &std::path::Path, ev: &notify::Event) -> bool {
    use notify::EventKind::{Access, Create, Modify};
    use notify::event::ModifyKind;
    let written = match ev.kind {
        Access(_) => return false,
        Create(_) | Modify(ModifyKind::Data(_) | ModifyKind::Metadata(_) | ModifyKind::Any) => true,
        _ => false,
    };
    if !written || ev.paths.is_empty() {
        return true;
    }
    ev.paths.iter().any(|p| {
        let rel = p.strip_prefix(root).unwrap_or(p);
        let hidden = rel
            .components()
            .any(|c| c.as_os_str().as_encoded_bytes().starts_with(b"."));
        !hidden && (super::files::has_manifest_extension(p) || p.is_dir())
    })
}

/// What the watcher saw change.
#[derive(Debug)]
enum Changed {
    Paths(Vec<PathBuf>),
    /// Something it cannot name (its queue overflowed, an error): read everything.
    All,
}

/// The changes not read yet.
#[derive(Debug, Default)]
struct Pending {
    all: bool,
    paths: BTreeSet<PathBuf>,
}

impl Pending {
    fn add(&mut self, c: Changed) {
        match c {
            Changed::All => self.all = true,
            Changed::Paths(p) => self.paths.extend(p),
        }
    }
}

/// Moves queued events into `pending`; true if there were any.
fn drain(rx: &mut mpsc::UnboundedReceiver<Changed>, pending: &mut Pending) -> bool {
    let mut any = false;
    while let Ok(c) = rx.try_recv() {
        pending.add(c);
        any = true;
    }
    any
}

/// Waits until no event has arrived for the quiet period, or the max delay has passed since the wait
/// began, collecting what changed into `pending`. Returns whether any event came (`came_before` counts
/// one that came before), `None` on shutdown.
async fn settle(
    rx: &mut mpsc::UnboundedReceiver<Changed>,
    pending: &mut Pending,
    debounce: &Debounce,
    shutdown: &mut watch::Receiver<bool>,
    came_before: bool,
) -> Option<bool> {
    let deadline = Instant::now() + debounce.max_delay;
    let mut any = came_before;
    loop {
        let quiet_until = (Instant::now() + debounce.quiet).min(deadline);
        tokio::select! {
            _ = shutdown.changed() => return None,
            _ = tokio::time::sleep_until(quiet_until) => return Some(any),
            ev = rx.recv() => {
                pending.add(ev?);
                any = true;
                if Instant::now() >= deadline {
                    return Some(true);
                }
            }
        }
    }
}

/// The directory's [`DirCache`], moved onto a blocking thread for each read.
struct Reader {
    /// `None` before the first read, and after a read panicked (the next one starts afresh).
    cache: Option<DirCache>,
    dir: PathBuf,
    max_file_bytes: usize,
    /// What changed since the last read began.
    pending: Pending,
}

/// Why a read of the directory applied nothing.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("reading the config directory panicked: {0}")]
    Panicked(String),
}

impl Reader {
    /// Reads what changed: the named files, or (first, after a failed read, or when the watcher could
    /// not name everything) the whole directory.
    async fn read(&mut self) -> Result<Read, ReadError> {
        let pending = std::mem::take(&mut self.pending);
        let (mut cache, whole) = match self.cache.take() {
            Some(cache) => (cache, pending.all),
            None => (
                DirCache::new(vec![self.dir.clone()]).with_max_file_bytes(self.max_file_bytes),
                true,
            ),
        };
        let started = Instant::now();
        let joined = tokio::task::spawn_blocking(move || {
            let result = if whole {
                cache.read()
            } else {
                cache.read_paths(&pending.paths)
            };
            let failed = result.is_err();
            (cache, result, failed)
        })
        .await;
        match joined {
            Ok((cache, result, failed)) => {
                self.cache = Some(cache);
                // A failed read applied nothing: the files it named must be read again next time, and
                // the simplest sure way is the whole directory.
                self.pending.all |= failed;
                if let Ok(r) = &result {
                    debug!(
                        read = r.read,
                        parsed = r.parsed,
                        changed = r.changed,
                        took_us = started.elapsed().as_micros() as u64,
                        "config directory scanned"
                    );
                }
                Ok(result?)
            }
            Err(join) => Err(ReadError::Panicked(join.to_string())),
        }
    }
}

/// Publishes a read: a new model if anything changed (or it is the first), else only the cleared error.
fn publish(result: Result<Read, ReadError>, tx: &watch::Sender<SourceState>) {
    tx.send_if_modified(|state| match result {
        Ok(read) => {
            let first = state.model.is_none();
            let recovered = state.error.take().is_some();
            let loaded = read.loaded;
            if read.warnings_changed || first {
                for w in &loaded.warnings {
                    warn!(warning = %w, "config directory");
                }
                state.warnings = loaded.warnings.iter().map(ToString::to_string).collect();
            }
            if !(read.changed || first) {
                return recovered || read.warnings_changed;
            }
            state.model = Some(Arc::new(loaded.model));
            state.generation += 1;
            state.files = loaded.files;
            info!(
                generation = state.generation,
                files = state.files.len(),
                parsed = read.parsed,
                "config directory read"
            );
            true
        }
        Err(error) => {
            warn!(%error, "config directory not applied; the last good configuration stays in force");
            state.error = Some(error.to_string());
            true
        }
    });
}

#[cfg(test)]
mod tests;
