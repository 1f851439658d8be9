//! `pier demo`: the bundled example, end to end, with one command. It starts the demo upstreams on the
//! loopback addresses the example names (some behind TLS, one requiring a client certificate), a DNS
//! responder for the example's `*.demo.test` names, pier's serving runtime in-process on the example
//! directory, and a real Envoy bootstrapped from pier over ADS; then it sends requests through Envoy, prints
//! what each upstream saw, prints the addresses, and stays up until Ctrl-C (`--once`: exits instead).
//!
//! Everything binds and talks to 127.0.0.0/8 only: Envoy's listeners bind 127.0.0.1 (pier is told so), its
//! only DNS resolver is the demo's own, and the one Backend pointing elsewhere (cloud metadata) is refused by
//! pier's guardrails. Loopback destinations are allowed (`--allow-loopback`) because every upstream is one.

mod config;
mod requests;
pub mod standalone;
mod upstreams;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::envoy::ads_bootstrap::{BootstrapSpec, bootstrap};
use crate::options::{Guardrails, Options};
use crate::runtime::ServeConfig;
use crate::source::Debounce;
use crate::testkit::dns::Dns;
use crate::testkit::envoy::{self, Envoy, INSTALL_HINT};
use crate::testkit::{eventually, http, local};
use upstreams::{UPSTREAMS, Upstreams};

/// The Gateway of examples/00-gateway.yaml: the one Envoy asks pier for.
pub const GATEWAY: &str = "demo/edge";
/// The listener ports examples/00-gateway.yaml gives that Gateway.
pub const EXAMPLE_HTTP_PORT: u16 = 8080;
pub const EXAMPLE_HTTPS_PORT: u16 = 8443;
/// Deadline for pier to listen and become ready, and for Envoy to route the first request after LIVE.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The example manifests, with the upstreams' certificates in `upstream-certs/`.
    pub examples: PathBuf,
    /// Gateway listener ports on 127.0.0.1; 0 picks a free one.
    pub http_port: u16,
    pub https_port: u16,
    pub delta: bool,
    /// Exit after the results instead of staying up; an error if any request went wrong.
    pub once: bool,
}

/// Runs the demo until Ctrl-C (or, with `once`, until the results are printed), then stops everything it
/// started: Envoy first, then pier, then the upstreams and the DNS responder.
pub async fn run(config: DemoConfig) -> Result<()> {
    let bin = envoy::find().ok_or_else(|| anyhow!("{INSTALL_HINT}; or run scripts/demo.sh, which installs it"))?;
    // Installed before anything starts, so a Ctrl-C during start-up still shuts down what did start.
    let mut signals = Signals::install()?;
    let mut world = World::default();
    let outcome = tokio::select! {
        result = start_and_check(&config, &bin, &mut world) => Some(result),
        name = signals.next() => {
            println!("\n{name}: stopping");
            None
        }
    };
    let result = match outcome {
        None if config.once => Err(anyhow!("interrupted before the results were complete")),
        None => Ok(()),
        Some(Err(e)) => Err(e),
        Some(Ok(true)) if config.once => Ok(()),
        Some(Ok(false)) if config.once => Err(anyhow!("some requests did not get the expected answer (✗ above)")),
        Some(Ok(_)) => {
            println!("\nRunning until Ctrl-C.");
            let name = signals.next().await;
            println!("\n{name}: stopping");
            Ok(())
        }
    };
    world.shutdown().await;
    result
}

/// pier's runtime: its stop switch and its task.
type PierTask = (watch::Sender<bool>, JoinHandle<Result<()>>);

/// Everything the demo started, so it can be stopped however far start-up got.
#[derive(Default)]
struct World {
    envoy: Option<Envoy>,
    pier: Option<PierTask>,
    upstreams: Option<Upstreams>,
    dns: Option<Dns>,
    /// Envoy's bootstrap and log, pier's address file, and the rewritten example when ports differ.
    work: Option<tempfile::TempDir>,
}

impl World {
    async fn shutdown(mut self) {
        // Envoy first: its xDS stream then closes before pier goes away, and no request is in flight.
        drop(self.envoy.take());
        if let Some((stop, task)) = self.pier.take() {
            let _ = stop.send(true);
            match tokio::time::timeout(Duration::from_secs(10), task).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => eprintln!("pier ended with an error: {e:#}"),
                Ok(Err(e)) => eprintln!("pier's runtime task failed: {e}"),
                Err(_) => eprintln!("pier did not stop within 10 s; leaving it to process exit"),
            }
        }
        drop(self.upstreams.take());
        drop(self.dns.take());
        drop(self.work.take());
    }
}

/// Starts everything, sends the requests and prints the results; true when every request went as expected.
async fn start_and_check(config: &DemoConfig, bin: &Path, world: &mut World) -> Result<bool> {
    let examples = &config.examples;
    check_examples(examples)?;
    let http_port = config::listener_port(config.http_port, "HTTP", "--listen-port-http")?;
    let https_port = config::listener_port(config.https_port, "HTTPS", "--listen-port-https")?;
    let work = world
        .work
        .insert(tempfile::Builder::new().prefix("pier-demo-").tempdir()?)
        .path()
        .to_path_buf();
    let (config_dir, copied) = config::config_dir(examples, &work, http_port, https_port)?;
    let mode = if config.delta { "delta" } else { "state-of-the-world" };
    println!(
        "pier demo: the example in {} on loopback, through a real Envoy\n",
        examples.display()
    );

    let certs = examples.join("upstream-certs");
    let ups = world.upstreams.insert(Upstreams::start(&certs).await?);
    let dns = world.dns.insert(start_dns().await?);
    let started = Instant::now();
    let (server_tls, envoy_tls) = config::xds_pki(&work, GATEWAY).context("issuing the demo's xDS certificates")?;
    let (xds, admin) = start_pier(&config_dir, &work, dns.addr, server_tls, &mut world.pier).await?;
    let spec = BootstrapSpec {
        gateway: GATEWAY.to_string(),
        xds: vec![(Ipv4Addr::LOCALHOST.to_string(), xds.port())],
        delta: config.delta,
        admin_port: 0,
        node_id: Some("pier-demo".to_string()),
        dns_resolver: Some((dns.addr.ip(), dns.addr.port())),
        tls: Some(envoy_tls),
    };
    let envoy = world
        .envoy
        .insert(Envoy::start(bin, &bootstrap(&spec), &work, "envoy").await?);
    let listener = local(http_port);
    await_envoy(envoy, &config_dir, started, mode, listener).await?;

    let ca_pem = std::fs::read_to_string(certs.join("ca.crt")).context("reading the demo CA")?;
    let targets = requests::Targets {
        http: listener,
        https: local(https_port),
        ca_pem,
        upstreams: ups,
        envoy,
    };
    println!(
        "\nRequests through Envoy (http://{listener}, https://{}):\n",
        targets.https
    );
    let rows = requests::run(&targets).await;
    let passed = requests::print(&rows);
    println!();
    print_addresses(&Addresses {
        http_port,
        https_port,
        xds,
        admin,
        mode,
        envoy,
        dns: dns.addr,
        config_dir,
        copied,
    });
    Ok(passed)
}

/// Refuses a directory that is not the bundled example, and warns when its upstream names drifted.
fn check_examples(examples: &Path) -> Result<()> {
    if !examples.join("00-gateway.yaml").is_file() {
        bail!(
            "{} does not hold the bundled example (no 00-gateway.yaml): run from the repository root or pass \
             --examples DIR",
            examples.display()
        );
    }
    if let Err(e) = upstreams::check_against(examples) {
        eprintln!("warning: {e:#}; requests to it will fail");
    }
    Ok(())
}

/// The demo's DNS responder, answering the example's upstream names with loopback addresses.
async fn start_dns() -> Result<Dns> {
    let dns = Dns::start().await.context("starting the demo DNS responder")?;
    for (name, ip) in upstreams::dns_names() {
        dns.set(name, &[ip]);
    }
    Ok(dns)
}

/// Waits until Envoy is live on pier's configuration and routes the example's first host, saying so.
async fn await_envoy(
    envoy: &Envoy,
    config_dir: &Path,
    started: Instant,
    mode: &str,
    listener: SocketAddr,
) -> Result<()> {
    println!(
        "Envoy started (pid {}, admin http://{}), asking pier for {GATEWAY}.",
        envoy.pid(),
        envoy.admin
    );
    envoy.wait_live(envoy::START_TIMEOUT).await.with_context(|| {
        format!(
            "Envoy never got its configuration from pier: is {GATEWAY} a pier Gateway in {}?",
            config_dir.display()
        )
    })?;
    println!(
        "Envoy is LIVE {:.1} s after pier started ({mode} ADS).",
        started.elapsed().as_secs_f64()
    );
    let routed = eventually("Envoy to route www.demo.test", STEP_TIMEOUT, || async {
        let r = http::get(listener, "www.demo.test", "/").await?;
        if r.status == 200 {
            Ok(())
        } else {
            Err(format!("status {}", r.status))
        }
    });
    if let Err(e) = routed.await {
        eprintln!("warning: {e}");
    }
    Ok(())
}

/// Starts pier's serving runtime on `config_dir` and waits until it serves; returns its xDS and admin
/// addresses (from its address file, as for `pier serve --address-file`).
async fn start_pier(
    config_dir: &Path,
    work: &Path,
    dns: SocketAddr,
    tls: crate::xds::transport::TlsFiles,
    slot: &mut Option<PierTask>,
) -> Result<(SocketAddr, SocketAddr)> {
    let address_file = work.join("pier-addresses.json");
    let mut options = Options {
        listener_address: Ipv4Addr::LOCALHOST.to_string(),
        guardrails: Guardrails {
            allow_loopback: true,
            ..Guardrails::default()
        },
        ..Options::default()
    };
    // The bundled names resolve only at the demo's own DNS responder.
    options.dns.resolvers = vec![dns];
    let serve = ServeConfig {
        config_dir: config_dir.to_path_buf(),
        xds_address: local(0),
        admin_address: local(0),
        address_file: Some(address_file.clone()),
        debounce: Debounce {
            quiet: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        },
        options,
        kubernetes: None,
        xds_security: crate::xds::transport::Security::Tls(tls),
        xds_limits: Default::default(),
        max_file_bytes: crate::model::yaml::DEFAULT_MAX_BYTES,
        admin_access: crate::admin::Access::default(),
        containment: crate::runtime::ContainSettings::default(),
    };
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(crate::runtime::run_until(serve, async move {
        let _ = stopped.wait_for(|s| *s).await;
    }));
    let (_, task) = slot.insert((stop, task));
    let deadline = Instant::now() + STEP_TIMEOUT;
    let addresses: serde_json::Value = loop {
        if let Some(v) = std::fs::read(&address_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            break v;
        }
        if task.is_finished() {
            let (_, task) = slot.take().expect("just inserted");
            bail!(
                "pier stopped during start-up: {:#}",
                task.await?.err().unwrap_or_else(|| anyhow!("no error"))
            );
        }
        if Instant::now() >= deadline {
            bail!("pier wrote no address file within {STEP_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let address = |key: &str| -> Result<SocketAddr> {
        addresses[key]
            .as_str()
            .and_then(|a| a.parse().ok())
            .with_context(|| format!("pier's address file: {key}"))
    };
    let (xds, admin) = (address("xds")?, address("admin")?);
    eventually("pier to be ready (/readyz)", STEP_TIMEOUT, || async {
        let r = http::get(admin, &admin.to_string(), "/readyz").await?;
        if r.status == 200 { Ok(()) } else { Err(r.body) }
    })
    .await
    .map_err(|e| anyhow!("pier could not serve {}: {e}", config_dir.display()))?;
    Ok((xds, admin))
}

struct Addresses<'a> {
    http_port: u16,
    https_port: u16,
    xds: SocketAddr,
    admin: SocketAddr,
    mode: &'a str,
    envoy: &'a Envoy,
    dns: SocketAddr,
    config_dir: PathBuf,
    copied: bool,
}

fn print_addresses(a: &Addresses) {
    let upstreams: Vec<String> = UPSTREAMS.iter().map(|s| s.describe()).collect();
    let names: Vec<String> = upstreams::dns_names().map(|(n, ip)| format!("{n} → {ip}")).collect();
    let (http, https, admin) = (a.http_port, a.https_port, a.admin);
    println!("Envoy      http://127.0.0.1:{http}  https://127.0.0.1:{https} (SNI *.demo.test)");
    println!(
        "           admin http://{} (pid {}, log {})",
        a.envoy.admin,
        a.envoy.pid(),
        a.envoy.log_path().display()
    );
    let (ns, name) = GATEWAY.split_once('/').unwrap_or_default();
    let identity = crate::xds::identity::spiffe_id(crate::xds::identity::DEFAULT_TRUST_DOMAIN, ns, name);
    println!(
        "pier       xDS {} ({} ADS over mTLS: Envoy presents {identity})",
        a.xds, a.mode
    );
    println!("           admin http://{admin}  /readyz /metrics /debug/status /debug/clients");
    println!("                 http://{admin}/debug/config_dump?gateway={GATEWAY}");
    if a.copied {
        println!(
            "config     {} (a copy of the example with the listener ports changed)",
            a.config_dir.display()
        );
    } else {
        println!(
            "config     {} (watched: edit a file and pier pushes the change to Envoy)",
            a.config_dir.display()
        );
    }
    println!("upstreams  {}", upstreams.join(", "));
    println!("DNS        {}/udp: {}", a.dns, names.join(", "));
    println!("\nTry:");
    println!("  curl -H 'Host: api.demo.test' http://127.0.0.1:{http}/v1/models");
    println!(
        "  curl --cacert examples/upstream-certs/ca.crt --resolve www.demo.test:{https}:127.0.0.1 \
         https://www.demo.test:{https}/"
    );
    println!("  curl http://{admin}/debug/status");
}

/// SIGINT and SIGTERM, whichever comes first.
struct Signals {
    int: Signal,
    term: Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        let int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        Ok(Signals { int, term })
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
        }
    }
}
