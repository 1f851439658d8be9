//! Options of the operator commands (`pier proxy-status`, `pier diff`, `pier explain`).

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
    /// For machines: the admin API's document as it came (`explain`: the explanation's model).
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

/// `pier explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// What to explain: httproute, grpcroute, backend, xbackend, service or gateway, then /NAMESPACE/NAME
    /// (`backend.gateway.envoyproxy.io/...` or `backend.gateway.networking.k8s.io/...` when both exist).
    #[arg(value_name = "KIND/NAMESPACE/NAME")]
    pub object: String,
    /// Manifests to translate, as `pier translate` reads them (files or directories). Without any, the
    /// running pier at --admin is asked instead, and the translator options below do not apply.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Only this Gateway (NAMESPACE/NAME).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub gateway: Option<String>,
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: Format,
    #[command(flatten)]
    pub admin: AdminTarget,
    #[command(flatten)]
    pub inputs: super::InputArgs,
    #[command(flatten)]
    pub translator: super::TranslatorArgs,
}

impl ExplainArgs {
    /// The question for `ops::explain`: the admin API when no paths are given, else the manifests.
    pub fn request(&self) -> Result<crate::ops::explain::Request, super::FlagError> {
        use crate::ops::explain::{ReadFrom, Request};
        let from = if self.paths.is_empty() {
            ReadFrom::Online {
                admin: self.admin.address,
                token_file: self.admin.admin_token_file.clone(),
            }
        } else {
            ReadFrom::Offline {
                paths: self.paths.clone(),
                max_file_bytes: self.inputs.max_file_bytes,
                options: Box::new(self.translator.options()?),
            }
        };
        Ok(Request {
            object: self.object.clone(),
            gateway: self.gateway.clone(),
            from,
            json: self.output == Format::Json,
        })
    }
}
