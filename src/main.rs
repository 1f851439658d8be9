//! The `pier` binary: parses the command line and hands off to the library. No logic lives here.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;
use pier::cli::{Cli, Command, Output, TranslateArgs};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("PIER_LOG").unwrap_or_else(|_| "info".into()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Translate(args) => translate(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pier: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn translate(args: TranslateArgs) -> Result<()> {
    let loaded = pier::source::files::load_paths(&args.paths).context("reading input")?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    let opts = args.translator.options();
    let translation = pier::translate(&loaded.model, &opts);
    if let Some(gw) = &args.gateway
        && !translation.gateways.contains_key(gw)
    {
        let known: Vec<&String> = translation.gateways.keys().collect();
        bail!("no pier Gateway {gw:?} in the input (pier Gateways: {known:?})");
    }
    let doc = translation.document(args.gateway.as_deref()).expect("gateway checked above");
    let text = match args.output {
        Output::Json => serde_json::to_string_pretty(&doc)? + "\n",
        Output::Yaml => serde_yaml::to_string(&doc)?,
    };
    std::io::stdout().lock().write_all(text.as_bytes()).context("writing output")?;
    Ok(())
}
