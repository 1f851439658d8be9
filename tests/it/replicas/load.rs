//! Traffic through the Envoys while the faults happen, and what the replicas and the Envoys say about
//! where each proxy is. Every wait is bounded.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pier::testkit::http;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One request every this long through each Envoy.
const EVERY: Duration = Duration::from_millis(50);

/// Requests flowing through every listener until [`Load::stop`].
pub struct Load {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    failures: Arc<Mutex<Vec<String>>>,
}

impl Load {
    pub fn start(listeners: Vec<SocketAddr>) -> Load {
        let (stop, stopped) = watch::channel(false);
        let failures = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let tasks = listeners
            .into_iter()
            .map(|l| {
                let (stopped, failures) = (stopped.clone(), failures.clone());
                tokio::spawn(async move {
                    while !*stopped.borrow() {
                        let r = http::get(l, "www.demo.test", "/").await;
                        if !r.as_ref().is_ok_and(|r| r.status == 200) {
                            let what = r.map_or_else(|e| e, |r| format!("status {}", r.status));
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("{l} at {:?}: {what}", t0.elapsed()));
                        }
                        tokio::time::sleep(EVERY).await;
                    }
                })
            })
            .collect();
        Load { stop, tasks, failures }
    }

    /// Stops the traffic; every failed request.
    pub async fn stop(self) -> Vec<String> {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        self.failures.lock().unwrap().clone()
    }
}

/// Waits until `path` answers 200 through `listener`.
pub async fn wait_for_200(listener: SocketAddr, path: &str, within: Duration) {
    let t0 = Instant::now();
    loop {
        if http::get(listener, "www.demo.test", path)
            .await
            .is_ok_and(|r| r.status == 200)
        {
            return;
        }
        assert!(
            t0.elapsed() < within,
            "{path} through {listener}: no 200 within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the replica's `/readyz` answers 200.
pub async fn wait_ready(admin: SocketAddr, within: Duration) {
    let t0 = Instant::now();
    loop {
        if http::get(admin, "127.0.0.1", "/readyz")
            .await
            .is_ok_and(|r| r.status == 200)
        {
            return;
        }
        assert!(t0.elapsed() < within, "replica {admin} not ready within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the replica at `admin` has a stream of `node` (`/debug/clients`).
async fn has(admin: SocketAddr, node: &str) -> bool {
    let Ok(r) = http::get(admin, "127.0.0.1", "/debug/clients").await else {
        return false;
    };
    let doc: Value = serde_json::from_str(&r.body).unwrap_or_default();
    doc["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["node"] == node)
}

/// The replica `node` is connected to.
pub async fn serving(admins: &[SocketAddr], node: &str, within: Duration) -> usize {
    let t0 = Instant::now();
    loop {
        for (i, a) in admins.iter().enumerate() {
            if has(*a, node).await {
                return i;
            }
        }
        assert!(t0.elapsed() < within, "{node} is on no replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `node` is on a replica other than `left`; which one.
pub async fn moved(admins: &[SocketAddr], node: &str, left: usize, within: Duration) -> usize {
    let t0 = Instant::now();
    loop {
        for (i, a) in admins.iter().enumerate().filter(|(i, _)| *i != left) {
            if has(*a, node).await {
                return i;
            }
        }
        assert!(
            t0.elapsed() < within,
            "{node} did not leave replica {left} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `version_info` of every dynamic cluster, listener and route configuration Envoy has active, keyed
/// `cluster/<name>`, `listener/<name>`, `route/<name>`.
pub async fn versions(envoy_admin: SocketAddr) -> BTreeMap<String, String> {
    let r = http::get(envoy_admin, "127.0.0.1", "/config_dump")
        .await
        .expect("Envoy's admin API answers");
    let dump: Value = serde_json::from_str(&r.body).expect("config_dump is JSON");
    let mut out = BTreeMap::new();
    let version = |v: &Value| v["version_info"].as_str().unwrap_or_default().to_string();
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
