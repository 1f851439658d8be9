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

/// A watcher on a new directory holding one Namespace: the directory, the state, and a stop switch
/// with the task to await.
fn start(quiet: Duration, max_delay: Duration) -> (tempfile::TempDir, watch::Receiver<SourceState>, Running) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), NS).unwrap();
    let (tx, rx) = watch::channel(SourceState::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let task = tokio::spawn(run(
        dir.path().to_path_buf(),
        crate::model::yaml::DEFAULT_MAX_BYTES,
        Debounce { quiet, max_delay },
        tx,
        stop_rx,
    ));
    (dir, rx, Running { stop_tx, task })
}

struct Running {
    stop_tx: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), notify::Error>>,
}

impl Running {
    async fn stop(self) {
        self.stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

#[tokio::test]
async fn reads_at_start_keeps_last_good_on_error_and_coalesces_bursts() {
    let (dir, mut rx, running) = start(Duration::from_millis(100), Duration::from_secs(2));

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
    let names: Vec<String> = fixed
        .model
        .unwrap()
        .namespaces
        .keys()
        .map(|k| k.name.to_string())
        .collect();
    assert_eq!(names, ["a", "b4"]);
    assert!(
        fixed.generation <= 3,
        "five writes in a burst were read at most twice, got generation {}",
        fixed.generation
    );

    running.stop().await;
}

#[tokio::test]
async fn an_isolated_edit_waits_for_no_quiet_period() {
    // A quiet period far longer than the wait below: only a leading-edge read can pass.
    let (dir, mut rx, running) = start(Duration::from_secs(600), Duration::from_secs(600));
    assert_eq!(next(&mut rx).await.generation, 1);
    // Written outside and moved in: one event, so no second read is coalesced behind the first.
    let outside = tempfile::tempdir().unwrap();
    let tmp = outside.path().join("b.yaml");
    std::fs::write(&tmp, "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n").unwrap();
    std::fs::rename(&tmp, dir.path().join("b.yaml")).unwrap();
    let s = next(&mut rx).await;
    assert_eq!(s.model.unwrap().namespaces.len(), 2, "{:?}", s.error);
    running.stop().await;
}

/// Waits for a state that satisfies `pred` (each wait bounded by `next`).
async fn until(rx: &mut watch::Receiver<SourceState>, pred: impl Fn(&SourceState) -> bool) -> SourceState {
    for _ in 0..50 {
        let s = next(rx).await;
        if pred(&s) {
            return s;
        }
    }
    panic!("no such state after 50 changes");
}

#[tokio::test]
async fn a_fifo_an_oversize_file_and_an_alias_bomb_never_stall_or_drop_the_config() {
    let (dir, mut rx, running) = start(Duration::from_millis(20), Duration::from_millis(250));
    assert_eq!(next(&mut rx).await.generation, 1);
    let d = dir.path();
    // A FIFO nobody writes to: opening it would block every read after this one.
    crate::source::files::tests::mkfifo(&d.join("fifo.yaml"));
    let s = until(&mut rx, |s| s.warnings.iter().any(|w| w.contains("fifo.yaml"))).await;
    assert!(
        s.warnings[0].ends_with("fifo.yaml: skipped: it is a FIFO, not a regular file"),
        "{:?}",
        s.warnings
    );
    assert_eq!(s.generation, 1, "a warning alone translates nothing again");

    // The next edit is still read.
    std::fs::write(
        d.join("b.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
    )
    .unwrap();
    let s = until(&mut rx, |s| s.model.as_ref().is_some_and(|m| m.namespaces.len() == 2)).await;
    assert!(s.error.is_none());

    // An alias bomb: a clear error naming the file, and the last good model stays.
    let bomb = format!(
        "a: &a {}\nb: &b [{}]\nc: [{}]\n",
        "x".repeat(10_000),
        vec!["*a"; 30].join(","),
        vec!["*b"; 30].join(",")
    );
    std::fs::write(d.join("c.yaml"), bomb).unwrap();
    let s = until(&mut rx, |s| s.error.is_some()).await;
    let error = s.error.unwrap();
    assert!(
        error.contains("c.yaml: document 0: invalid YAML: the file expands to more than"),
        "{error}"
    );
    assert_eq!(s.model.unwrap().namespaces.len(), 2);
    running.stop().await;
}
