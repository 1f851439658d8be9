use super::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn svc(name: &str, port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: a}}\nspec: {{ports: [{{port: {port}}}]}}\n"
    )
}

/// Reads `dir` with the cache and with the one-pass loader, and requires the same outcome.
fn both(cache: &mut DirCache, dir: &Path) -> Result<Read, String> {
    same(cache.read(), dir)
}

/// A read of `dir` against the one-pass loader's.
fn same(read: Result<Read, LoadError>, dir: &Path) -> Result<Read, String> {
    let batch = files::load_paths(&[dir.to_path_buf()]);
    match (&read, &batch) {
        (Ok(r), Ok(b)) => {
            assert_eq!(r.loaded.model, b.model, "the cache builds the model the loader builds");
            assert_eq!(r.loaded.files, b.files);
            assert_eq!(r.loaded.warnings, b.warnings);
        }
        (Err(r), Err(b)) => assert_eq!(r.to_string(), b.to_string(), "same error, same words"),
        (r, b) => panic!("cache {r:?} but loader {b:?}"),
    }
    read.map_err(|e| e.to_string())
}

#[test]
fn follows_edits_as_the_loader_reads_them_and_parses_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
    write("1.yaml", &format!("{}---\n{}", svc("x", 80), svc("y", 80)));
    write("2.yaml", &svc("z", 80));
    write("3.yaml", "apiVersion: v9\nkind: Unknown\nmetadata: {name: q}\n");
    let mut cache = DirCache::new(vec![d.to_path_buf()]);
    let r = both(&mut cache, d).unwrap();
    assert_eq!((r.parsed, r.changed), (3, true));
    let y = r.loaded.model.services.peek(&ObjectKey::new("a", "y")).unwrap().clone();

    // Nothing changed: nothing parsed, nothing changed.
    let r = both(&mut cache, d).unwrap();
    assert_eq!((r.parsed, r.changed), (0, false));

    // One object of a file edited: that file is parsed; its unchanged object keeps its Arc.
    write("1.yaml", &format!("{}---\n{}", svc("x", 81), svc("y", 80)));
    let r = both(&mut cache, d).unwrap();
    assert_eq!((r.parsed, r.changed), (1, true));
    assert!(Arc::ptr_eq(
        &y,
        r.loaded.model.services.peek(&ObjectKey::new("a", "y")).unwrap()
    ));

    // An object moves from one file to another in one edit: not a duplicate.
    write("1.yaml", &svc("x", 81));
    write("2.yaml", &format!("{}---\n{}", svc("z", 80), svc("y", 80)));
    let r = both(&mut cache, d).unwrap();
    assert!(Arc::ptr_eq(
        &y,
        r.loaded.model.services.peek(&ObjectKey::new("a", "y")).unwrap()
    ));

    // A duplicate across files: the later file (2.yaml) wins, as the loader decides, with a warning
    // naming both places; while it lasts every read parses every file. Fixed, reads are cheap again.
    write("0.yaml", &svc("z", 99));
    let r = both(&mut cache, d).unwrap();
    let w = warnings(&r).join("\n");
    assert!(
        w.contains("0.yaml document 0 and") && w.contains("2.yaml document 0; the later one"),
        "{w}"
    );
    let port = |r: &Read| {
        r.loaded
            .model
            .services
            .peek(&ObjectKey::new("a", "z"))
            .unwrap()
            .spec
            .clone()
            .unwrap()
            .ports
            .unwrap()[0]
            .port
    };
    assert_eq!(port(&r), 80);
    let r = both(&mut cache, d).unwrap();
    assert_eq!((r.parsed, r.changed), (4, false), "every file parsed, nothing changed");
    // The later definition goes: the earlier one is in force again.
    write("2.yaml", &svc("y", 80));
    let r = both(&mut cache, d).unwrap();
    assert_eq!((port(&r), r.warnings_changed), (99, true));
    assert!(warnings(&r).iter().all(|w| !w.contains("twice")));
    std::fs::remove_file(d.join("0.yaml")).unwrap();
    write("2.yaml", &format!("{}---\n{}", svc("z", 80), svc("y", 80)));
    let r = both(&mut cache, d).unwrap();
    assert_eq!(port(&r), 80);
    // A parse error: refused as the loader refuses it, and the cache stays at the last good read.
    write("4.yaml", "apiVersion: v1\nkind: Service\nmetadata: [oops\n");
    assert!(both(&mut cache, d).unwrap_err().contains("4.yaml"));
    std::fs::remove_file(d.join("4.yaml")).unwrap();
    let r = both(&mut cache, d).unwrap();
    assert_eq!((r.parsed, r.changed), (0, false), "the failed read left nothing behind");

    // A removed file removes its objects.
    std::fs::remove_file(d.join("2.yaml")).unwrap();
    let r = both(&mut cache, d).unwrap();
    assert!(r.changed);
    assert_eq!(r.loaded.model.services.len(), 1);
}

/// Reading only the names a watcher reports finds what a full walk finds, and walks only where a name
/// could change the walk itself.
#[test]
fn reading_the_changed_names_finds_what_the_walk_finds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
    write("b.yaml", &svc("b", 80));
    write("d.yaml", &svc("d", 80));
    let mut cache = DirCache::new(vec![d.clone()]);
    both(&mut cache, &d).unwrap();
    let names = |list: &[&str]| list.iter().map(|n| d.join(n)).collect::<BTreeSet<_>>();
    let targeted = |cache: &mut DirCache, list: &[&str]| same(cache.read_paths(&names(list)), &d).unwrap();

    // An edit, a new file sorting between the others, and an unrelated file: only the named files are read.
    write("b.yaml", &svc("b", 81));
    write("c.yaml", &svc("c", 80));
    write("notes.txt", "not a manifest");
    let r = targeted(&mut cache, &["b.yaml", "c.yaml", "notes.txt"]);
    assert_eq!((r.read, r.parsed, r.changed), (2, 2, true));

    // Written as a dot-file and renamed into place, as tools do; then a removal.
    write(".e.yaml.tmp", &svc("e", 80));
    std::fs::rename(d.join(".e.yaml.tmp"), d.join("e.yaml")).unwrap();
    let r = targeted(&mut cache, &[".e.yaml.tmp", "e.yaml"]);
    assert_eq!((r.read, r.parsed), (1, 1));
    std::fs::remove_file(d.join("d.yaml")).unwrap();
    let r = targeted(&mut cache, &["d.yaml"]);
    assert_eq!((r.read, r.changed), (0, true));

    // A new directory: only a walk can tell what is in it.
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/f.yaml"), svc("f", 80)).unwrap();
    let r = targeted(&mut cache, &["sub"]);
    assert_eq!(r.read, 4, "walked: b, c, e, sub/f");
    // Now inside it, a named file is enough; then the directory goes.
    std::fs::write(d.join("sub/f.yaml"), svc("f", 81)).unwrap();
    assert_eq!(targeted(&mut cache, &["sub/f.yaml"]).read, 1);
    std::fs::remove_dir_all(d.join("sub")).unwrap();
    let r = targeted(&mut cache, &["sub/f.yaml", "sub"]);
    assert!(r.changed);

    // A duplicate named by the watcher, in a file read before the one defining it now: the later file
    // (b.yaml) stays in force, found by a read of every file, as the loader finds it.
    write("a.yaml", &svc("b", 99));
    let r = targeted(&mut cache, &["a.yaml"]);
    assert_eq!(r.read, 4, "every file read while an object is defined twice");
    assert!(warnings(&r).iter().any(|w| w.contains("twice")));
    std::fs::remove_file(d.join("a.yaml")).unwrap();
    let r = targeted(&mut cache, &["a.yaml"]);
    assert!(!r.changed && r.warnings_changed);

    // Links: once the walk has met one, a hidden name (a ConfigMap's `..data` swap) means a walk.
    #[cfg(unix)]
    {
        std::fs::create_dir(d.join("..v1")).unwrap();
        std::fs::write(d.join("..v1/g.yaml"), svc("g", 80)).unwrap();
        std::os::unix::fs::symlink("..v1", d.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/g.yaml", d.join("g.yaml")).unwrap();
        assert_eq!(targeted(&mut cache, &["g.yaml"]).read, 4, "a new link: walked");
        std::fs::create_dir(d.join("..v2")).unwrap();
        std::fs::write(d.join("..v2/g.yaml"), svc("g", 81)).unwrap();
        std::os::unix::fs::symlink("..v2", d.join("..data_tmp")).unwrap();
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
        let r = targeted(&mut cache, &["..data_tmp", "..data"]);
        assert_eq!((r.read, r.changed), (4, true), "the swap is seen through the link");
    }
}

/// Enough files for the loader and the cache to parse on several threads: both report the error a
/// sequential read would (the first in reading order), and build the same model.
#[test]
fn a_parallel_load_reports_what_the_cache_reports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |i: usize, text: &str| std::fs::write(d.join(format!("{i:04}.yaml")), text).unwrap();
    for i in 0..300 {
        write(i, &svc(&format!("s{i}"), 80));
    }
    let mut cache = DirCache::new(vec![d.to_path_buf()]);
    let r = both(&mut cache, d).unwrap();
    assert_eq!((r.parsed, r.loaded.model.services.len()), (300, 300));

    // Two files that do not parse and a duplicate before both: every file is parsed before objects are
    // added, so the first file that does not parse is the error; once fixed, the duplicate is a warning
    // and the later definition wins, in the parallel loader as in the cache.
    write(250, "apiVersion: v1\nkind: Service\nmetadata: {name: [\n");
    write(260, "apiVersion: v1\nkind: Service\nmetadata: {name: [\n");
    write(40, &svc("s3", 81));
    let err = both(&mut cache, d).unwrap_err();
    assert!(err.contains("0250.yaml"), "{err}");
    write(250, &svc("s250", 80));
    write(260, &svc("s260", 80));
    let r = both(&mut cache, d).unwrap();
    let w = warnings(&r).join("\n");
    assert!(w.contains("0003.yaml") && w.contains("0040.yaml"), "{w}");
    assert_eq!(r.loaded.model.services.len(), 299);
    write(40, &svc("s40", 80));
    assert_eq!(both(&mut cache, d).unwrap().loaded.model.services.len(), 300);
}

/// Reads on another thread, failing (not hanging) the test if the read blocks.
fn read_bounded(cache: DirCache, named: Option<BTreeSet<PathBuf>>) -> (DirCache, Read) {
    files::tests::bounded(move || {
        let mut cache = cache;
        let read = match named {
            Some(names) => cache.read_paths(&names),
            None => cache.read(),
        };
        (cache, read.unwrap_or_else(|e| panic!("{e}")))
    })
}

fn warnings(r: &Read) -> Vec<String> {
    r.loaded.warnings.iter().map(ToString::to_string).collect()
}

/// A file the reader skips never fails a read, and never takes down what it defined when it last read
/// well; a new one is skipped as the one-pass loader skips it.
#[test]
fn skipped_files_keep_what_they_defined_and_hold_back_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
    let big = |name: &str| format!("{}# {}\n", svc(name, 80), "x".repeat(600));
    let port = |r: &Read, name: &str| {
        let s = r.loaded.model.services.peek(&ObjectKey::new("a", name)).cloned();
        s.map(|s| s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port)
    };
    write("a.yaml", &svc("a", 80));
    write("b.yaml", &svc("b", 80));
    write("c.yaml", &big("c"));
    let cache = DirCache::new(vec![d.clone()]).with_max_file_bytes(500);
    let (mut cache, r) = read_bounded(cache, None);
    let loader = files::load_paths_capped(std::slice::from_ref(&d), 500).unwrap();
    assert_eq!(
        r.loaded.warnings, loader.warnings,
        "a new oversize file: skipped as the loader skips it"
    );
    assert_eq!(r.loaded.model, loader.model);
    assert_eq!((port(&r, "b"), port(&r, "c")), (Some(80), None));

    // b grows past the cap: its last good objects stay, and the warning says so; a new file beside it
    // and a FIFO do not hold the read back.
    write("b.yaml", &big("b"));
    write("d.yaml", &svc("d", 80));
    files::tests::mkfifo(&d.join("e.yaml"));
    std::os::unix::fs::symlink("/dev/zero", d.join("f.yaml")).unwrap();
    (cache, _) = read_bounded(cache, None);
    let (mut cache, r) = read_bounded(cache, None);
    assert_eq!((r.changed, r.warnings_changed), (false, false), "nothing moved since");
    assert_eq!((port(&r, "b"), port(&r, "d")), (Some(80), Some(80)));
    let w = warnings(&r);
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(
        w[0].contains("b.yaml: skipped: ")
            && w[0].ends_with("; the 1 object(s) it defined when it last read well stay in force"),
        "{w:?}"
    );
    assert!(w[1].contains("c.yaml: skipped: "), "{w:?}");
    assert!(
        w[2].ends_with("e.yaml: skipped: it is a FIFO, not a regular file"),
        "{w:?}"
    );
    assert!(
        w[3].ends_with("f.yaml: skipped: it is a character device, not a regular file"),
        "{w:?}"
    );

    // Named by a watcher, the FIFO is still never opened.
    let named: BTreeSet<PathBuf> = [d.join("e.yaml")].into();
    (cache, _) = read_bounded(cache, Some(named));

    // b shrinks back: read again (its warning goes); the FIFO and the link removed: theirs go too.
    write("b.yaml", &svc("b", 81));
    std::fs::remove_file(d.join("e.yaml")).unwrap();
    std::fs::remove_file(d.join("f.yaml")).unwrap();
    let (mut cache, r) = read_bounded(cache, None);
    assert_eq!((r.changed, r.warnings_changed), (true, true));
    assert_eq!(port(&r, "b"), Some(81));
    assert_eq!(warnings(&r).len(), 1, "only c.yaml is left skipped");
    std::fs::remove_file(d.join("c.yaml")).unwrap();
    let r = same(cache.read(), &d).unwrap();
    assert!(r.warnings_changed && r.loaded.warnings.is_empty());
}
