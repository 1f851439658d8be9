//! What a rule adds to a forwarding route besides filters on headers and paths: request mirrors
//! (`request_mirror_policies`), the request timeout (`timeout`), retries and the per-try timeout
//! (`retry_policy`), and the rule name (route metadata).
//!
//! Timeouts. `request` is the route `timeout` (`0s` disables it, which is Envoy's 0). `backendRequest`
//! is the retry policy's `per_try_timeout` (a policy with no retries when the rule has none: Envoy applies
//! the per-try timeout to the first try too); with no `request` the route timeout is then disabled, so
//! Envoy's default 15 s cannot cut a longer `backendRequest` or the tries of a retry policy — each try
//! is bounded, and so is their number. Neither set: Envoy's default (15 s).
//!
//! Retries. `retry_on` is always `connect-failure,refused-stream,reset` — a backend that cannot be
//! reached, refuses the stream, resets the connection or exceeds the per-try timeout is retried, which is
//! what the conformance tests `HTTPRouteRetryConnectionError` and `HTTPRouteRetryWithTimeouts` need —
//! plus `retriable-status-codes` with the rule's `codes`. `attempts` is `num_retries` (retries after the
//! first try, as Gateway API counts them; unset: 1, v1.7's default), `backoff` the `base_interval`
//! (Envoy backs off exponentially from there, capped at 10×, with jitter: allowed by GEP-1731).

use std::collections::HashMap;

use crate::envoy::pb::{core, protobuf, route, types};
use crate::envoy::{clusters::METADATA_NAMESPACE, duration_ms};
use crate::ir;

/// Retry triggers of every retry policy: failures to reach or hear from the backend.
const RETRY_ON_FAILURE: &str = "connect-failure,refused-stream,reset";
const RETRY_ON_CODES: &str = "retriable-status-codes";

/// Sets mirrors, timeouts and retries on a forwarding route action.
pub(super) fn apply(action: &mut route::RouteAction, f: &ir::RouteFilters) {
    action.request_mirror_policies = f.mirrors.iter().map(mirror).collect();
    let t = f.timeouts;
    let per_try = t.backend_request_ms.filter(|ms| *ms > 0);
    action.timeout = match (t.request_ms, t.backend_request_ms) {
        (Some(ms), _) => Some(duration_ms(ms)),
        (None, Some(_)) => Some(duration_ms(0)),
        (None, None) => None,
    };
    if f.retry.is_some() || per_try.is_some() {
        action.retry_policy = Some(retry_policy(f.retry.as_ref(), per_try));
    }
}

fn mirror(m: &ir::Mirror) -> route::route_action::RequestMirrorPolicy {
    route::route_action::RequestMirrorPolicy {
        cluster: m.cluster.to_string(),
        runtime_fraction: m.fraction.map(|f| core::RuntimeFractionalPercent {
            default_value: Some(fractional_percent(f)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Envoy's denominators are 100, 10 000 and 1 000 000: the smallest that holds the fraction exactly,
/// else per million, rounded (`1/3` → 333 333 per million).
fn fractional_percent(f: ir::Fraction) -> types::FractionalPercent {
    use types::fractional_percent::DenominatorType;
    let (n, d) = (u64::from(f.numerator), u64::from(f.denominator.max(1)));
    for (scale, kind) in [
        (100, DenominatorType::Hundred),
        (10_000, DenominatorType::TenThousand),
        (1_000_000, DenominatorType::Million),
    ] {
        if scale % d == 0 {
            return types::FractionalPercent {
                numerator: (n * (scale / d)) as u32,
                denominator: kind as i32,
            };
        }
    }
    types::FractionalPercent {
        numerator: ((n * 1_000_000 + d / 2) / d) as u32,
        denominator: DenominatorType::Million as i32,
    }
}

fn retry_policy(retry: Option<&ir::Retry>, per_try_ms: Option<u64>) -> route::RetryPolicy {
    let mut p = route::RetryPolicy {
        per_try_timeout: per_try_ms.map(duration_ms),
        ..Default::default()
    };
    let Some(r) = retry else {
        // Only a per-try timeout: no retries, the timeout bounds the one try.
        p.num_retries = Some(protobuf::UInt32Value { value: 0 });
        return p;
    };
    p.retry_on = if r.codes.is_empty() {
        RETRY_ON_FAILURE.to_string()
    } else {
        format!("{RETRY_ON_FAILURE},{RETRY_ON_CODES}")
    };
    p.retriable_status_codes = r.codes.iter().map(|c| u32::from(*c)).collect();
    p.num_retries = r.attempts.map(|value| protobuf::UInt32Value { value });
    p.retry_back_off = r.backoff_ms.map(|ms| route::retry_policy::RetryBackOff {
        // Envoy requires a base interval above zero.
        base_interval: Some(duration_ms(ms.max(1))),
        ..Default::default()
    });
    p
}

/// `pier.dev: {rule: <name>}` for a named rule, so `/config_dump` leads from a route to its rule.
pub(super) fn rule_metadata(f: &ir::RouteFilters) -> Option<core::Metadata> {
    use protobuf::value::Kind;
    let name = f.rule_name.as_ref()?;
    let fields = HashMap::from([(
        "rule".to_string(),
        protobuf::Value {
            kind: Some(Kind::StringValue(name.clone())),
        },
    )]);
    Some(core::Metadata {
        filter_metadata: HashMap::from([(METADATA_NAMESPACE.to_string(), protobuf::Struct { fields })]),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(n: u32, d: u32) -> (u32, i32) {
        let f = fractional_percent(ir::Fraction {
            numerator: n,
            denominator: d,
        });
        (f.numerator, f.denominator)
    }

    #[test]
    fn fractions_pick_the_smallest_exact_denominator() {
        assert_eq!(fp(20, 100), (20, 0));
        assert_eq!(fp(25, 50), (50, 0));
        assert_eq!(fp(1, 1000), (10, 1));
        assert_eq!(fp(3, 400), (75, 1));
        assert_eq!(fp(1, 3), (333_333, 2));
        assert_eq!(fp(2, 3), (666_667, 2));
        assert_eq!(fp(0, 100), (0, 0));
    }

    #[test]
    fn timeouts_and_retries() {
        let mut a = route::RouteAction::default();
        let f = ir::RouteFilters {
            timeouts: ir::Timeouts {
                request_ms: None,
                backend_request_ms: Some(200),
            },
            ..Default::default()
        };
        apply(&mut a, &f);
        assert_eq!(a.timeout, Some(duration_ms(0)), "per-try bounded, route timeout off");
        let p = a.retry_policy.unwrap();
        assert_eq!(
            (p.num_retries.unwrap().value, p.per_try_timeout),
            (0, Some(duration_ms(200)))
        );

        let p = retry_policy(
            Some(&ir::Retry {
                attempts: Some(3),
                codes: vec![500],
                backoff_ms: Some(0),
            }),
            None,
        );
        assert_eq!(
            p.retry_on,
            "connect-failure,refused-stream,reset,retriable-status-codes"
        );
        assert_eq!(p.retriable_status_codes, vec![500]);
        assert_eq!(p.retry_back_off.unwrap().base_interval, Some(duration_ms(1)));
    }
}
