//! Shared harness of the Kubernetes tests: pier's real runtime (`run_until`, in-process) in Kubernetes
//! mode against the fake API server, its admin API, and the test model; [`ads`] is a minimal CDS-only
//! proxy. Every wait is bounded.

pub mod ads;
pub mod child;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::fake_apiserver::FakeApiServer;

pub const WAIT: Duration = Duration::from_secs(20);
pub const GW: &str = "default/gw";

pub const GW_GROUP: &str = "gateway.networking.k8s.io";

/// A GatewayClass, Gateway default/gw (HTTP 8080, routes from all namespaces), HTTPRoute default/route
/// to Service a, and Services a, b, c with one endpoint each (10.0.0.1-3).
pub fn base_model() -> String {
    let mut out = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: pier}\nspec: {controllerName: pier.dev/gateway-controller}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n\
         spec:\n  gatewayClassName: pier\n  listeners:\n  - {name: http, protocol: HTTP, port: 8080, allowedRoutes: {namespaces: {from: All}}}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: route, namespace: default}\n\
         spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /a}}]\n    backendRefs: [{name: a, port: 80}]\n",
    );
    for (i, svc) in ["a", "b", "c"].iter().enumerate() {
        out += &service(svc, &format!("10.0.0.{}", i + 1));
    }
    out
}

/// A Service `name` (port 80 → 8080) in default and its EndpointSlice with one ready address.
pub fn service(name: &str, ip: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\n\
         spec: {{ports: [{{name: http, port: 80, targetPort: 8080, protocol: TCP}}]}}\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}-1, namespace: default, labels: {{kubernetes.io/service-name: {name}}}}}\n\
         addressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints: [{{addresses: ['{ip}'], conditions: {{ready: true}}}}]\n"
    )
}

/// Test-speed settings: short retries, a short Lease, a fast rejection poll.
pub fn settings(api: &FakeApiServer, identity: &str, namespaces: &[&str]) -> pier::runtime::KubeSettings {
    let mut k = pier::runtime::KubeSettings::new(
        namespaces.iter().map(|s| s.to_string()).collect(),
        "pier-status-writer".into(),
        Some("pier-system".into()),
        identity.into(),
    );
    k.client_config = Some(api.kube_config(identity));
    k.lease_duration_secs = 2;
    k.lease_grace_secs = 1;
    k.retry_max = Duration::from_millis(300);
    k.nack_poll = Duration::from_millis(200);
    k
}

/// One pier, serving in Kubernetes mode.
pub struct Pier {
    pub xds: SocketAddr,
    pub admin: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
    _dir: tempfile::TempDir,
}

impl Pier {
    pub async fn start(settings: pier::runtime::KubeSettings, quiet: Duration) -> Pier {
        let mut options = pier::Options::default();
        options.guardrails.allow_loopback = true;
        Pier::start_with(settings, quiet, options).await
    }

    /// [`Pier::start`] with these translator options.
    pub async fn start_with(settings: pier::runtime::KubeSettings, quiet: Duration, options: pier::Options) -> Pier {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("PIER_LOG").unwrap_or_else(|_| "off".into()))
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().unwrap();
        let address_file = dir.path().join("addr.json");
        let config = pier::runtime::ServeConfig {
            config_dir: Default::default(),
            xds_address: "127.0.0.1:0".parse().unwrap(),
            admin_address: "127.0.0.1:0".parse().unwrap(),
            address_file: Some(address_file.clone()),
            debounce: pier::source::Debounce {
                quiet,
                max_delay: Duration::from_secs(1),
            },
            options,
            kubernetes: Some(settings),
            xds_security: pier::xds::transport::Security::Plaintext { insecure: false },
            xds_limits: Default::default(),
            max_file_bytes: pier::model::yaml::DEFAULT_MAX_BYTES,
            admin_access: pier::admin::Access::default(),
            containment: pier::runtime::ContainSettings::default(),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(pier::runtime::run_until(config, async move {
            let _ = stopped.await;
        }));
        let addrs: Value = wait_for("pier's address file", || {
            std::fs::read_to_string(&address_file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
        })
        .await;
        Pier {
            xds: addrs["xds"].as_str().unwrap().parse().unwrap(),
            admin: addrs["admin"].as_str().unwrap().parse().unwrap(),
            stop: Some(stop),
            task: Some(task),
            _dir: dir,
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = pier::testkit::http::get(self.admin, &self.admin.to_string(), path)
            .await
            .expect("admin API answers");
        (r.status, serde_json::from_str(&r.body).unwrap_or(Value::Null))
    }

    /// Everything published, as `/debug/config_dump` renders it (one JSON text for substring checks).
    pub async fn dump(&self) -> String {
        self.get("/debug/config_dump").await.1.to_string()
    }

    /// Waits until the published configuration satisfies `pred`.
    pub async fn wait_dump(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let d = self.dump().await;
            if pred(&d) {
                return d;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: not within {WAIT:?}; published: {d}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn ready(&self) -> bool {
        self.get("/readyz").await.0 == 200
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT, task)
                .await
                .expect("pier stops within the bound")
                .expect("pier task")
                .expect("pier ran without error");
        }
    }
}

impl Drop for Pier {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Polls `f` every 50 ms until it yields, for at most [`WAIT`].
pub async fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
