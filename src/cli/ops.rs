//! Options of the operator commands (`pier proxy-status`, `pier diff`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Where a running pier's admin API is, and its token.
#[derive(Debug, Clone, Args)]
pub struct AdminTarget {
    /// Address of the running pier's admin API (`pier serve --admin-address`).
    #[arg(
        long = "admin",
        env = "PIER_ADMIN_ADDRESS",
        default_value = "127.0.0.1:19000",
        value_name = "ADDR"
    )]
    pub address: std::net::SocketAddr,
    /// File holding the admin API's bearer token (`pier serve --admin-token-file`).
    #[arg(long, env = "PIER_ADMIN_TOKEN_FILE", value_name = "PATH")]
    pub admin_token_file: Option<PathBuf>,
}

/// How the operator commands print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// For machines: the admin API's document as it came.
    Json,
}

/// `pier proxy-status`.
#[derive(Debug, Args)]
pub struct ProxyStatusArgs {
    #[command(flatten)]
    pub admin: AdminTarget,
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: Format,
}

/// `pier diff OLD NEW`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The configuration before: a directory or file of manifests, or git:REF[:PATH] (PATH at commit REF
    /// of the current repository; without PATH, NEW's path).
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The configuration after, in the same forms.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Only this Gateway (NAMESPACE/NAME); statuses are always compared whole.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub gateway: Option<String>,
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: Format,
    #[command(flatten)]
    pub inputs: super::InputArgs,
    #[command(flatten)]
    pub translator: super::TranslatorArgs,
}
