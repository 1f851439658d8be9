//! Every YAML file in the repository through pier's reader. Its fast path (model/yaml/fast.rs)
//! compares each answer with serde-saphyr's in debug builds, which this test suite is, so this is a
//! differential test of the two readers over real inputs: examples, deploy manifests, compose files
//! and every golden case's input. (A release-mode run only reads them.)

use std::path::{Path, PathBuf};

#[test]
fn every_yaml_file_here_reads_the_same_through_either_reader() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents = 0;
    let mut files = 0;
    for dir in ["testdata", "examples", "deploy", "compose"] {
        for path in yaml_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&path).expect("readable");
            // Some cases are invalid on purpose; an error is serde-saphyr's, reached the same way.
            if let Ok(values) = pier::model::yaml::values(&path.display().to_string(), &text) {
                documents += values.len();
            }
            files += 1;
        }
    }
    assert!(files > 100 && documents > files, "{files} files, {documents} documents");
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            out.extend(yaml_files(&path));
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    out
}
