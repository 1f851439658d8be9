//! Metrics of the resolver stage, in the runtime's registry:
//!
//! - `pier_dns_lookups_total{result}` (counter): lookups by outcome — `answer`, `no-address` (NXDOMAIN
//!   or no record of the families asked for), `failed`;
//! - `pier_dns_answers_dropped_total{rule}` (counter): answered addresses the guardrails refused, by the
//!   rule that refused them (`cloud-metadata`, `denied-cidr`, ...);
//! - `pier_dns_stale_names` (gauge): names whose lookups fail and whose last answer is being served;
//! - `pier_dns_answer_info{name,address,verdict}` (gauge, always 1): where each name resolved now, and
//!   the verdict on each address (`allowed`, or the rule that dropped it).
//!
//! Judging here uses the translator's own function (`policy::judge_answers`), so the metrics and the
//! served endpoints cannot disagree.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::gateway::policy::judge_answers;
use crate::model::Resolution;
use crate::options::Guardrails;
use crate::resolve::Outcome;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AnswerLabels {
    name: String,
    address: String,
    verdict: &'static str,
}

#[derive(Clone)]
pub struct DnsMetrics {
    lookups: Family<ResultLabels, Counter>,
    dropped: Family<RuleLabels, Counter>,
    stale: Gauge,
    answers: Family<AnswerLabels, Gauge>,
}

impl DnsMetrics {
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self {
            lookups: Family::default(),
            dropped: Family::default(),
            stale: Gauge::default(),
            answers: Family::default(),
        };
        registry.register(
            "pier_dns_lookups",
            "Lookups of hostname Backends by pier's resolver, by result",
            m.lookups.clone(),
        );
        registry.register(
            "pier_dns_answers_dropped",
            "Answered addresses the destination guardrails refused, by rule",
            m.dropped.clone(),
        );
        registry.register(
            "pier_dns_stale_names",
            "Names whose lookups fail and whose last answer is still served (--dns-stale-for)",
            m.stale.clone(),
        );
        registry.register(
            "pier_dns_answer_info",
            "Where each name resolved, and the verdict on each address (allowed, or the refusing rule)",
            m.answers.clone(),
        );
        m
    }

    /// Counts one lookup's outcome and the answers it brought that the guardrails refuse.
    pub fn lookup(&self, outcome: &Outcome, guardrails: &Guardrails) {
        let result = match outcome {
            Outcome::Answer { addresses, .. } if addresses.is_empty() => "no-address",
            Outcome::Answer { .. } => "answer",
            Outcome::Failed(_) => "failed",
        };
        self.lookups.get_or_create(&ResultLabels { result }).inc();
        if let Outcome::Answer { addresses, .. } = outcome {
            for refusal in judge_answers(addresses, guardrails).dropped {
                self.dropped
                    .get_or_create(&RuleLabels {
                        rule: refusal.rule.name(),
                    })
                    .inc();
            }
        }
    }

    /// Sets the gauges from the names' current resolutions.
    pub fn resolutions(&self, list: &[(String, Arc<Resolution>)], guardrails: &Guardrails) {
        let stale = list
            .iter()
            .filter(|(_, r)| matches!(r.as_ref(), Resolution::Stale { .. }))
            .count();
        self.stale.set(i64::try_from(stale).unwrap_or(i64::MAX));
        self.answers.clear();
        for (name, r) in list {
            let addresses = r.addresses();
            let judged = judge_answers(addresses, guardrails);
            for ip in &judged.allowed {
                self.answer(name, ip.to_string(), "allowed");
            }
            for (ip, refusal) in addresses
                .iter()
                .filter(|ip| !judged.allowed.contains(ip))
                .zip(&judged.dropped)
            {
                self.answer(name, ip.to_string(), refusal.rule.name());
            }
        }
    }

    fn answer(&self, name: &str, address: String, verdict: &'static str) {
        let labels = AnswerLabels {
            name: name.to_string(),
            address,
            verdict,
        };
        self.answers.get_or_create(&labels).set(1);
    }
}
