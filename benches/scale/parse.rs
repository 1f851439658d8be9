//! `parse DOCS [ROUNDS]`: reading one large manifest (a `helm template` or `kubectl get -o yaml` output)
//! against the same documents split over 24 files, through the loader `pier translate` and `pier serve`
//! use. The documents are the `services` shape (a Service, its EndpointSlice and an HTTPRoute, a third
//! of DOCS each). Prints one JSON line per round: the time per document of each layout and their ratio.
//! Issue 22 saw 4,000 objects in one file take 2.6× as long per document as split (each document was
//! padded with every line before it, to keep the file's line numbers).

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Files the split layout uses.
const FILES: usize = 24;

pub fn run(docs: usize, rounds: usize) {
    let work = tempfile::tempdir().expect("work dir");
    let services = docs / 3;
    let texts: Vec<String> = (0..services).map(super::services::service).collect();
    let one = work.path().join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::write(one.join("all.yaml"), texts.join("---\n")).unwrap();
    let split = work.path().join("split");
    std::fs::create_dir_all(&split).unwrap();
    for (f, chunk) in texts.chunks(services.div_ceil(FILES)).enumerate() {
        std::fs::write(split.join(format!("part-{f:02}.yaml")), chunk.join("---\n")).unwrap();
    }
    let bytes = std::fs::metadata(one.join("all.yaml")).unwrap().len();
    for round in 0..rounds {
        let one_s = time(&one, services);
        let split_s = time(&split, services);
        let per = |s: f64| s * 1e6 / (services * 3) as f64;
        println!(
            "{}",
            serde_json::json!({
                "round": round, "documents": services * 3, "file_bytes": bytes,
                "one_file_us_per_doc": (per(one_s) * 100.0).round() / 100.0,
                "split_us_per_doc": (per(split_s) * 100.0).round() / 100.0,
                "one_file_over_split": (one_s / split_s * 1000.0).round() / 1000.0,
            })
        );
    }
}

/// Seconds to load `dir`, checking that every Service arrived.
fn time(dir: &Path, services: usize) -> f64 {
    let t = Instant::now();
    let loaded = pier::source::files::load_paths(&[PathBuf::from(dir)]).expect("loads");
    let took = t.elapsed().as_secs_f64();
    assert_eq!(loaded.model.services.len(), services);
    took
}
