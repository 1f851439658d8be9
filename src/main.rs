//! The `pier` binary: parses the command line and hands off to the library. No logic lives here.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;
use pier::cli::{
    AdminArgs, BootstrapArgs, CertsArgs, Cli, Command, DiffArgs, Format, Output, ProxyStatusArgs, ServeArgs,
    TranslateArgs,
};
#[cfg(feature = "demo")]
use pier::cli::{DemoArgs, UpstreamArgs};

/// Why mimalloc and not the system allocator: `Cargo.toml`, and `docs/performance.md` for the figures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The demo prints its own report on stdout; pier's info logs would only interleave with it.
    #[cfg(feature = "demo")]
    let default_filter = if matches!(cli.command, Command::Demo(_)) {
        "warn"
    } else {
        "info"
    };
    #[cfg(not(feature = "demo"))]
    let default_filter = "info";
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PIER_LOG").unwrap_or_else(|_| default_filter.into()),
        )
        .init();
    pier::runtime::pages::disable_transparent_huge_pages();
    // kube and the TLS servers share rustls; pick its crypto provider once, before any is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Command::Diff(args) = cli.command {
        // 0 and 1 say whether anything changed (a CI gate), so an error must be neither.
        return match diff(args) {
            Ok(changed) => ExitCode::from(u8::from(changed)),
            Err(e) => {
                eprintln!("pier: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let result = match cli.command {
        Command::Diff(_) => unreachable!("handled above"),
        Command::Translate(args) => translate(args),
        Command::Serve(args) => serve(*args),
        Command::Bootstrap(args) => bootstrap(args),
        Command::Certs(args) => certs(args),
        Command::ProxyStatus(args) => proxy_status(args),
        Command::Explain(args) => return explain(&args),
        #[cfg(feature = "demo")]
        Command::Demo(args) => demo(args),
        #[cfg(feature = "demo")]
        Command::Upstream(args) => upstream(&args),
        Command::Crds => pier::crds::yaml().context("rendering the CRDs").and_then(|text| {
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .context("writing output")
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pier: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether anything changed.
fn diff(args: DiffArgs) -> Result<bool> {
    use pier::ops::diff::{self, input};
    let (old, new) = (input::Spec::parse(&args.old), input::Spec::parse(&args.new));
    let opts = args.translator.options()?;
    if opts.resolution.mode == pier::options::ResolveMode::Pier {
        // Both sides would be resolved at different moments: the diff would show DNS, not the change.
        bail!("pier diff compares translations as Envoy resolves names (--resolve-hostnames envoy)");
    }
    let side = |spec: &input::Spec, other: &input::Spec, label: &str| -> Result<diff::Side> {
        let m = input::materialize(spec, other).context(label.to_string())?;
        let mut side = diff::Side::read(&m.path, args.inputs.max_file_bytes, &opts, label)?;
        if let Some(g) = &args.gateway {
            side.gateways.retain(|name, _| name == g);
        }
        Ok(side)
    };
    let report = diff::diff(&side(&old, &new, "OLD")?, &side(&new, &old, "NEW")?);
    let text = match args.output {
        Format::Text => diff::text(&report),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&report)?),
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing output")?;
    Ok(!report.is_empty())
}

fn proxy_status(args: ProxyStatusArgs) -> Result<()> {
    let admin = pier::ops::admin_client::Admin::new(args.admin.address, args.admin.admin_token_file.as_deref())
        .map_err(anyhow::Error::msg)?;
    let doc = current_thread()?
        .block_on(admin.get_json("/debug/clients"))
        .map_err(anyhow::Error::msg)?;
    let text = match args.output {
        Format::Text => pier::ops::proxy_status::render(&doc),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&doc)?),
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing output")
}

/// `pier explain` exits 2 when it cannot explain (object not found, unreadable input, pier unreachable).
fn explain(args: &pier::cli::ExplainArgs) -> ExitCode {
    let request = match args.request() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pier: {e}");
            return ExitCode::from(2);
        }
    };
    match pier::ops::explain::run(&request) {
        Ok(text) => match std::io::stdout().lock().write_all(text.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pier: writing output: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("pier: {e}");
            ExitCode::from(2)
        }
    }
}

fn current_thread() -> Result<tokio::runtime::Runtime> {
    pier::ops::current_thread().map_err(anyhow::Error::msg)
}

fn translate(args: TranslateArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let loaded =
        pier::source::files::load_paths_capped(&args.paths, args.inputs.max_file_bytes).context("reading input")?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    let opts = args.translator.options()?;
    let mut loaded = loaded;
    if opts.resolution.mode == pier::options::ResolveMode::Pier {
        current_thread()?
            .block_on(pier::resolve::resolve_once(&mut loaded.model, &opts))
            .map_err(anyhow::Error::msg)?;
    }
    let read = started.elapsed();
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    // The engine takes the model rather than a copy (nothing here reads it again) and keeps no
    // dependency index (no update follows), and the document is rendered from what it packed, as
    // `pier serve` would send it.
    let engine = pier::translate::engine::Engine::once(loaded.model, opts);
    let translated = started.elapsed();
    let doc = engine.document(args.gateway.as_deref(), &warnings)?;
    let selected = started.elapsed();
    write_translation(&doc, args.output)?;
    drop(doc);
    // Freeing a large configuration object by object takes longer than the process's exit; a one-shot
    // command does not need to.
    #[expect(clippy::mem_forget, reason = "the process exits next; nothing else is held")]
    std::mem::forget(engine);
    tracing::debug!(
        read_ms = read.as_millis(),
        translate_ms = (translated - read).as_millis(),
        select_ms = (selected - translated).as_millis(),
        write_ms = (started.elapsed() - selected).as_millis(),
        "pier translate phases"
    );
    Ok(())
}

fn serve(args: ServeArgs) -> Result<()> {
    let kubernetes = args.kube.kubernetes.then(|| {
        let identity = args
            .kube
            .lease_identity
            .clone()
            .or_else(|| std::env::var("POD_NAME").ok())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| format!("pier-{}", std::process::id()));
        let mut k = pier::runtime::KubeSettings::new(
            args.kube.watch_namespaces.clone(),
            args.kube.lease_name.clone(),
            args.kube.lease_namespace.clone(),
            identity,
        );
        k.status_writes_per_second = args.kube.status_writes_per_second;
        k
    });
    let containment = args.containment();
    // clap counts PIER_KUBERNETES=false as "present", so the either-or is checked here as well.
    let config_dir = match (&kubernetes, args.config_dir) {
        (None, None) => bail!("--config-dir (PIER_CONFIG_DIR) is required unless --kubernetes is set"),
        (_, dir) => dir.unwrap_or_default(),
    };
    let config = pier::runtime::ServeConfig {
        config_dir,
        kubernetes,
        xds_address: args.xds_address,
        admin_address: args.admin_address,
        address_file: args.address_file,
        debounce: pier::source::Debounce {
            quiet: std::time::Duration::from_millis(args.debounce_quiet_ms),
            max_delay: std::time::Duration::from_millis(args.debounce_max_ms),
        },
        options: args.translator.options()?,
        xds_security: args.xds.security(),
        xds_limits: args.xds.limits(),
        max_file_bytes: args.inputs.max_file_bytes,
        admin_access: admin_access(&args.admin)?,
        containment,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // A translation runs on a blocking thread, and the pages it freed stay with that thread's
        // allocator heap until the thread next allocates or exits; tokio keeps an idle one for 10 s.
        // At 10,000 routes that held 12 MiB past the first read (docs/performance.md).
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()
        .context("starting the async runtime")?;
    rt.block_on(pier::runtime::run(config))
}

fn certs(args: CertsArgs) -> Result<()> {
    let written = pier::certs::issue(&args.spec())?;
    let mut out = std::io::stdout().lock();
    let ca = if written.ca_created { "created" } else { "reused" };
    writeln!(out, "CA {ca}: {}", args.out.join("ca.crt").display())?;
    for dir in &written.dirs {
        writeln!(out, "wrote {}/{{tls.crt,tls.key,ca.crt}}", dir.display())?;
    }
    Ok(())
}

fn admin_access(args: &AdminArgs) -> Result<pier::admin::Access> {
    let token = match &args.admin_token_file {
        Some(path) => Some(pier::admin::access::read_token_file(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    Ok(pier::admin::Access {
        allowed_hosts: args.admin_allowed_hosts.clone(),
        token,
        allow_unauthenticated: args.admin_allow_unauthenticated,
    })
}

fn bootstrap(args: BootstrapArgs) -> Result<()> {
    if args.gateway.split('/').filter(|s| !s.is_empty()).count() != 2 {
        bail!("--gateway must be NAMESPACE/NAME, got {:?}", args.gateway);
    }
    let xds = args
        .xds_address
        .iter()
        .map(|a| host_port(a))
        .collect::<Result<Vec<_>>>()?;
    let spec = pier::envoy::ads_bootstrap::BootstrapSpec {
        gateway: args.gateway,
        xds,
        delta: args.delta,
        admin_port: args.admin_port,
        node_id: args.node_id,
        dns_resolver: args.dns_resolver.map(|a| (a.ip(), a.port())),
        tls: args.tls.tls(),
    };
    let (doc, output) = if args.grpc {
        let trust = match &args.tls.trust_dir {
            Some(dir) => pier::cli::trust_instances(dir)?,
            None => Vec::new(),
        };
        (pier::envoy::ads_bootstrap::grpc_bootstrap(&spec, &trust), Output::Json)
    } else {
        (pier::envoy::ads_bootstrap::bootstrap(&spec), args.output)
    };
    match &args.out {
        Some(path) => write_file(path, &render(&doc, output)?),
        None => print(&doc, output),
    }
}

/// `HOST:PORT` (`[v6]:PORT` too) of an `--xds-address`.
fn host_port(address: &str) -> Result<(String, u16)> {
    let (host, port) = address
        .rsplit_once(':')
        .with_context(|| format!("--xds-address must be HOST:PORT, got {address:?}"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("--xds-address port {port:?} is not a port number"))?;
    Ok((host.trim_start_matches('[').trim_end_matches(']').to_string(), port))
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`, so a reader (Envoy
/// starting from it) sees the old file or the new one, never a part.
fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(feature = "demo")]
fn demo(args: DemoArgs) -> Result<()> {
    let config = pier::demo::DemoConfig {
        examples: args.examples,
        http_port: args.listen_port_http,
        https_port: args.listen_port_https,
        delta: args.delta,
        once: args.once,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(pier::demo::run(config))
}

#[cfg(feature = "demo")]
fn upstream(args: &UpstreamArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(pier::demo::standalone::run_upstream(args.config()))
}

/// A document as JSON or YAML.
fn render(doc: &serde_json::Value, output: Output) -> Result<String> {
    Ok(match output {
        Output::Json => serde_json::to_string_pretty(doc)? + "\n",
        Output::Yaml => pier::model::yaml::to_yaml(doc)?,
    })
}

/// Writes a document to stdout as JSON or YAML.
fn print(doc: &serde_json::Value, output: Output) -> Result<()> {
    let text = render(doc, output)?;
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing output")
}

/// Writes `pier translate`'s document to stdout: as YAML, its long lists rendered on every core
/// (`Document::write_yaml`); as JSON, as [`write_document`] writes any document.
fn write_translation(doc: &pier::translate::Document<'_>, output: Output) -> Result<()> {
    if !matches!(output, Output::Yaml) {
        return write_document(doc, output);
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    doc.write_yaml(&mut pier::model::yaml::RootMap::new(&mut out))
        .context("writing output")?;
    out.flush().context("writing output")
}

/// Writes a document to stdout as JSON or YAML as it is serialized, so a large one is never held
/// whole as text; the bytes are those [`render`] would give.
fn write_document(doc: &impl serde::Serialize, output: Output) -> Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match output {
        Output::Json => {
            serde_json::to_writer_pretty(&mut out, doc).context("writing output")?;
            out.write_all(b"\n").context("writing output")?;
        }
        Output::Yaml => pier::model::yaml::to_yaml_writer(&mut out, doc).context("writing output")?,
    }
    out.flush().context("writing output")
}
