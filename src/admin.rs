//! The admin HTTP API (loopback by default): `/healthz`, `/readyz`, `/metrics` (Prometheus text),
//! `/debug/config_dump?gateway=NS/NAME` (what pier serves, private keys redacted), `/debug/clients`
//! (every connected proxy) and `/debug/status` (the status pier computed for every object, plus the
//! current source error). Read-only: nothing here changes what is served.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::runtime::SharedView;
use crate::xds::cache::SnapshotCache;
use crate::xds::clients::Clients;

#[derive(Clone)]
pub struct AdminState {
    pub cache: Arc<SnapshotCache>,
    pub clients: Arc<Clients>,
    pub view: SharedView,
    pub registry: Arc<Registry>,
}

/// Metrics of the source → translate → publish pipeline.
#[derive(Clone)]
pub struct PipelineMetrics {
    translations: Counter,
    translation_seconds: Histogram,
    source_error: Gauge,
}

impl PipelineMetrics {
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self {
            translations: Counter::default(),
            translation_seconds: Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]),
            source_error: Gauge::default(),
        };
        registry.register("pier_translations", "Translations run", m.translations.clone());
        registry.register(
            "pier_translation_seconds",
            "Time to translate the model",
            m.translation_seconds.clone(),
        );
        registry.register(
            "pier_source_error",
            "1 while the newest read of the config directory failed (the last good configuration is served)",
            m.source_error.clone(),
        );
        m
    }
    pub fn observe_translation(&self, took: Duration) {
        self.translations.inc();
        self.translation_seconds.observe(took.as_secs_f64());
    }
    pub fn set_source_error(&self, failing: bool) {
        self.source_error.set(i64::from(failing));
    }
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AdminState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/debug/config_dump", get(config_dump))
        .route("/debug/clients", get(clients))
        .route("/debug/status", get(status))
        .with_state(state);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
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
    });
    let code = if v.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body)).into_response()
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
        text,
    )
        .into_response()
}

#[derive(Deserialize)]
struct DumpQuery {
    gateway: Option<String>,
}

async fn config_dump(State(s): State<AdminState>, Query(q): Query<DumpQuery>) -> Response {
    let v = s.view.read().expect("view lock");
    let dump = |res: &crate::envoy::Resources| {
        let mut j = crate::envoy::render::resources_to_json(res);
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
                Json(j).into_response()
            }
            None => {
                let known: Vec<&String> = v.published.keys().collect();
                (
                    StatusCode::NOT_FOUND,
                    Json(json!({ "error": format!("no published Gateway {g:?}"), "gateways": known })),
                )
                    .into_response()
            }
        },
        None => Json(Value::Object(
            v.published.iter().map(|(g, res)| (g.clone(), dump(res))).collect(),
        ))
        .into_response(),
    }
}

async fn clients(State(s): State<AdminState>) -> Response {
    Json(s.clients.to_json()).into_response()
}

async fn status(State(s): State<AdminState>) -> Response {
    let v = s.view.read().expect("view lock");
    Json(json!({
        "generation": v.generation,
        "source_error": v.source_error,
        "source_warnings": v.source_warnings,
        "check_errors": v.check_errors,
        "objects": v.statuses,
    }))
    .into_response()
}
