//! The answer: totals per service for a period, flagged stale when served from the
//! snapshot.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::request::Period;

/// What the function answers (and what the snapshot table stores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    /// The circuit's state when answering: `closed`, `open` or `half_open`.
    pub breaker: String,
    /// True when served from the snapshot instead of Cost Explorer.
    pub stale: bool,
    pub period: Period,
    pub total: Amount,
    /// Highest cost first.
    pub by_service: Vec<ServiceCost>,
    /// Unix seconds when the data was fetched from Cost Explorer.
    pub fetched_at: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Amount {
    pub amount: f64,
    pub unit: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceCost {
    pub service: String,
    pub amount: f64,
    pub unit: String,
}

/// Adds up daily per-service amounts.
#[derive(Debug, Default)]
pub struct CostTally {
    by_service: HashMap<String, f64>,
    unit: Option<String>,
}

impl CostTally {
    pub fn add(&mut self, service: &str, amount: f64, unit: &str) {
        *self.by_service.entry(service.to_owned()).or_default() += amount;
        self.unit.get_or_insert_with(|| unit.to_owned());
    }

    pub fn into_report(self, period: Period, fetched_at: u64) -> CostReport {
        let unit = self.unit.unwrap_or_else(|| "USD".to_owned());
        let mut by_service: Vec<ServiceCost> = self
            .by_service
            .into_iter()
            .map(|(service, amount)| ServiceCost {
                service,
                amount: round(amount),
                unit: unit.clone(),
            })
            .collect();
        by_service.sort_by(|a, b| {
            b.amount
                .total_cmp(&a.amount)
                .then_with(|| a.service.cmp(&b.service))
        });
        let total = round(by_service.iter().map(|s| s.amount).sum());
        CostReport {
            breaker: "closed".into(),
            stale: false,
            period,
            total: Amount {
                amount: total,
                unit,
            },
            by_service,
            fetched_at,
        }
    }
}

/// Four decimals: cents with room for sub-cent services, without float noise.
fn round(amount: f64) -> f64 {
    (amount * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_add_up_per_service_highest_first() {
        let mut tally = CostTally::default();
        tally.add("AWS Lambda", 0.1, "USD");
        tally.add("Amazon EC2", 2.0, "USD");
        tally.add("AWS Lambda", 0.2, "USD");
        let report = tally.into_report(
            Period {
                start: "2026-11-01".into(),
                end: "2026-11-03".into(),
            },
            7,
        );
        assert_eq!(report.by_service[0].service, "Amazon EC2");
        assert_eq!(report.by_service[1].amount, 0.3);
        assert_eq!(report.total.amount, 2.3);
        assert_eq!(report.total.unit, "USD");
        assert!(!report.stale);
    }
}
