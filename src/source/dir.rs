//! The directory source: watches a directory with `notify` and re-reads every `*.yaml|*.yml|*.json`
//! in it (sorted, through the same loader as `pier translate`) after a burst of changes settles.
//!
//! Debounce: events start a quiet-period timer that each new event restarts, but a burst is never
//! held longer than the max delay after its first event. A lone edit therefore goes out one quiet
//! period after it lands (100 ms by default) and an editor's write-rename-chmod sequence, or a
//! `kubectl cp` of twenty files, becomes one read.
//!
//! Reads that fail (a file that does not parse, a duplicate object) never replace the model: the
//! last good one stays in force and the error — file, document and field — is published beside it,
//! so `/readyz` and `/debug/status` can show it. Nothing is published before the first complete read.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{info, warn};

use super::{Debounce, SourceState, files};

/// Watches `dir` until `shutdown` fires, publishing each read on `tx`.
pub async fn run(
    dir: PathBuf,
    debounce: Debounce,
    tx: watch::Sender<SourceState>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), notify::Error> {
    use notify::Watcher;
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<()>();
    // notify calls back on its own thread; forwarding "something changed" is all the loop needs,
    // because every read looks at the whole directory anyway.
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
        Ok(ev) if ev.kind.is_access() => {}
        Ok(_) => {
            let _ = ev_tx.send(());
        }
        Err(error) => warn!(%error, "file watcher error"),
    })?;
    watcher.watch(&dir, notify::RecursiveMode::Recursive)?;
    info!(dir = %dir.display(), quiet_ms = debounce.quiet.as_millis() as u64, max_delay_ms = debounce.max_delay.as_millis() as u64, "watching config directory");

    read(&dir, &tx).await;
    loop {
        tokio::select! {
            _ = shutdown.changed() => return Ok(()),
            ev = ev_rx.recv() => {
                if ev.is_none() {
                    return Ok(());
                }
            }
        }
        // A burst has started: wait for quiet, bounded by the max delay.
        let deadline = Instant::now() + debounce.max_delay;
        loop {
            let quiet_until = (Instant::now() + debounce.quiet).min(deadline);
            tokio::select! {
                _ = shutdown.changed() => return Ok(()),
                _ = tokio::time::sleep_until(quiet_until) => break,
                ev = ev_rx.recv() => {
                    if ev.is_none() || Instant::now() >= deadline {
                        break;
                    }
                }
            }
        }
        read(&dir, &tx).await;
    }
}

/// Reads the whole directory and publishes the outcome.
async fn read(dir: &std::path::Path, tx: &watch::Sender<SourceState>) {
    let path = dir.to_path_buf();
    let result = tokio::task::spawn_blocking(move || files::load_paths(&[path])).await;
    let result = match result {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(join) => Err(format!("reading the config directory panicked: {join}")),
    };
    tx.send_modify(|state| match result {
        Ok(loaded) => {
            for w in &loaded.warnings {
                warn!(warning = %w, "config directory");
            }
            state.model = Some(Arc::new(loaded.model));
            state.generation += 1;
            state.error = None;
            state.warnings = loaded.warnings.iter().map(ToString::to_string).collect();
            state.files = loaded.files;
            info!(
                generation = state.generation,
                files = state.files.len(),
                "config directory read"
            );
        }
        Err(error) => {
            warn!(%error, "config directory not applied; the last good configuration stays in force");
            state.error = Some(error);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";

    async fn next(rx: &mut watch::Receiver<SourceState>) -> SourceState {
        tokio::time::timeout(Duration::from_secs(10), rx.changed())
            .await
            .expect("state within 10 s")
            .unwrap();
        rx.borrow_and_update().clone()
    }

    #[tokio::test]
    async fn reads_at_start_keeps_last_good_on_error_and_coalesces_bursts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), NS).unwrap();
        let (tx, mut rx) = watch::channel(SourceState::default());
        let (stop_tx, stop_rx) = watch::channel(false);
        let debounce = Debounce {
            quiet: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
        };
        let task = tokio::spawn(run(dir.path().to_path_buf(), debounce, tx, stop_rx));

        let first = next(&mut rx).await;
        assert_eq!(first.generation, 1);
        assert!(first.model.as_ref().unwrap().namespaces.len() == 1 && first.error.is_none());

        // A broken file: the error is published, the model stays the last good one.
        std::fs::write(
            dir.path().join("b.yaml"),
            "apiVersion: v1\nkind: Service\nmetadata: [oops\n",
        )
        .unwrap();
        let broken = loop {
            let s = next(&mut rx).await;
            if s.error.is_some() {
                break s;
            }
        };
        assert!(broken.error.as_ref().unwrap().contains("b.yaml"), "{:?}", broken.error);
        assert_eq!(broken.generation, 1, "a failed read never replaces the model");
        assert!(broken.model.is_some());

        // Fix it with a burst of writes: one read applies them.
        for i in 0..5 {
            std::fs::write(
                dir.path().join("b.yaml"),
                format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: b{i}}}\n"),
            )
            .unwrap();
        }
        let fixed = loop {
            let s = next(&mut rx).await;
            if s.error.is_none() && s.generation > 1 {
                break s;
            }
        };
        let names: Vec<String> = fixed.model.unwrap().namespaces.keys().map(|k| k.name.clone()).collect();
        assert_eq!(names, ["a", "b4"]);
        assert!(
            fixed.generation <= 3,
            "five writes in a burst were read at most twice, got generation {}",
            fixed.generation
        );

        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}
