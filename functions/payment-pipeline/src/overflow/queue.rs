//! The queue itself: buffering an order, sending deferrals again.

use std::time::Duration;

use aws_sdk_sqs::error::DisplayErrorContext;

use super::deferral::{Deferral, batch_entry};
use super::message::{BufferReason, MAX_DELAY, attribute};
use crate::clock::unix_now;
use crate::order::Order;
use crate::payments::CIRCUIT;
use crate::sdk::operation_timeouts;

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
/// let order = Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#)?;
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

impl OverflowQueue {
    /// The queue at `queue_url`; every SQS call is bounded by `timeout`.
    pub fn new(sdk: &aws_config::SdkConfig, queue_url: String, timeout: Duration) -> Self {
        let config = aws_sdk_sqs::config::Builder::from(sdk)
            .timeout_config(operation_timeouts(timeout))
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
            .message_body(order.to_body())
            .delay_seconds(delay.min(MAX_DELAY).as_secs() as i32)
            .message_attributes("circuit", attribute("String", CIRCUIT).map_err(&fail)?)
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
