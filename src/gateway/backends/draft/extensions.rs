//! The draft shape's `spec.extensions`: `pier.dev/connection-pool` (Envoy circuit breakers) and
//! `pier.dev/outlier-detection` (passive health checking). Their `config` is free-form in the draft; pier
//! parses it strictly here, so a mistake becomes a condition naming the field path inside it. Any other
//! extension type is refused: silently ignoring a connection policy would be a surprise.

use crate::api::draft::{
    ConnectionPoolConfig, EXT_CONNECTION_POOL, EXT_OUTLIER_DETECTION, Extension, OutlierDetectionConfig,
};
use crate::gateway::backends::Usable;
use crate::gateway::backends::common::invalid;
use crate::gateway::conditions::{BackendProblem, BackendReason, Problem};
use crate::gateway::duration::duration_ms;
use crate::ir;

/// Sets the circuit breakers and outlier detection the extensions describe on `usable`.
pub(super) fn apply(extensions: &[Extension], usable: &mut Usable) -> Result<(), BackendProblem> {
    for (i, ext) in extensions.iter().enumerate() {
        let Extension { type_, config } = ext;
        let field = format!("spec.extensions[{i}].config");
        let config = config.clone().unwrap_or(serde_json::Value::Object(Default::default()));
        match type_.as_str() {
            EXT_CONNECTION_POOL => usable.circuit_breaker = Some(connection_pool(&field, config)?),
            EXT_OUTLIER_DETECTION => usable.outlier_detection = Some(outlier_detection(&field, config)?),
            other => {
                return Err(Problem::accepted(
                    BackendReason::UnsupportedValue,
                    format!(
                        "spec.extensions[{i}].type: {other:?} is not supported; pier implements {EXT_CONNECTION_POOL} and {EXT_OUTLIER_DETECTION}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn connection_pool(field: &str, config: serde_json::Value) -> Result<ir::CircuitBreaker, BackendProblem> {
    let ConnectionPoolConfig {
        max_connections,
        max_pending_requests,
        max_requests,
        max_retries,
    } = parse_config(field, config)?;
    Ok(ir::CircuitBreaker {
        max_connections,
        max_pending_requests,
        max_requests,
        max_retries,
    })
}

fn outlier_detection(field: &str, config: serde_json::Value) -> Result<ir::OutlierDetection, BackendProblem> {
    let OutlierDetectionConfig {
        consecutive_5xx,
        interval,
        base_ejection_time,
        max_ejection_percent,
    } = parse_config(field, config)?;
    let duration = |name: &str, v: Option<String>| -> Result<Option<u64>, BackendProblem> {
        v.map(|s| duration_ms(&s).map_err(|e| invalid(format!("{field}.{name}: {e}"))))
            .transpose()
    };
    Ok(ir::OutlierDetection {
        consecutive_5xx,
        interval_ms: duration("interval", interval)?,
        base_ejection_time_ms: duration("baseEjectionTime", base_ejection_time)?,
        max_ejection_percent,
    })
}

fn parse_config<T: serde::de::DeserializeOwned>(field: &str, v: serde_json::Value) -> Result<T, BackendProblem> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            invalid(format!("{field}: {}", e.inner()))
        } else {
            invalid(format!("{field}.{path}: {}", e.inner()))
        }
    })
}
