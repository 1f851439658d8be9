//! pier's own resolver, for `--resolve-hostnames pier`: looking names up ([`Lookup`], backed by
//! `hickory-resolver` in [`hickory`]) and what pier knows about each name over time ([`cache`]).
//!
//! Why pier resolves at all: with Envoy resolving (STRICT_DNS), the guardrails can only judge the *name*;
//! whatever its DNS answers, Envoy connects to — a public name re-pointed at 169.254.169.254 or an
//! operator-denied range (DNS rebinding) reaches it. Here the answers become data that the translator
//! judges with the one address policy before any of them reaches Envoy (`gateway::backends::resolved`).
//!
//! Names are absolute: every name is asked with a trailing dot, with no search list, `ndots` 0 and
//! no hosts file, so no resolver configuration can complete an accepted name into an internal one —
//! the same rule pier sets on Envoy with `no_default_search_domain`.
//!
//! Must not touch: the model or the translator (the stage in `runtime::resolve` carries answers into
//! the model), and the address policy (answers are judged in the translator, never here).

pub mod cache;
pub mod hickory;

use std::net::IpAddr;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;

use crate::model::{Model, Resolution};
use crate::options::Options;

/// What one lookup of a name gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The name's addresses (empty: it has none of the families asked for — NXDOMAIN or NODATA, an
    /// answer like any other) and how long the answer may be used.
    Answer { addresses: Vec<IpAddr>, ttl: Duration },
    /// No answer: a timeout, SERVFAIL, a refused or unreachable server.
    Failed(String),
}

/// Looks names up. A trait so the stage's clock and cache can be tested without a network.
pub trait Lookup: Send + Sync + 'static {
    /// Looks up `name` (lower case, no trailing dot); never takes longer than the implementation's own
    /// bound on one lookup.
    fn lookup(&self, name: &str) -> BoxFuture<'_, Outcome>;
}

/// Looks up once, concurrently, every hostname `model`'s Backends use and puts the answers in the model
/// (`pier translate --resolve-hostnames pier`: a one-shot picture of what `pier serve` would serve now).
/// Lookups that fail become `Failed`; there is no earlier answer to keep.
pub async fn resolve_once(model: &mut Model, opts: &Options) -> Result<(), hickory::ResolverError> {
    let resolver = hickory::build(&opts.dns, opts.resolution.min_ttl)?;
    let names = crate::gateway::backends::resolved::hostnames(model, opts);
    let resolver = &resolver;
    let answers: Vec<(String, Outcome)> = futures::stream::iter(names)
        .map(|name| async move {
            let outcome = resolver.lookup(&name).await;
            (name, outcome)
        })
        .buffer_unordered(16)
        .collect()
        .await;
    for (name, outcome) in answers {
        let r = match outcome {
            Outcome::Answer { addresses, .. } => Resolution::Answered { addresses },
            Outcome::Failed(error) => Resolution::Failed { error },
        };
        model.set_resolution(&name, std::sync::Arc::new(r));
    }
    Ok(())
}
