//! The overflow queue: where orders wait while they cannot be charged. `charge` buffers an
//! order there (circuit open, or a transient failure); `overflow-replay` drains it and
//! defers what it cannot charge yet by sending it again with a delay, so waiting never
//! spends a message's receive budget (`maxReceiveCount`).
//!
//! Message attributes: `circuit`, `order_id`, `reason` (why it was buffered), `buffered_at`
//! (Unix seconds, kept across deferrals), `opened_at` (when the circuit opened, if it was),
//! `deferrals` (how often it was sent again: a runaway loop shows there), `failures` (how
//! many of those followed a failed charge).

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};

use crate::Order;
use crate::ledger::unix_now;

/// Longest delay SQS accepts on a message.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// Default `SQS_OPERATION_TIMEOUT_MS`: one SQS call, retries included.
const DEFAULT_SQS_TIMEOUT_MS: u64 = 3000;

/// The overflow queue.
///
/// ```no_run
/// # async fn demo(sdk: aws_config::SdkConfig) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use payment_pipeline::{BufferReason, Order, OverflowQueue};
///
/// let queue = OverflowQueue::new(&sdk, "https://sqs.eu-west-1.amazonaws.com/1/overflow".into(),
///     Duration::from_secs(3));
/// let order = Order::from_payload(serde_json::json!({"order_id": "o-1", "amount": 5, "currency": "EUR"}))?;
/// let message_id = queue.buffer(&order, BufferReason::CircuitOpen, None, Duration::ZERO).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OverflowQueue {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    timeout: Duration,
}

/// SQS did not take a message.
#[derive(Debug, thiserror::Error)]
#[error("overflow queue: could not send order {order_id}: {message}")]
pub struct BufferError {
    order_id: String,
    message: String,
}

/// Why an order is buffered: the `reason` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferReason {
    /// The payment-backend circuit is open.
    CircuitOpen,
    /// The payment API failed (5xx, 429, unreachable) while the circuit was closed.
    PaymentUnavailable,
    /// The ledger could not be written: no charge without it.
    LedgerUnavailable,
    /// Another attempt holds the order: buffered until its lease runs out, so that the
    /// order is settled (charged, or parked as unknown) even if that attempt died.
    InFlight,
}

impl BufferReason {
    /// The attribute's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CircuitOpen => "circuit_open",
            Self::PaymentUnavailable => "payment_unavailable",
            Self::LedgerUnavailable => "ledger_unavailable",
            Self::InFlight => "in_flight",
        }
    }
}

/// A record `overflow-replay` sends again, delayed, instead of failing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferral {
    /// The record's message id (reported back on failure).
    pub message_id: String,
    /// The body, unchanged.
    pub body: String,
    /// The record's attributes: name → (data type, string value).
    pub attributes: HashMap<String, (String, String)>,
    /// How long SQS hides the new message (capped at [`MAX_DELAY`]).
    pub delay: Duration,
    /// What becomes of the record's `failures` attribute.
    pub failures: FailureCount,
}

/// The `failures` attribute of a deferred record: the failed charges since the circuit was
/// last seen open. Only failures with the circuit closed make a record poison; a record
/// that meets an open circuit starts over, so an outage's failed probes never add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCount {
    /// Unchanged (deferred for time, or behind another attempt).
    Keep,
    /// One more (deferred after a failed charge).
    Increment,
    /// Back to none (deferred because the circuit is open).
    Reset,
}

impl Deferral {
    /// The record's `failures` attribute as received (0 when absent).
    pub fn failure_count(&self) -> u64 {
        self.count("failures")
    }

    fn count(&self, name: &str) -> u64 {
        self.attributes
            .get(name)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }
}

impl OverflowQueue {
    /// The queue at `queue_url`; every SQS call is bounded by `timeout`.
    pub fn new(sdk: &aws_config::SdkConfig, queue_url: String, timeout: Duration) -> Self {
        let config = aws_sdk_sqs::config::Builder::from(sdk)
            .timeout_config(crate::sdk::operation_timeouts(timeout))
            .build();
        Self {
            sqs: aws_sdk_sqs::Client::from_conf(config),
            queue_url,
            timeout,
        }
    }

    /// The queue of `OVERFLOW_QUEUE_URL`, its calls bounded by `SQS_OPERATION_TIMEOUT_MS`
    /// (default 3000, 100 to 60000).
    pub fn from_env(sdk: &aws_config::SdkConfig) -> Result<Self, circuit_env::SettingError> {
        let queue_url = circuit_env::setting::required("OVERFLOW_QUEUE_URL")?;
        let timeout = circuit_env::setting::millis(
            "SQS_OPERATION_TIMEOUT_MS",
            DEFAULT_SQS_TIMEOUT_MS,
            100..=60_000,
        )?;
        Ok(Self::new(sdk, queue_url, timeout))
    }

    /// The bound on one SQS call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Buffers `order` (its validated fields) for `overflow-replay`, hidden for `delay`
    /// (capped at [`MAX_DELAY`]); returns the message id.
    pub async fn buffer(
        &self,
        order: &Order,
        reason: BufferReason,
        opened_at: Option<u64>,
        delay: Duration,
    ) -> Result<String, BufferError> {
        let fail = |message: String| BufferError {
            order_id: order.order_id.clone(),
            message,
        };
        let mut request = self
            .sqs
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(order.to_json().to_string())
            .delay_seconds(delay.min(MAX_DELAY).as_secs() as i32)
            .message_attributes(
                "circuit",
                attribute("String", crate::CIRCUIT).map_err(&fail)?,
            )
            .message_attributes(
                "order_id",
                attribute("String", &order.order_id).map_err(&fail)?,
            )
            .message_attributes(
                "reason",
                attribute("String", reason.as_str()).map_err(&fail)?,
            )
            .message_attributes(
                "buffered_at",
                attribute("Number", &unix_now().to_string()).map_err(&fail)?,
            );
        if let Some(opened_at) = opened_at {
            request = request.message_attributes(
                "opened_at",
                attribute("Number", &opened_at.to_string()).map_err(&fail)?,
            );
        }
        let sent = request
            .send()
            .await
            .map_err(|e| fail(DisplayErrorContext(&e).to_string()))?;
        Ok(sent.message_id.unwrap_or_default())
    }

    /// Sends each deferral again as a new message with its delay and `deferrals` + 1, in
    /// batches of 10. Returns the message ids that could not be sent: those records must
    /// stay in the queue (reported as failures).
    pub async fn defer(&self, deferrals: &[Deferral]) -> Vec<String> {
        let mut unsent = Vec::new();
        for chunk in deferrals.chunks(10) {
            let mut entries = Vec::with_capacity(chunk.len());
            for (i, deferral) in chunk.iter().enumerate() {
                match batch_entry(i, deferral) {
                    Ok(entry) => entries.push(entry),
                    Err(error) => {
                        tracing::warn!(message_id = %deferral.message_id, %error, "cannot defer the record");
                        unsent.push(deferral.message_id.clone());
                    }
                }
            }
            if entries.is_empty() {
                continue;
            }
            let ids: Vec<String> = entries.iter().map(|e| e.id().to_owned()).collect();
            match self
                .sqs
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                Ok(sent) => {
                    for failed in sent.failed() {
                        tracing::warn!(
                            entry = failed.id(),
                            code = failed.code(),
                            "deferral not sent"
                        );
                        if let Ok(i) = failed.id().parse::<usize>() {
                            unsent.push(chunk[i].message_id.clone());
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %DisplayErrorContext(&error), "deferral batch not sent");
                    unsent.extend(
                        ids.iter()
                            .filter_map(|id| id.parse::<usize>().ok())
                            .map(|i| chunk[i].message_id.clone()),
                    );
                }
            }
        }
        unsent
    }
}

fn batch_entry(index: usize, deferral: &Deferral) -> Result<SendMessageBatchRequestEntry, String> {
    let deferrals = deferral.count("deferrals") + 1;
    let failures = match deferral.failures {
        FailureCount::Keep => deferral.failure_count(),
        FailureCount::Increment => deferral.failure_count() + 1,
        FailureCount::Reset => 0,
    };
    let delay = deferral.delay.min(MAX_DELAY).as_secs() as i32;
    let mut entry = SendMessageBatchRequestEntry::builder()
        .id(index.to_string())
        .message_body(&deferral.body)
        .delay_seconds(delay);
    for (name, (data_type, value)) in &deferral.attributes {
        if name != "deferrals" && name != "failures" {
            entry = entry.message_attributes(name, attribute(data_type, value)?);
        }
    }
    if failures > 0 {
        entry = entry.message_attributes("failures", attribute("Number", &failures.to_string())?);
    }
    entry
        .message_attributes("deferrals", attribute("Number", &deferrals.to_string())?)
        .build()
        .map_err(|e| e.to_string())
}

fn attribute(data_type: &str, value: &str) -> Result<MessageAttributeValue, String> {
    MessageAttributeValue::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deferral(attributes: &[(&str, &str, &str)], failures: FailureCount) -> Deferral {
        Deferral {
            message_id: "m-1".into(),
            body: r#"{"order_id":"o-1"}"#.into(),
            attributes: attributes
                .iter()
                .map(|(n, t, v)| ((*n).to_owned(), ((*t).to_owned(), (*v).to_owned())))
                .collect(),
            delay: Duration::from_secs(5000),
            failures,
        }
    }

    fn attribute_value(entry: &SendMessageBatchRequestEntry, name: &str) -> Option<String> {
        entry
            .message_attributes()
            .and_then(|a| a.get(name))
            .and_then(|v| v.string_value().map(str::to_owned))
    }

    #[test]
    fn a_deferral_keeps_the_attributes_counts_itself_and_caps_the_delay() {
        let first = batch_entry(
            3,
            &deferral(
                &[
                    ("order_id", "String", "o-1"),
                    ("buffered_at", "Number", "17"),
                ],
                FailureCount::Keep,
            ),
        )
        .unwrap();
        assert_eq!(first.id(), "3");
        assert_eq!(first.message_body(), r#"{"order_id":"o-1"}"#);
        assert_eq!(first.delay_seconds(), Some(900));
        assert_eq!(attribute_value(&first, "order_id").as_deref(), Some("o-1"));
        assert_eq!(
            attribute_value(&first, "buffered_at").as_deref(),
            Some("17")
        );
        assert_eq!(attribute_value(&first, "deferrals").as_deref(), Some("1"));
        assert_eq!(attribute_value(&first, "failures"), None);

        let again = batch_entry(
            0,
            &deferral(
                &[("deferrals", "Number", "4"), ("failures", "Number", "2")],
                FailureCount::Increment,
            ),
        )
        .unwrap();
        assert_eq!(attribute_value(&again, "deferrals").as_deref(), Some("5"));
        assert_eq!(attribute_value(&again, "failures").as_deref(), Some("3"));

        let open = batch_entry(
            0,
            &deferral(&[("failures", "Number", "2")], FailureCount::Reset),
        )
        .unwrap();
        assert_eq!(attribute_value(&open, "failures"), None);
    }
}
