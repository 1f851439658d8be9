//! One scenario's world: a DNS responder, pier's config directory, a work directory for logs and bootstraps,
//! a `pier serve`, and the Envoys attached to it (each from `pier bootstrap` in the scenario's [`Mode`]).
//! Dropping the scene kills every process it started — Envoys first, then pier — and removes its
//! directories (kept with `E2E_KEEP=1`, whose paths are then printed).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use pier::testkit::dns::Dns;
use pier::testkit::http::{self, Response};
use pier::testkit::{free_port, lo, local};
use serde_json::Value;

use super::envoy::Envoy;
use super::manifests::yaml;
use super::pier::{ConfigDir, Pier, PierOptions};
use super::{Mode, eventually, keep_work_dirs};

/// The Host header the suite's requests carry (the test Gateways' listeners take any host).
pub const HOST: &str = "www.e2e.test";
/// Deadline for configuration changes to show up in traffic.
pub const CONVERGE: Duration = Duration::from_secs(20);

pub struct Scene {
    pub mode: Mode,
    /// The proxies, in start order (dropped before pier).
    pub envoys: Vec<Envoy>,
    pier: Option<Pier>,
    pub dns: Dns,
    pub config: ConfigDir,
    /// The default Gateway listener port (free when the scene was created), on 127.0.0.1.
    pub port: u16,
    work: tempfile::TempDir,
    name: String,
}

impl Scene {
    pub async fn new(name: &str, mode: Mode) -> Scene {
        let mut work = tempfile::Builder::new()
            .prefix(&format!("pier-e2e-{name}-{}-", mode.label()))
            .tempdir()
            .expect("work dir");
        let config = ConfigDir::new(work.path());
        if keep_work_dirs() {
            work.disable_cleanup(true);
            eprintln!("E2E: {name}/{} work dir {}", mode.label(), work.path().display());
        }
        Scene {
            mode,
            envoys: Vec::new(),
            pier: None,
            dns: Dns::start().await.expect("starting the DNS responder"),
            config,
            port: free_port(lo(1)),
            work,
            name: format!("{name}/{}", mode.label()),
        }
    }

    /// Writes (or atomically replaces) one manifest file.
    pub fn write(&self, file: &str, docs: &[Value]) {
        self.config.write(file, &yaml(docs));
    }

    /// Starts `pier serve` on the config directory and waits until it is ready.
    /// Envoy asks the scene's DNS responder for every name pier's clusters carry, and nothing else.
    pub async fn start_pier(&mut self, mut options: PierOptions) {
        assert!(self.pier.is_none(), "pier already runs");
        options
            .extra_args
            .extend(["--dns-resolver".to_string(), self.dns.addr.to_string()]);
        let label = format!("pier-{}", self.next_pier_index());
        let pier = Pier::start(&self.config, self.work.path(), &label, &options).await;
        pier.wait_ready().await;
        self.pier = Some(pier);
    }

    fn next_pier_index(&self) -> usize {
        (1..)
            .find(|i| !self.work.path().join(format!("pier-{i}.log")).exists())
            .unwrap()
    }

    /// The scene's work directory (logs, bootstraps; removed with the scene).
    pub fn work_dir(&self) -> &std::path::Path {
        self.work.path()
    }

    pub fn pier(&self) -> &Pier {
        self.pier.as_ref().expect("pier is running")
    }

    pub fn pier_mut(&mut self) -> &mut Pier {
        self.pier.as_mut().expect("pier is running")
    }

    /// Stops pier gracefully (SIGTERM) and asserts it exits cleanly.
    pub async fn stop_pier(&mut self) {
        let status = self.pier_mut().terminate().await;
        let pier = self.pier.take().unwrap();
        assert!(
            status.success(),
            "pier exited with {status} after SIGTERM; log:\n{}",
            pier.log()
        );
    }

    /// Starts an Envoy for `gateway` from `pier bootstrap` and waits until it is LIVE; returns its index.
    pub async fn start_envoy(&mut self, gateway: &str) -> usize {
        let index = self.spawn_envoy(gateway).await;
        self.envoys[index].wait_live().await;
        index
    }

    /// Starts an Envoy for `gateway` without waiting for LIVE (for a Gateway pier must not serve).
    pub async fn spawn_envoy(&mut self, gateway: &str) -> usize {
        self.spawn_envoy_with(gateway, |_| {}, &[]).await
    }

    /// [`Scene::start_envoy`] with the bootstrap edited by `edit` and extra environment variables.
    pub async fn start_envoy_with(
        &mut self,
        gateway: &str,
        edit: impl FnOnce(&mut Value),
        env: &[(&str, &str)],
    ) -> usize {
        let index = self.spawn_envoy_with(gateway, edit, env).await;
        self.envoys[index].wait_live().await;
        index
    }

    /// [`Scene::spawn_envoy`] with the bootstrap edited by `edit` and extra environment variables.
    pub async fn spawn_envoy_with(
        &mut self,
        gateway: &str,
        edit: impl FnOnce(&mut Value),
        env: &[(&str, &str)],
    ) -> usize {
        let index = self.envoys.len();
        let node_id = format!("e2e-{}-{index}", gateway.replace('/', "-"));
        let mut bootstrap = self.pier().bootstrap(gateway, self.mode, self.dns.addr, &node_id);
        edit(&mut bootstrap);
        let api_type = &bootstrap["dynamic_resources"]["ads_config"]["api_type"];
        let want = if self.mode == Mode::Delta { "DELTA_GRPC" } else { "GRPC" };
        assert_eq!(api_type, want, "pier bootstrap for {:?} mode", self.mode);
        let label = format!("envoy-{index}");
        self.envoys
            .push(Envoy::start(&bootstrap, self.work.path(), &label, env).await);
        index
    }

    pub fn envoy(&self) -> &Envoy {
        self.envoys.first().expect("an Envoy is running")
    }

    pub fn envoy_at(&self, index: usize) -> &Envoy {
        &self.envoys[index]
    }

    /// The default Gateway listener address.
    pub fn listener(&self) -> SocketAddr {
        local(self.port)
    }

    /// One GET through the default listener.
    pub async fn get(&self, path: &str) -> Result<Response, String> {
        http::get(self.listener(), HOST, path).await
    }

    /// Polls `path` on `port` until upstream `upstream` answers; returns how long that took.
    pub async fn wait_for_upstream_at(&self, port: u16, path: &str, upstream: &str) -> Duration {
        let start = Instant::now();
        let what = format!("{}: GET {path} on :{port} answered by {upstream}", self.name);
        eventually(&what, CONVERGE, || async {
            let r = http::get(local(port), HOST, path).await?;
            match r.upstream() {
                Some(u) if u == upstream => Ok(start.elapsed()),
                other => Err(format!("status {} from {other:?}: {}", r.status, r.body.trim())),
            }
        })
        .await
    }

    /// [`Scene::wait_for_upstream_at`] on the default listener.
    pub async fn wait_for_upstream(&self, path: &str, upstream: &str) -> Duration {
        self.wait_for_upstream_at(self.port, path, upstream).await
    }

    /// Polls `path` until it answers with `status` (and no upstream header).
    pub async fn wait_for_status(&self, path: &str, status: u16) -> Response {
        let what = format!("{}: GET {path} answered {status} by Envoy itself", self.name);
        eventually(&what, CONVERGE, || async {
            let r = self.get(path).await?;
            if r.status == status && r.upstream().is_none() {
                Ok(r)
            } else {
                Err(format!(
                    "status {} from {:?}: {}",
                    r.status,
                    r.upstream(),
                    r.body.trim()
                ))
            }
        })
        .await
    }
}

impl Scene {
    /// Waits until `path` gets a 5xx from Envoy itself while `upstream` saw a refused TLS handshake, then
    /// checks that no request reached the upstream, nothing arrived in plaintext and every handshake
    /// offered `sni`: an upstream the proxy must not trust is refused, never spoken to.
    pub async fn refused_at_the_handshake(&self, path: &str, upstream: &pier::testkit::upstream::Upstream, sni: &str) {
        let what = format!("{}: {path}: a refused TLS handshake and a 5xx", self.name);
        eventually(&what, CONVERGE, || async {
            let r = self.get(path).await?;
            let refused = upstream.handshakes().iter().any(|h| h.error.is_some());
            if r.status >= 500 && r.upstream().is_none() && refused {
                Ok(())
            } else {
                Err(format!(
                    "status {} from {:?}; handshakes {:?}",
                    r.status,
                    r.upstream(),
                    upstream.handshakes()
                ))
            }
        })
        .await;
        assert!(
            upstream.requests().is_empty(),
            "{path}: a request reached the upstream: {:?}",
            upstream.requests()
        );
        assert_eq!(
            upstream.plaintext_attempts(),
            0,
            "{path}: plaintext reached a TLS-only upstream"
        );
        for h in upstream.handshakes() {
            assert_eq!(h.sni.as_deref(), Some(sni), "{path}: SNI of the refused handshake");
        }
    }
}
