//! Metrics of the source → translate → publish pipeline.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

/// Metrics of the source → translate → publish pipeline.
#[derive(Clone)]
pub struct PipelineMetrics {
    kind_available: Family<KindLabels, Gauge>,
    translations: Counter,
    translation_seconds: Histogram,
    source_error: Gauge,
    quarantined: Gauge,
    trials: Counter,
}

impl PipelineMetrics {
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self {
            kind_available: Family::default(),
            translations: Counter::default(),
            translation_seconds: Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]),
            source_error: Gauge::default(),
            quarantined: Gauge::default(),
            trials: Counter::default(),
        };
        registry.register(
            "pier_quarantined_objects",
            "Objects held back because a proxy rejected the configuration built from them",
            m.quarantined.clone(),
        );
        registry.register(
            "pier_nack_trials",
            "Trial configurations published to find the object a proxy rejects",
            m.trials.clone(),
        );
        registry.register("pier_translations", "Translations run", m.translations.clone());
        registry.register(
            "pier_translation_seconds",
            "Time to translate the model",
            m.translation_seconds.clone(),
        );
        registry.register(
            "pier_source_kind_available",
            "Per watched kind: 1 when the source can read it, 0 when it cannot (forbidden, failing, not listed yet)",
            m.kind_available.clone(),
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
    pub fn set_quarantined(&self, n: usize) {
        self.quarantined.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    pub fn trial(&self) {
        self.trials.inc();
    }
    pub fn set_source_error(&self, failing: bool) {
        self.source_error.set(i64::from(failing));
    }

    /// Sets `pier_source_kind_available` for `kinds` (every kind the source reads): 0 for those in
    /// `unavailable`, 1 for the rest.
    pub fn set_kinds(&self, kinds: &[&str], unavailable: &[(String, String)]) {
        for kind in kinds {
            let down = unavailable.iter().any(|(k, _)| k == kind);
            self.kind_available
                .get_or_create(&KindLabels { kind: kind.to_string() })
                .set(i64::from(!down));
        }
    }
}
