//! The operator's commands beside `serve`: `pier proxy-status` (what each connected proxy runs, from a
//! running pier's admin API), `pier diff` (what a change to the manifests does to each Gateway's
//! configuration and to every status) and `pier explain` (an object's path from listener to upstream
//! TLS, with its statuses). They read pier's outputs and never change what is served.

pub mod admin_client;
pub mod diff;
pub mod explain;
pub mod proxy_status;

/// The runtime the one-shot commands block on (an admin request, looking names up once).
pub fn current_thread() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}
