//! The admin HTTP API (loopback by default): `/healthz`, `/readyz`, `/metrics` (Prometheus text),
//! `/debug/config_dump?gateway=NS/NAME` (what pier serves, private keys redacted), `/debug/clients`
//! (every connected proxy) and `/debug/status` (the status pier computed for every object, plus the
//! current source error). Read-only: nothing here changes what is served.
//!
//! Depends on the core and the xDS cache, never on `runtime`: the runtime fills the [`View`] this module
//! serves, so the dependency runs one way.
//!
//! Access ([`access`]). Every request's `Host` must be an IP literal, `localhost`, or a name the operator
//! listed (`--admin-allowed-host`); anything else gets 403. A web page can make a browser send requests
//! to `127.0.0.1` under its own name by DNS rebinding, and the browser then lets the page read the
//! answers; refusing foreign names closes that, while probes and scrapers that address the Pod by IP are
//! unaffected. `/metrics` and `/debug/*` show the whole configuration (hostnames, backends, NACK
//! details); with `--admin-token-file` they need `Authorization: Bearer <token>`. `/healthz` and
//! `/readyz` never do: kubelet probes carry no credentials, and they tell no more than "up" and the
//! source error. pier refuses to start with the admin address beyond loopback and no token, unless
//! `--admin-allow-unauthenticated` says so, which it logs as a warning at every start. `deploy/` binds
//! 0.0.0.0 for its probes and sets that flag, with a comment on requiring a token from a Secret
//! instead; its probes keep working either way, since they address the Pod IP and need no token.
//!
//! Redaction ([`redact`]): besides the structural redaction of Envoy's `private_key` fields, every string
//! a `/debug/*` answer (and `/readyz`, which repeats the source error) carries is searched for PEM
//! private-key blocks, which are replaced wherever they are: a key pasted into a certificate field, or
//! quoted by a parse error, is not shown.

pub mod access;
mod redact;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::gateway::status::ObjectStatus;
use crate::snapshot::GatewayOut;
use crate::xds::cache::SnapshotCache;
use crate::xds::clients::Clients;
pub use access::Access;

#[derive(Clone)]
pub struct AdminState {
    pub cache: Arc<SnapshotCache>,
    pub clients: Arc<Clients>,
    pub view: SharedView,
    pub registry: Arc<Registry>,
}

/// What the admin API shows about the pipeline (everything but the xDS state, which lives in the
/// cache and the client registry). The runtime writes it; this module only reads it.
#[derive(Debug, Default)]
pub struct View {
    /// The first complete read has been translated and published.
    pub ready: bool,
    /// The source's current error (the last good model is still served).
    pub source_error: Option<String>,
    pub source_warnings: Vec<String>,
    /// Gateways whose newest translation failed `envoy::check` (they keep their last good config).
    pub check_errors: BTreeMap<String, Vec<String>>,
    /// Kinds the source cannot read now (forbidden, failing, not listed yet), with why.
    pub unavailable_kinds: Vec<(String, String)>,
    pub statuses: crate::snapshot::StatusSet,
    /// What is published, per Gateway.
    pub published: BTreeMap<String, GatewayOut>,
    pub generation: u64,
    /// Objects held back because a proxy rejected them (`runtime::contain`), with Envoy's message.
    pub quarantined: Vec<serde_json::Value>,
    /// The newest rejection no change explained.
    pub unexplained_rejection: Option<serde_json::Value>,
}

pub type SharedView = Arc<RwLock<View>>;

pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AdminState,
    access: Access,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state, access);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

fn router(state: AdminState, access: Access) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/debug/config_dump", get(config_dump))
        .route("/debug/clients", get(clients))
        .route("/debug/status", get(status))
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(Arc::new(access), access::guard))
}

/// 200 once the first complete read is published. A later failed read keeps pier ready (the last good
/// configuration is served) and is named in the body.
async fn readyz(State(s): State<AdminState>) -> Response {
    let v = s.view.read().expect("view lock");
    let body = json!({
        "ready": v.ready,
        "generation": v.generation,
        "source_error": v.source_error,
        "check_errors": v.check_errors,
        "unavailable_kinds": kinds_json(&v.unavailable_kinds),
    });
    let code = if v.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, redact::json(body)).into_response()
}

/// `[{kind, reason}]`: what `/readyz` and `/debug/status` say of the kinds the source cannot read.
fn kinds_json(kinds: &[(String, String)]) -> Value {
    Value::Array(
        kinds
            .iter()
            .map(|(kind, reason)| json!({"kind": kind, "reason": reason}))
            .collect(),
    )
}

async fn metrics(State(s): State<AdminState>) -> Response {
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &s.registry) {
        return (StatusCode::INTERNAL_SERVER_ERROR, format!("encoding metrics: {e}\n")).into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        redact::text(&text).into_owned(),
    )
        .into_response()
}

#[derive(Deserialize)]
struct DumpQuery {
    gateway: Option<String>,
}

async fn config_dump(State(s): State<AdminState>, Query(q): Query<DumpQuery>) -> Response {
    let v = s.view.read().expect("view lock");
    let dump = |out: &GatewayOut| {
        let mut j = crate::envoy::render::resources_to_json(&crate::snapshot::decode(out));
        if let Some(grpc) = out.grpc.as_deref() {
            j["proxyless"] = crate::envoy::render::resources_to_json(&crate::snapshot::decode(grpc));
        }
        crate::envoy::render::redact_private_keys(&mut j);
        j
    };
    match q.gateway {
        Some(g) => match v.published.get(&g) {
            Some(res) => {
                let mut j = dump(res);
                let versions: serde_json::Map<String, Value> = s
                    .cache
                    .versions(&g)
                    .into_iter()
                    .map(|(t, v)| (t.as_str().to_string(), Value::String(v)))
                    .collect();
                j["versions"] = Value::Object(versions);
                redact::json(j).into_response()
            }
            None => {
                let known: Vec<&String> = v.published.keys().collect();
                (
                    StatusCode::NOT_FOUND,
                    redact::json(json!({ "error": format!("no published Gateway {g:?}"), "gateways": known })),
                )
                    .into_response()
            }
        },
        None => redact::json(Value::Object(
            v.published.iter().map(|(g, res)| (g.clone(), dump(res))).collect(),
        ))
        .into_response(),
    }
}

async fn clients(State(s): State<AdminState>) -> Response {
    redact::json(s.clients.to_json()).into_response()
}

async fn status(State(s): State<AdminState>) -> Response {
    let v = s.view.read().expect("view lock");
    redact::json(json!({
        "generation": v.generation,
        "source_error": v.source_error,
        "source_warnings": v.source_warnings,
        "check_errors": v.check_errors,
        "unavailable_kinds": kinds_json(&v.unavailable_kinds),
        "quarantined": v.quarantined,
        "unexplained_rejection": v.unexplained_rejection,
        "objects": v.statuses.values().map(AsRef::as_ref).collect::<Vec<&ObjectStatus>>(),
    }))
    .into_response()
}
