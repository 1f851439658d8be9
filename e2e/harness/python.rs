//! `python3` as the scenarios that drive real third-party Python clients run it (the MCP SDK, grpcio).

use std::path::Path;
use std::process::Command;

/// `python3`, with `target/python-deps` (where scripts/python_deps.sh installs when pip may not install
/// into the interpreter) on `PYTHONPATH` when it exists, and unbuffered output (the scenarios read it
/// line by line as it happens).
pub fn python() -> Command {
    let mut cmd = Command::new("python3");
    let deps = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python-deps");
    if deps.is_dir() {
        let mut paths = vec![deps];
        if let Some(existing) = std::env::var_os("PYTHONPATH") {
            paths.extend(std::env::split_paths(&existing));
        }
        cmd.env("PYTHONPATH", std::env::join_paths(paths).expect("PYTHONPATH"));
    }
    cmd.env("PYTHONUNBUFFERED", "1");
    cmd
}
