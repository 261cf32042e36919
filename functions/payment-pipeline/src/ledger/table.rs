//! Exactly-once charging on our side: one item per order id in a small DynamoDB table,
//! written with a condition before the payment call and after it, the way the Powertools
//! idempotency utility guards a handler. SQS delivers at least once, the SDK retries
//! SendMessage, Lambda retries invocations: every copy of an order meets the same item, and
//! only the copy that created it calls the payment API.
//!
//! | `status` | meaning | another copy of the order |
//! |---|---|---|
//! | `in_progress` | an attempt holds it until `lease_until` | waits (deferred) |
//! | `charged` | the payment API answered 2xx | is dropped: already charged |
//! | `declined` | the payment API refused it (4xx other than 429) | is dropped: final |
//! | `unknown` | an attempt's outcome is unknown (timeout, connection lost after sending, an attempt whose lease ran out) | is dropped: a human reconciles it; `PaymentOutcomeUnknown` alarms |
//!
//! An attempt that failed with a known outcome (5xx, 429, connection refused) deletes its
//! item, so a later copy may charge. Items expire (`expiration`, TTL) after
//! `LEDGER_TTL_DAYS`, longer than an order can live in the queues.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;

use super::outcome_unknown::log_outcome_unknown;

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
/// use payment_pipeline::{Claim, Ledger, Outcome};
///
/// let ledger = Ledger::new(&sdk, "orders-ledger".into(), Duration::from_secs(60),
///     Duration::from_secs(60 * 86_400), Duration::from_secs(3));
/// if let Claim::Claimed(attempt) = ledger.claim("o-1").await? {
///     // ... charge the order, then:
///     ledger.settle(&attempt, Outcome::Charged, "ch_1").await?;
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

/// What the ledger says about an order before it is charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This attempt holds the order: charge it, then [`Ledger::settle`].
    Claimed(Attempt),
    /// Already charged: do not charge again.
    Charged,
    /// Already refused by the payment API: final.
    Declined,
    /// Another attempt holds it until this Unix second.
    InFlight {
        /// When its lease runs out.
        lease_until: u64,
    },
    /// An attempt's outcome is unknown: parked for reconciliation, never charged blindly.
    Unknown,
}

/// One attempt at charging an order: what the conditional writes after the call check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The order.
    pub order_id: String,
    /// This attempt's id.
    pub attempt_id: String,
}

/// How an attempt ended, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The payment API charged the order.
    Charged,
    /// The payment API refused it: final.
    Declined,
    /// Not charged, and known not to be: the item is deleted so a later copy may charge.
    NotCharged,
    /// Maybe charged: parked as `unknown`, with an alarm.
    Unknown,
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
            .timeout_config(crate::sdk::operation_timeouts(timeout))
            .build();
        Self::on_client(Client::from_conf(config), table, lease, ttl, timeout)
    }

    fn on_client(
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

    /// The bound on one DynamoDB call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How long a claim holds.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Claims `order_id` for one attempt, or says why it must not be charged now.
    pub async fn claim(&self, order_id: &str) -> Result<Claim, LedgerError> {
        // A claim can vanish between the failed put and the read (its attempt released it):
        // then put again. Three rounds cover any realistic race.
        for _ in 0..3 {
            let attempt = Attempt {
                order_id: order_id.to_owned(),
                attempt_id: uuid::Uuid::new_v4().to_string(),
            };
            let now = unix_now();
            let put = self
                .dynamodb
                .put_item()
                .table_name(&self.table)
                .item("order_id", s(order_id))
                .item("status", s("in_progress"))
                .item("attempt_id", s(&attempt.attempt_id))
                .item("idempotency_key", s(order_id))
                .item("started_at", n(now))
                .item("lease_until", n(now + self.lease.as_secs()))
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
                    if let Err(release) = self.settle(&attempt, Outcome::NotCharged, "").await {
                        tracing::warn!(%order_id, error = %release, "could not release a claim whose put failed");
                    }
                    return Err(error);
                }
            }
            let Some(item) = self.read(order_id).await? else {
                continue;
            };
            match found(&item, &attempt, now) {
                Found::Answer(claim) => return Ok(claim),
                Found::Expired(stale) => {
                    // Its attempt died mid-call (killed, timed out): the charge may have
                    // gone through. Park it; never charge it again blindly.
                    self.settle(&stale, Outcome::Unknown, "its attempt's lease ran out")
                        .await?;
                    return Ok(Claim::Unknown);
                }
            }
        }
        Ok(Claim::InFlight {
            lease_until: unix_now() + 1,
        })
    }

    /// Records how `attempt` ended; each write holds only if the item is still this
    /// attempt's claim (a lease that ran out was parked meanwhile: that stands).
    pub async fn settle(
        &self,
        attempt: &Attempt,
        outcome: Outcome,
        detail: &str,
    ) -> Result<(), LedgerError> {
        let condition = "attempt_id = :attempt AND #status = :in_progress";
        let status = match outcome {
            Outcome::Charged => "charged",
            Outcome::Declined => "declined",
            Outcome::Unknown => "unknown",
            Outcome::NotCharged => {
                let deleted = self
                    .dynamodb
                    .delete_item()
                    .table_name(&self.table)
                    .key("order_id", s(&attempt.order_id))
                    .condition_expression(condition)
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
        let updated = self
            .dynamodb
            .update_item()
            .table_name(&self.table)
            .key("order_id", s(&attempt.order_id))
            .update_expression("SET #status = :status, detail = :detail, settled_at = :now")
            .condition_expression(condition)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":status", s(status))
            .expression_attribute_values(":detail", s(&truncate(detail, 512)))
            .expression_attribute_values(":now", n(unix_now()))
            .expression_attribute_values(":attempt", s(&attempt.attempt_id))
            .expression_attribute_values(":in_progress", s("in_progress"))
            .send()
            .await;
        match updated {
            Ok(_) => {
                if outcome == Outcome::Unknown {
                    log_outcome_unknown(&attempt.order_id, detail);
                }
                Ok(())
            }
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), UpdateItemError::ConditionalCheckFailedException(_)) =>
            {
                tracing::warn!(order_id = %attempt.order_id, status, "the claim was no longer this attempt's; its record stands");
                Ok(())
            }
            Err(e) => Err(self.error(e)),
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

    fn error<E, R>(&self, error: SdkError<E, R>) -> LedgerError
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

/// What the item a claim ran into means.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// The claim's answer.
    Answer(Claim),
    /// Another attempt's claim whose lease ran out: to be parked as unknown.
    Expired(Attempt),
}

/// Reads the item a conditional put of `attempt` (made at `now`) ran into.
fn found(item: &HashMap<String, AttributeValue>, attempt: &Attempt, now: u64) -> Found {
    match text(item, "status") {
        "charged" => Found::Answer(Claim::Charged),
        "declined" => Found::Answer(Claim::Declined),
        // Our own put: the SDK retried it after a lost answer (an attempt timeout, a 500
        // after the write). It holds the order; nothing was sent yet.
        "in_progress" if text(item, "attempt_id") == attempt.attempt_id => {
            Found::Answer(Claim::Claimed(attempt.clone()))
        }
        "in_progress" => {
            let lease_until = number(item, "lease_until");
            if lease_until > now {
                Found::Answer(Claim::InFlight { lease_until })
            } else {
                Found::Expired(Attempt {
                    order_id: attempt.order_id.clone(),
                    attempt_id: text(item, "attempt_id").to_owned(),
                })
            }
        }
        _ => Found::Answer(Claim::Unknown),
    }
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn text<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> &'a str {
    match item.get(name) {
        Some(AttributeValue::S(value)) => value,
        _ => "",
    }
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> u64 {
    match item.get(name) {
        Some(AttributeValue::N(value)) => value.parse().unwrap_or(0),
        _ => 0,
    }
}

/// `text` cut at a character boundary within `max` bytes.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use aws_sdk_dynamodb::operation::delete_item::DeleteItemOutput;
    use aws_sdk_dynamodb::types::error::InternalServerError;
    use aws_smithy_mocks::{RuleMode, mock, mock_client};

    use super::*;

    fn item(status: &str, attempt_id: &str, lease_until: u64) -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("order_id".to_owned(), s("o-1")),
            ("status".to_owned(), s(status)),
            ("attempt_id".to_owned(), s(attempt_id)),
            ("lease_until".to_owned(), n(lease_until)),
        ])
    }

    fn attempt(attempt_id: &str) -> Attempt {
        Attempt {
            order_id: "o-1".into(),
            attempt_id: attempt_id.into(),
        }
    }

    #[test]
    fn a_retried_put_that_meets_its_own_claim_holds_the_order() {
        // The first PutItem was written but its answer lost; the SDK's retry fails the
        // condition on that very item. Taking it for another attempt's would park an
        // order never sent as unknown once the lease ran out.
        let mine = attempt("a-1");
        assert_eq!(
            found(&item("in_progress", "a-1", 160), &mine, 100),
            Found::Answer(Claim::Claimed(mine.clone()))
        );
    }

    #[test]
    fn another_attempts_item_waits_stops_or_is_parked() {
        let mine = attempt("a-2");
        assert_eq!(
            found(&item("in_progress", "a-1", 160), &mine, 100),
            Found::Answer(Claim::InFlight { lease_until: 160 })
        );
        assert_eq!(
            found(&item("in_progress", "a-1", 100), &mine, 100),
            Found::Expired(attempt("a-1"))
        );
        assert_eq!(
            found(&item("charged", "a-1", 160), &mine, 100),
            Found::Answer(Claim::Charged)
        );
        assert_eq!(
            found(&item("declined", "a-1", 160), &mine, 100),
            Found::Answer(Claim::Declined)
        );
        assert_eq!(
            found(&item("unknown", "a-1", 160), &mine, 100),
            Found::Answer(Claim::Unknown)
        );
    }

    #[tokio::test]
    async fn a_claim_whose_put_failed_releases_what_it_may_have_written() {
        let put_attempts = Arc::new(Mutex::new(Vec::new()));
        let released = Arc::new(Mutex::new(Vec::new()));
        let put = {
            let seen = Arc::clone(&put_attempts);
            mock!(Client::put_item)
                .match_requests(move |put| {
                    if let Some(AttributeValue::S(id)) =
                        put.item().and_then(|i| i.get("attempt_id"))
                    {
                        seen.lock().unwrap().push(id.clone());
                    }
                    true
                })
                .then_error(|| {
                    PutItemError::InternalServerError(
                        InternalServerError::builder()
                            .message("written, answer lost")
                            .build(),
                    )
                })
        };
        let delete = {
            let seen = Arc::clone(&released);
            mock!(Client::delete_item)
                .match_requests(move |delete| {
                    if let Some(AttributeValue::S(id)) = delete
                        .expression_attribute_values()
                        .and_then(|v| v.get(":attempt"))
                    {
                        seen.lock().unwrap().push(id.clone());
                    }
                    true
                })
                .then_output(|| DeleteItemOutput::builder().build())
        };
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&put, &delete]);
        let ledger = Ledger::on_client(
            client,
            "ledger".into(),
            Duration::from_secs(60),
            Duration::from_secs(86_400),
            Duration::from_secs(1),
        );

        let error = ledger.claim("o-1").await.unwrap_err();
        assert!(
            error.to_string().contains("written, answer lost"),
            "{error}"
        );
        let put_attempts = put_attempts.lock().unwrap().clone();
        assert!(!put_attempts.is_empty());
        // Only this attempt's own claim is deleted, under the settle condition.
        assert_eq!(*released.lock().unwrap(), vec![put_attempts[0].clone()]);
    }
}
