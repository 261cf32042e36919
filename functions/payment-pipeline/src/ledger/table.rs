//! The ledger table: the conditional writes that claim an order and settle its attempt.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;

use super::attempt::{Attempt, Settlement};
use super::claim::{Claim, Found, found};
use super::item::{MAX_DETAIL_BYTES, n, s, text};
use super::outcome_unknown::log_outcome_unknown;
use super::progress::{Phase, Progress};
use crate::clock::unix_now;
use crate::order::Order;
use crate::sdk::operation_timeouts;
use crate::text::truncate;

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
    dynamodb: Client,
    table: String,
    lease: Duration,
    ttl: Duration,
    timeout: Duration,
}

/// Set on a parked item once `PaymentOutcomeUnknown` was counted for it (Unix seconds).
pub(super) const COUNTED: &str = "unknown_counted_at";

/// The condition every write after the call makes: the item is still this attempt's claim.
const HELD: &str = "attempt_id = :attempt AND #status = :in_progress";

/// A conditional write that did not hold, or failed.
enum Conditional {
    /// The item was no longer this attempt's claim.
    Failed,
    /// DynamoDB failed.
    Error(LedgerError),
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

    /// Claims `order` for one attempt, or says why it must not be charged now.
    /// Each attempt is recorded in `progress` before its put, so a caller whose future was
    /// dropped can release a put that may have landed.
    pub async fn claim(&self, order: &Order, progress: &Progress) -> Result<Claim, LedgerError> {
        let order_id = order.order_id.as_str();
        let contents = order.contents_key();
        // A claim can vanish between the failed put and the read (its attempt released it),
        // or a stale attempt can settle while it is being parked: then look again. Three
        // rounds cover any realistic race.
        for _ in 0..3 {
            let now = unix_now();
            let attempt = Attempt {
                order_id: order_id.to_owned(),
                attempt_id: uuid::Uuid::new_v4().to_string(),
                lease_until: now + self.lease.as_secs(),
            };
            progress.set(Phase::Claiming(attempt.clone()));
            let put = self
                .dynamodb
                .put_item()
                .table_name(&self.table)
                .item("order_id", s(order_id))
                .item("status", s("in_progress"))
                .item("attempt_id", s(&attempt.attempt_id))
                .item("idempotency_key", s(order_id))
                .item("contents", s(&contents))
                .item("started_at", n(now))
                .item("lease_until", n(attempt.lease_until))
                .item("expiration", n(now + self.ttl.as_secs()))
                .condition_expression("attribute_not_exists(order_id)")
                .send()
                .await;
            match put {
                Ok(_) => return Ok(Claim::Claimed(attempt)),
                Err(SdkError::ServiceError(e))
                    if matches!(e.err(), PutItemError::ConditionalCheckFailedException(_)) => {}
                Err(e) => {
                    let error = self.error(e);
                    // The put may have been written though no answer says so (its last try
                    // timed out, a 500 after the write): release it, or every copy of the
                    // order would wait out the lease and then park it as unknown, unsent.
                    if let Err(release) = self.settle(&attempt, Settlement::NotCharged, "").await {
                        tracing::warn!(%order_id, error = %release, "could not release a claim whose put failed");
                    }
                    return Err(error);
                }
            }
            let Some(item) = self.read(order_id).await? else {
                continue;
            };
            match found(&item, &attempt, &contents, now) {
                Found::Answer(Claim::Unknown) => {
                    // Parked, but perhaps never counted: the park's write landed and its
                    // answer did not (an SDK timeout, a killed process). Count it now.
                    if !item.contains_key(COUNTED) {
                        self.count_unknown(order_id, text(&item, "detail")).await;
                    }
                    return Ok(Claim::Unknown);
                }
                Found::Answer(claim) => return Ok(claim),
                Found::Expired(stale) => {
                    // Its attempt died mid-call (killed, timed out): the charge may have
                    // gone through. Park it; never charge it again blindly. If it settled
                    // or released the order meanwhile, what it wrote is the answer: look again.
                    if self.park(&stale, "its attempt's lease ran out").await? {
                        return Ok(Claim::Unknown);
                    }
                }
            }
        }
        Ok(Claim::InFlight {
            lease_until: unix_now() + 1,
        })
    }

    /// Parks `attempt` as `unknown` and counts `PaymentOutcomeUnknown`; true when the item
    /// now says `unknown` for this attempt (also when an SDK retry's first try wrote it and
    /// the retry failed its condition), false when the attempt no longer held it.
    async fn park(&self, attempt: &Attempt, detail: &str) -> Result<bool, LedgerError> {
        let parked = match self.update_status(attempt, "unknown", detail).await {
            Ok(()) => true,
            Err(Conditional::Failed) => self.read(&attempt.order_id).await?.is_some_and(|item| {
                text(&item, "status") == "unknown"
                    && text(&item, "attempt_id") == attempt.attempt_id
            }),
            Err(Conditional::Error(error)) => return Err(error),
        };
        if parked {
            self.count_unknown(&attempt.order_id, detail).await;
        } else {
            tracing::warn!(order_id = %attempt.order_id, "the claim was no longer this attempt's; its record stands");
        }
        Ok(parked)
    }

    /// Counts `PaymentOutcomeUnknown` for a parked order, then marks its item counted so
    /// the copies that meet it later do not count it again: at least once per order (twice
    /// only if the mark fails or two copies meet the unmarked item at once), never zero.
    /// The mark also drops any `expiration` left by an older park: a parked item never expires.
    async fn count_unknown(&self, order_id: &str, detail: &str) {
        log_outcome_unknown(order_id, detail);
        let marked = self
            .dynamodb
            .update_item()
            .table_name(&self.table)
            .key("order_id", s(order_id))
            .update_expression("SET #counted = :now REMOVE expiration")
            .condition_expression("#status = :unknown")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#counted", COUNTED)
            .expression_attribute_values(":unknown", s("unknown"))
            .expression_attribute_values(":now", n(unix_now()))
            .send()
            .await;
        if let Err(error) = marked {
            tracing::warn!(%order_id, error = %self.error(error), "could not mark the parked order counted: a later copy counts it again");
        }
    }

    /// Sets `status` and `detail` on the item if it is still `attempt`'s claim; parking
    /// (`unknown`) also removes its `expiration`: the only record of a possibly charged
    /// order stays until an operator settles it.
    async fn update_status(
        &self,
        attempt: &Attempt,
        status: &str,
        detail: &str,
    ) -> Result<(), Conditional> {
        let mut expression =
            "SET #status = :status, detail = :detail, settled_at = :now".to_owned();
        if status == "unknown" {
            expression.push_str(" REMOVE expiration");
        }
        let updated = self
            .dynamodb
            .update_item()
            .table_name(&self.table)
            .key("order_id", s(&attempt.order_id))
            .update_expression(expression)
            .condition_expression(HELD)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":status", s(status))
            .expression_attribute_values(":detail", s(&truncate(detail, MAX_DETAIL_BYTES)))
            .expression_attribute_values(":now", n(unix_now()))
            .expression_attribute_values(":attempt", s(&attempt.attempt_id))
            .expression_attribute_values(":in_progress", s("in_progress"))
            .send()
            .await;
        match updated {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), UpdateItemError::ConditionalCheckFailedException(_)) =>
            {
                Err(Conditional::Failed)
            }
            Err(e) => Err(Conditional::Error(self.error(e))),
        }
    }

    /// Records how `attempt` ended; each write holds only if the item is still this
    /// attempt's claim (a lease that ran out was parked meanwhile: that stands). An error
    /// means nothing was recorded: for [`Settlement::Unknown`] the order must then be kept
    /// (its record not deleted) until a later copy parks it.
    pub async fn settle(
        &self,
        attempt: &Attempt,
        settlement: Settlement,
        detail: &str,
    ) -> Result<(), LedgerError> {
        let status = match settlement {
            Settlement::Charged => "charged",
            Settlement::Declined => "declined",
            Settlement::Unknown => return self.park(attempt, detail).await.map(|_| ()),
            Settlement::NotCharged => {
                let deleted = self
                    .dynamodb
                    .delete_item()
                    .table_name(&self.table)
                    .key("order_id", s(&attempt.order_id))
                    .condition_expression(HELD)
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":attempt", s(&attempt.attempt_id))
                    .expression_attribute_values(":in_progress", s("in_progress"))
                    .send()
                    .await;
                return match deleted {
                    Ok(_) => Ok(()),
                    Err(SdkError::ServiceError(e))
                        if e.err().is_conditional_check_failed_exception() =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(self.error(e)),
                };
            }
        };
        match self.update_status(attempt, status, detail).await {
            Ok(()) => Ok(()),
            Err(Conditional::Failed) => {
                tracing::warn!(order_id = %attempt.order_id, status, "the claim was no longer this attempt's; its record stands");
                Ok(())
            }
            Err(Conditional::Error(error)) => Err(error),
        }
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

#[cfg(test)]
mod tests;
