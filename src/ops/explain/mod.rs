//! `pier explain KIND/NAMESPACE/NAME [PATH...]`: for people, the chain from a Gateway listener through
//! route rules and backendRefs to the Envoy cluster, its endpoints and its upstream TLS, with every
//! status condition met on the way and what to change for each that is a problem.
//!
//! One explainer, two sources ([`sources`]): offline it translates the files given, as `pier
//! translate` does; online it asks a running pier's admin API. Either way it works on the same two JSON
//! documents — each Gateway's resources as `/debug/config_dump?gateway=` serves them and the statuses
//! as `/debug/status` serves them — so the modes share every line after the source, and a test of one
//! is a test of the other.
//!
//! It reads pier's outputs only, never the input objects: what it shows is what the proxies get and
//! what the status says, not what the manifests ask for. Where those outputs do not record a link (which
//! rule held a backendRef that did not resolve, which BackendTLSPolicy a cluster's TLS came from), the
//! explanation says what it inferred in its notes.

mod build;
mod clusters;
mod entries;
mod envoy;
pub mod model;
mod proxyless;
mod related;
mod render;
pub mod sources;
mod status;
mod subject;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

pub use model::Explanation;
pub use subject::{Kind, Subject};

/// The documents an explanation is built from.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Status objects: `{apiVersion, kind, metadata: {namespace, name}, status}`.
    pub objects: Vec<Value>,
    /// Each published Gateway's resources (`clusters`, `endpoints`, `listeners`, `routes`, `secrets`).
    pub gateways: BTreeMap<String, Value>,
    /// What the source skipped or failed to read.
    pub notes: Vec<String>,
    /// What the running pier says about a Gateway beyond statuses: a failed check, a rejection by its
    /// proxies (online only).
    pub gateway_notes: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error(
        "{0:?} is not KIND/NAMESPACE/NAME with KIND one of httproute, grpcroute, backend, xbackend, service, gateway"
    )]
    BadSubject(String),
    #[error("{}", not_found(kind, key, known))]
    NotFound {
        kind: String,
        key: String,
        /// Objects of that kind pier knows, nearest name first.
        known: Vec<String>,
    },
    #[error(
        "both a Backend {0} of gateway.networking.k8s.io and one of gateway.envoyproxy.io exist; say which: backend.gateway.networking.k8s.io/{0} or backend.gateway.envoyproxy.io/{0}"
    )]
    Ambiguous(String),
    #[error("no pier Gateway {gateway:?} (pier Gateways: {known:?})")]
    NoSuchGateway { gateway: String, known: Vec<String> },
    // The causes below are in the message, not `source()`, so the message is complete on its own and
    // `{:#}` chain printers do not repeat it.
    #[error("{0}")]
    Admin(crate::ops::admin_client::AdminError),
    #[error("reading input: {0:#}")]
    Input(crate::source::files::LoadError),
    #[error("looking hostnames up: {0}")]
    Resolve(crate::resolve::hickory::ResolverError),
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// `?` on each cause, without making it the error's `source()`.
macro_rules! explain_from {
    ($($variant:ident($t:ty)),*) => {$(
        impl From<$t> for ExplainError {
            fn from(e: $t) -> Self {
                ExplainError::$variant(e)
            }
        }
    )*};
}
explain_from!(
    Admin(crate::ops::admin_client::AdminError),
    Input(crate::source::files::LoadError),
    Resolve(crate::resolve::hickory::ResolverError),
    Runtime(std::io::Error)
);

/// How many known names a not-found error lists.
const KNOWN_SHOWN: usize = 10;

fn not_found(kind: &str, key: &str, known: &[String]) -> String {
    let why = match kind {
        "HTTPRoute" | "GRPCRoute" => "none of its parentRefs is a pier Gateway",
        "Gateway" => "its GatewayClass is not pier's",
        _ => "no route of a pier Gateway references it",
    };
    let mut s = format!("pier has nothing on {kind} {key}: it is not in the input, or {why}");
    match known {
        [] => s.push_str(&format!(" (pier knows no {kind})")),
        [nearest, ..] => {
            let shown = &known[..known.len().min(KNOWN_SHOWN)];
            let more = known.len() - shown.len();
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            s.push_str(&format!(
                "; did you mean {nearest}? {kind} pier knows: {}{more}",
                shown.join(", ")
            ));
        }
    }
    s
}

/// Explains `subject` from `inputs`, on `gateway` only when given.
pub fn explain(inputs: &Inputs, subject: &Subject, gateway: Option<&str>) -> Result<Explanation, ExplainError> {
    if let Some(g) = gateway {
        let mut known: BTreeSet<String> = inputs.gateways.keys().cloned().collect();
        known.extend(
            inputs
                .objects
                .iter()
                .filter(|o| o["kind"].as_str() == Some("Gateway"))
                .map(|o| status::identity(o).2),
        );
        if !known.contains(g) {
            return Err(ExplainError::NoSuchGateway {
                gateway: g.to_string(),
                known: known.into_iter().collect(),
            });
        }
    }
    let target = subject::resolve(inputs, subject)?;
    Ok(build::build(&build::Ctx {
        inputs,
        target: &target,
        only: gateway,
    }))
}

/// The explanation as people read it.
pub fn text(e: &Explanation) -> String {
    render::text(e)
}

/// Where `pier explain` reads the world from.
#[derive(Debug, Clone)]
pub enum ReadFrom {
    /// The running pier's admin API.
    Online {
        admin: std::net::SocketAddr,
        token_file: Option<std::path::PathBuf>,
    },
    /// Manifests, translated here as `pier translate` would.
    Offline {
        paths: Vec<std::path::PathBuf>,
        max_file_bytes: usize,
        options: Box<crate::Options>,
    },
}

/// One `pier explain` question: `ops` takes its own request, not the command line's arguments.
#[derive(Debug, Clone)]
pub struct Request {
    /// `KIND/NAMESPACE/NAME`.
    pub object: String,
    pub gateway: Option<String>,
    pub from: ReadFrom,
    pub json: bool,
}

/// `pier explain` end to end: the source the request names, the explanation, rendered.
pub fn run(req: &Request) -> Result<String, ExplainError> {
    let subject: Subject = req.object.parse()?;
    let inputs = match &req.from {
        ReadFrom::Online { admin, token_file } => {
            let admin = crate::ops::admin_client::Admin::new(*admin, token_file.as_deref())?;
            sources::online(&admin, req.gateway.as_deref())
        }
        ReadFrom::Offline {
            paths,
            max_file_bytes,
            options,
        } => sources::offline(paths, *max_file_bytes, options),
    }?;
    let e = explain(&inputs, &subject, req.gateway.as_deref())?;
    Ok(if req.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&e).expect("explanations serialize")
        )
    } else {
        text(&e)
    })
}
