//! The last good report per period, in DynamoDB: what the function answers (flagged
//! stale) while Cost Explorer is unavailable.
//!
//! Item: `period` (S, the key, `START/END`), `report` (S, JSON), `stored_at` (N),
//! `expiration` (N, the table's TTL attribute).

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::report::CostReport;
use crate::request::Period;

/// Default `SNAPSHOT_TTL_SECS`: a snapshot outlives a long outage but not a billing cycle.
const DEFAULT_TTL: Duration = Duration::from_secs(35 * 24 * 3600);

#[derive(Debug, Clone)]
pub struct SnapshotTable {
    dynamodb: Client,
    table_name: String,
    ttl: Duration,
}

impl SnapshotTable {
    /// The table `table_name`; snapshots live `SNAPSHOT_TTL_SECS` (default 35 days, one
    /// hour to a year).
    pub fn new(dynamodb: Client, table_name: String) -> Result<Self, circuit_env::SettingError> {
        let ttl = circuit_env::setting::secs(
            "SNAPSHOT_TTL_SECS",
            DEFAULT_TTL.as_secs(),
            3600..=366 * 24 * 3600,
        )?;
        Ok(Self {
            dynamodb,
            table_name,
            ttl,
        })
    }

    /// Stores `report` as the last good answer for its period.
    pub async fn store(&self, report: &CostReport, now: u64) -> Result<(), String> {
        let json = serde_json::to_string(report).map_err(|e| e.to_string())?;
        self.dynamodb
            .put_item()
            .table_name(&self.table_name)
            .item("period", AttributeValue::S(report.period.key()))
            .item("report", AttributeValue::S(json))
            .item("stored_at", AttributeValue::N(now.to_string()))
            .item(
                "expiration",
                AttributeValue::N((now + self.ttl.as_secs()).to_string()),
            )
            .send()
            .await
            .map_err(|e| aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string())?;
        Ok(())
    }

    /// The last good report for `period`, if any.
    pub async fn load(&self, period: &Period) -> Result<Option<CostReport>, String> {
        let item = self
            .dynamodb
            .get_item()
            .table_name(&self.table_name)
            .key("period", AttributeValue::S(period.key()))
            .send()
            .await
            .map_err(|e| aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string())?
            .item;
        let Some(AttributeValue::S(json)) = item.as_ref().and_then(|item| item.get("report"))
        else {
            return Ok(None);
        };
        serde_json::from_str(json)
            .map(Some)
            .map_err(|e| format!("unreadable snapshot of {}: {e}", period.key()))
    }
}
