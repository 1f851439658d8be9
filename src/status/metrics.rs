//! Status-writer metrics on `/metrics`: what each status write attempt came to, and whether this
//! replica leads (writes status).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// `written`, `unchanged`, `gone` or `failed`.
    pub outcome: &'static str,
}

#[derive(Clone, Default)]
pub struct StatusMetrics {
    writes: Family<OutcomeLabel, Counter>,
    conflicts: Counter,
    leader: Gauge,
}

impl StatusMetrics {
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "pier_status_writes",
            "Status write attempts by outcome (unchanged: the merge changed nothing, so nothing was sent)",
            m.writes.clone(),
        );
        registry.register(
            "pier_status_conflicts",
            "Status writes refused with 409 Conflict and retried after a fresh read",
            m.conflicts.clone(),
        );
        registry.register(
            "pier_status_leader",
            "1 while this replica holds the Lease and writes status",
            m.leader.clone(),
        );
        m
    }

    pub fn outcome(&self, outcome: &'static str) {
        self.writes.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn conflict(&self) {
        self.conflicts.inc();
    }

    pub fn set_leader(&self, leads: bool) {
        self.leader.set(i64::from(leads));
    }
}
