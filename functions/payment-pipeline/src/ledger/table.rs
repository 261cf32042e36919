//! The ledger table: its settings, its client, the read of one item and its errors. The
//! writes an order meets are in the order it meets them: [`claim`](super::claim) before the
//! charge, [`settle`](super::settle) after it.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;

use super::item::s;
use crate::sdk::operation_timeouts;

/// Default `LEDGER_LEASE_SECS`: longer than a function's timeout, so an attempt still
/// running is never taken for a dead one.
const DEFAULT_LEASE_SECS: u64 = 60;
/// Default `LEDGER_OPERATION_TIMEOUT_MS`: one DynamoDB call, retries included.
const DEFAULT_TIMEOUT_MS: u64 = 3000;
/// Default `LEDGER_TTL_DAYS`: the overflow queue's and the DLQ's 14 days each, and then some.
const DEFAULT_TTL_DAYS: u64 = 60;

/// The ledger table.
///
/// ```no_run
/// # async fn demo(sdk: aws_config::SdkConfig) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use payment_pipeline::{Claim, Ledger, Settlement};
///
/// let ledger = Ledger::new(&sdk, "orders-ledger".into(), Duration::from_secs(60),
///     Duration::from_secs(60 * 86_400), Duration::from_secs(3));
/// let order = payment_pipeline::Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#)?;
/// if let Claim::Claimed(attempt) = ledger.claim(&order, &Default::default()).await? {
///     // ... charge the order, then:
///     ledger.settle(&attempt, Settlement::Charged, "ch_1").await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Ledger {
    pub(super) dynamodb: Client,
    pub(super) table: String,
    pub(super) lease: Duration,
    pub(super) ttl: Duration,
    pub(super) timeout: Duration,
}

/// DynamoDB failed: nothing may be charged without the ledger.
#[derive(Debug, thiserror::Error)]
#[error("ledger table {table}: {message}")]
pub struct LedgerError {
    table: String,
    message: String,
}

impl Ledger {
    /// The ledger in `table`; `lease` is how long a claim holds, `ttl` how long items
    /// live, `timeout` bounds each DynamoDB call.
    pub fn new(
        sdk: &aws_config::SdkConfig,
        table: String,
        lease: Duration,
        ttl: Duration,
        timeout: Duration,
    ) -> Self {
        let config = aws_sdk_dynamodb::config::Builder::from(sdk)
            .timeout_config(operation_timeouts(timeout))
            .build();
        Self::on_client(Client::from_conf(config), table, lease, ttl, timeout)
    }

    /// The ledger on a DynamoDB client built elsewhere.
    pub(crate) fn on_client(
        dynamodb: Client,
        table: String,
        lease: Duration,
        ttl: Duration,
        timeout: Duration,
    ) -> Self {
        Self {
            dynamodb,
            table,
            lease,
            ttl,
            timeout,
        }
    }

    /// The ledger of `LEDGER_TABLE`, with `LEDGER_LEASE_SECS` (default 60, 1 to 900),
    /// `LEDGER_TTL_DAYS` (default 60, 15 to 365) and `LEDGER_OPERATION_TIMEOUT_MS`
    /// (default 3000, 100 to 60000).
    pub fn from_env(sdk: &aws_config::SdkConfig) -> Result<Self, circuit_env::SettingError> {
        let table = circuit_env::setting::required("LEDGER_TABLE")?;
        let lease = circuit_env::setting::secs("LEDGER_LEASE_SECS", DEFAULT_LEASE_SECS, 1..=900)?;
        let days = circuit_env::setting::number("LEDGER_TTL_DAYS", DEFAULT_TTL_DAYS, 15..=365)?;
        let timeout = circuit_env::setting::millis(
            "LEDGER_OPERATION_TIMEOUT_MS",
            DEFAULT_TIMEOUT_MS,
            100..=60_000,
        )?;
        Ok(Self::new(
            sdk,
            table,
            lease,
            Duration::from_secs(days * 86_400),
            timeout,
        ))
    }

    pub(super) fn client(&self) -> &Client {
        &self.dynamodb
    }

    pub(super) fn table(&self) -> &str {
        &self.table
    }

    pub(super) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The bound on one DynamoDB call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How long a claim holds.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The order's item, if any (a consistent read).
    pub async fn read(
        &self,
        order_id: &str,
    ) -> Result<Option<HashMap<String, AttributeValue>>, LedgerError> {
        let got = self
            .dynamodb
            .get_item()
            .table_name(&self.table)
            .key("order_id", s(order_id))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.error(e))?;
        Ok(got.item)
    }

    pub(super) fn error<E, R>(&self, error: SdkError<E, R>) -> LedgerError
    where
        E: std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        LedgerError {
            table: self.table.clone(),
            message: DisplayErrorContext(&error).to_string(),
        }
    }
}
