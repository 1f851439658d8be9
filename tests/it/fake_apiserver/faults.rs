//! Faults on demand, as a sick API server shows them: 429 with `Retry-After` (priority and fairness
//! shedding load), 500s, slow lists, and (in [`FakeApiServer`](super::FakeApiServer)) cut watches, 410
//! Gone in the middle of a watch and the whole server down.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// What requests get instead of an answer, for a while.
#[derive(Debug, Clone)]
pub struct Fault {
    pub code: u16,
    /// Seconds, for 429.
    pub retry_after: Option<u32>,
    pub until: Instant,
    /// Only requests for these plurals (empty: every request).
    pub only: BTreeSet<String>,
    pub scope: Scope,
}

/// Which requests a fault answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    All,
    /// Lists (GETs of a collection that are not watches).
    Lists,
    /// Requests naming one object: gets and status writes.
    Named,
}

#[derive(Debug, Default)]
pub struct Faults {
    pub fault: Option<Fault>,
    /// Every list answers this much later.
    pub slow_lists: Duration,
    /// Requests a fault answered.
    pub answered: usize,
}

impl Faults {
    /// The fault's answer to a request for `plural`, while it lasts.
    pub fn answer(&mut self, plural: &str, list: bool, named: bool) -> Option<Response> {
        let f = self.fault.as_ref()?;
        if Instant::now() >= f.until {
            self.fault = None;
            return None;
        }
        let in_scope = match f.scope {
            Scope::All => true,
            Scope::Lists => list,
            Scope::Named => named,
        };
        if (!f.only.is_empty() && !f.only.contains(plural)) || !in_scope {
            return None;
        }
        self.answered += 1;
        let (reason, message) = match f.code {
            429 => (
                "TooManyRequests",
                "the server has received too many requests; please try again later",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            _ => (
                "InternalError",
                "an error on the server (\"etcdserver: request timed out\") has prevented the request from succeeding",
            ),
        };
        let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": f.code});
        let mut response = match f.retry_after {
            Some(secs) => {
                body["details"] = json!({"retryAfterSeconds": secs});
                let mut r = (StatusCode::from_u16(f.code).unwrap(), axum::Json(body)).into_response();
                r.headers_mut().insert("retry-after", secs.into());
                r
            }
            None => (StatusCode::from_u16(f.code).unwrap(), axum::Json(body)).into_response(),
        };
        response.headers_mut().insert("x-fault", "1".parse().unwrap());
        Some(response)
    }
}

impl super::FakeApiServer {
    /// For `for_`, requests (for `only` plurals; empty: all) get `code` instead of an answer; a 429
    /// carries `Retry-After: retry_after`.
    pub fn fail(&self, code: u16, retry_after: Option<u32>, for_: Duration, only: &[&str], scope: Scope) {
        self.shared.inner.lock().unwrap().faults.fault = Some(Fault {
            code,
            retry_after,
            until: Instant::now() + for_,
            only: only.iter().map(|s| s.to_string()).collect(),
            scope,
        });
    }

    /// How many requests a fault answered so far.
    pub fn faulted(&self) -> usize {
        self.shared.inner.lock().unwrap().faults.answered
    }

    /// Every list answers `delay` later.
    pub fn slow_lists(&self, delay: Duration) {
        self.shared.inner.lock().unwrap().faults.slow_lists = delay;
    }

    /// The whole server goes away: open watches end, connections close, and new ones are refused
    /// until [`come_back`](Self::come_back).
    pub async fn go_down(&mut self) {
        self.drop_watches();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }

    /// The server is back on the same address, with the same objects.
    pub async fn come_back(&mut self) {
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .expect("the address is free again");
        let (stop, task) = super::serve(listener, self.shared.clone());
        self.stop = Some(stop);
        self.task = Some(task);
    }
}
