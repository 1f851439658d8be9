use super::*;

fn svc(name: &str) -> String {
    format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\n")
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().expect("test paths have a parent")).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn directory_is_read_recursively_in_byte_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, "b.yaml", &svc("b"));
    write(root, "a/z.yml", &svc("az"));
    write(
        root,
        "a-b.json",
        r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"ab"}}"#,
    );
    write(root, "A.yaml", &svc("upper"));
    write(root, "notes.txt", "not yaml at all: [");
    write(root, ".hidden.yaml", &svc("hidden"));
    write(root, ".git/x.yaml", &svc("git"));
    let loaded = load_paths(&[root.to_path_buf()]).unwrap();
    let rel: Vec<_> = loaded
        .files
        .iter()
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    // Byte order: 'A' < 'a', and '-' (0x2d) sorts before '/' (0x2f).
    assert_eq!(rel, ["A.yaml", "a-b.json", "a/z.yml", "b.yaml"]);
    let names: Vec<_> = loaded.model.services.keys().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["ab", "az", "b", "upper"]);
}

#[test]
fn explicit_file_is_read_whatever_its_extension() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "objects.txt", &svc("web"));
    let file = tmp.path().join("objects.txt");
    let loaded = load_paths(&[tmp.path().to_path_buf(), file.clone()]).unwrap();
    assert_eq!(*loaded.files, [file]);
    assert_eq!(loaded.model.services.len(), 1);
}

#[test]
fn file_inside_a_given_directory_is_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.yaml", &svc("web"));
    let loaded = load_paths(&[tmp.path().to_path_buf(), tmp.path().join("a.yaml")]).unwrap();
    assert_eq!(loaded.files.len(), 1);
}

#[test]
fn duplicate_across_files_names_both_and_the_later_file_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let named = |from: &str| {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{externalName: {from}}}\n")
    };
    write(tmp.path(), "a.yaml", &named("a"));
    write(tmp.path(), "b.yaml", &format!("{}---\n{}", svc("other"), named("b")));
    let loaded = load_paths(&[tmp.path().to_path_buf()]).unwrap();
    let a = tmp.path().join("a.yaml").display().to_string();
    let b = tmp.path().join("b.yaml").display().to_string();
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [format!(
            "{b} document 1: Service default/web is defined twice: {a} document 0 and {b} document 1; the later one ({b} document 1) is used, as kubectl apply -f would leave it"
        )]
    );
    let web = loaded
        .model
        .services
        .peek(&crate::model::ObjectKey::new("default", "web"))
        .unwrap();
    assert_eq!(web.spec.as_ref().unwrap().external_name.as_deref(), Some("b"));
}

#[test]
fn missing_path_is_named() {
    let err = load_paths(&[PathBuf::from("/nonexistent/pier/x.yaml")]).unwrap_err();
    assert!(matches!(err, LoadError::Io { .. }));
    assert!(
        err.to_string().starts_with("reading /nonexistent/pier/x.yaml: "),
        "{err}"
    );
}

/// Runs `f` on another thread and fails the test if it takes more than 10 s: a reader that blocks on a
/// FIFO must fail the test, not hang it.
pub(crate) fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the read finished within 10 s (a FIFO must never be opened for reading)")
}

pub(crate) fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("running mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn oversize_files_and_files_that_are_not_regular_are_skipped_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    write(&root, "a.yaml", &svc("a"));
    write(&root, "big.yaml", &format!("{}# {}\n", svc("big"), "x".repeat(1_000)));
    mkfifo(&root.join("fifo.yaml"));
    std::os::unix::fs::symlink(root.join("fifo.yaml"), root.join("link-to-fifo.yaml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero.yaml")).unwrap();
    let dir = root.clone();
    let loaded = bounded(move || load_paths_capped(&[dir], 500)).unwrap();
    let names: Vec<_> = loaded.model.services.keys().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a"], "the rest of the directory loads");
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    let at = |f: &str| root.join(f).display().to_string();
    let big = fs::metadata(root.join("big.yaml")).unwrap().len();
    assert_eq!(
        warnings,
        [
            format!(
                "{}: skipped: {big} bytes is over the 500-byte limit for one file (--max-file-bytes)",
                at("big.yaml")
            ),
            format!("{}: skipped: it is a FIFO, not a regular file", at("fifo.yaml")),
            format!("{}: skipped: it is a FIFO, not a regular file", at("link-to-fifo.yaml")),
            format!(
                "{}: skipped: it is a character device, not a regular file",
                at("zero.yaml")
            ),
        ]
    );
    // Under the default cap the big file loads.
    let dir = root.clone();
    let loaded = bounded(move || load_paths(&[dir])).unwrap();
    assert_eq!(loaded.model.services.len(), 2);
}

#[test]
fn a_json_file_is_never_retried_as_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "a.json",
        "{apiVersion: v1, kind: Namespace, metadata: {name: a}}",
    );
    let err = load_paths(&[tmp.path().to_path_buf()]).unwrap_err().to_string();
    assert!(
        err.contains("a.json: document 0: invalid JSON: key must be a string"),
        "{err}"
    );
    // The same text in a .yaml file is flow-style YAML.
    std::fs::rename(tmp.path().join("a.json"), tmp.path().join("a.yaml")).unwrap();
    assert_eq!(
        load_paths(&[tmp.path().to_path_buf()]).unwrap().model.namespaces.len(),
        1
    );
}

#[test]
fn parse_error_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "bad.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n",
    );
    let err = load_paths(&[tmp.path().to_path_buf()]).unwrap_err().to_string();
    assert!(
        err.contains("bad.yaml: document 0 (Service): missing metadata.name"),
        "{err}"
    );
}
