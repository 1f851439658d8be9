//! Rule `timeouts` and `retry` → `ir::Timeouts` / `ir::Retry`.
//!
//! Durations are GEP-2257 strings (`gateway::duration`). `0s` disables a timeout. The Gateway API
//! requires `backendRequest` to be no more than `request` (the request covers every try); a rule that
//! breaks it is refused rather than served with a per-try timeout that could never fire. A disabled
//! (`0s`) timeout is unbounded, so a disabled `backendRequest` under a finite `request` is allowed (the
//! request timeout still bounds it), and any `backendRequest` under a disabled `request` is too.

use crate::gateway::spec::Timeouts;
use crate::model::HttpRouteRetry as HttpRouteRulesRetry;

use crate::gateway::duration::duration_ms;
use crate::ir;

/// The rule's timeouts, validated.
pub fn timeouts(t: Option<&Timeouts>) -> Result<ir::Timeouts, String> {
    let Some(t) = t else {
        return Ok(ir::Timeouts::default());
    };
    let parse = |field: &str, v: Option<&String>| {
        v.map(|v| duration_ms(v).map_err(|e| format!("timeouts.{field}: {e}")))
            .transpose()
    };
    let out = ir::Timeouts {
        request_ms: parse("request", t.request.as_ref())?,
        backend_request_ms: parse("backendRequest", t.backend_request.as_ref())?,
    };
    if let (Some(request), Some(backend)) = (out.request_ms, out.backend_request_ms)
        && request > 0
        && backend > request
    {
        return Err(format!(
            "timeouts.backendRequest ({}) must not exceed timeouts.request ({})",
            t.backend_request.as_deref().unwrap_or_default(),
            t.request.as_deref().unwrap_or_default(),
        ));
    }
    Ok(out)
}

/// The rule's retry policy, validated: codes 400–599 (the CRD's range), attempts ≥ 0.
pub fn retry(r: Option<&HttpRouteRulesRetry>) -> Result<Option<ir::Retry>, String> {
    let Some(r) = r else { return Ok(None) };
    // Gateway API v1.7 (#5167, retry in the Standard channel) defaults `attempts` to 1, said here
    // rather than left to Envoy's default, which happens to agree.
    let attempts = match r.attempts {
        None => 1,
        Some(a) => u32::try_from(a).map_err(|_| format!("retry.attempts {a} must be 0 or more"))?,
    };
    let attempts = Some(attempts);
    let mut codes: Vec<u16> = Vec::new();
    for &c in r.codes.iter().flatten() {
        let code = u16::try_from(c)
            .ok()
            .filter(|c| (400..=599).contains(c))
            .ok_or_else(|| format!("retry.codes: {c} is not an HTTP status code from 400 to 599"))?;
        if !codes.contains(&code) {
            codes.push(code);
        }
    }
    let backoff_ms = r
        .backoff
        .as_deref()
        .map(|b| duration_ms(b).map_err(|e| format!("retry.backoff: {e}")))
        .transpose()?;
    Ok(Some(ir::Retry {
        attempts,
        codes,
        backoff_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(request: Option<&str>, backend: Option<&str>) -> Result<ir::Timeouts, String> {
        timeouts(Some(&Timeouts {
            request: request.map(String::from),
            backend_request: backend.map(String::from),
        }))
    }

    #[test]
    fn backend_request_must_fit_in_request() {
        let err = t(Some("1s"), Some("2s")).unwrap_err();
        assert!(err.contains("must not exceed"), "{err}");
        assert_eq!(
            t(Some("1s"), Some("1000ms")),
            Ok(ir::Timeouts {
                request_ms: Some(1000),
                backend_request_ms: Some(1000)
            })
        );
        assert!(t(Some("0s"), Some("1h")).is_ok(), "request disabled: unbounded");
        assert!(
            t(Some("1s"), Some("0s")).is_ok(),
            "backendRequest disabled: bounded by request"
        );
        assert!(t(Some("1x"), None).unwrap_err().starts_with("timeouts.request"));
    }

    #[test]
    fn retries() {
        let r: HttpRouteRulesRetry =
            serde_saphyr::from_str("{attempts: 3, codes: [500, 503, 500], backoff: 100ms}").unwrap();
        assert_eq!(
            retry(Some(&r)),
            Ok(Some(ir::Retry {
                attempts: Some(3),
                codes: vec![500, 503],
                backoff_ms: Some(100)
            }))
        );
        for (yaml, why) in [
            ("{codes: [200]}", "retry.codes"),
            ("{attempts: -1}", "retry.attempts"),
            ("{backoff: 1}", "retry.backoff"),
        ] {
            let r: HttpRouteRulesRetry = serde_saphyr::from_str(yaml).unwrap();
            assert!(retry(Some(&r)).unwrap_err().starts_with(why), "{yaml}");
        }
    }
}
