//! What `charge` and `overflow-replay` both build once at start: the payment client, the
//! ledger and the overflow queue, each from its settings.

use crate::ledger::Ledger;
use crate::overflow::OverflowQueue;
use crate::payments::PaymentClient;

/// The three parts of the pipeline, shared by every invocation.
///
/// ```no_run
/// # async fn demo(aws: aws_config::SdkConfig) -> Result<(), String> {
/// let pipeline = payment_pipeline::Pipeline::from_env(&aws)?;
/// println!("each payment call bounded by {:?}", pipeline.payments.timeout());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The payment API (`PAYMENT_API_URL`, `PAYMENT_TIMEOUT_MS`).
    pub payments: PaymentClient,
    /// The ledger (`LEDGER_TABLE`, `LEDGER_*`).
    pub ledger: Ledger,
    /// The overflow queue (`OVERFLOW_QUEUE_URL`, `SQS_OPERATION_TIMEOUT_MS`).
    pub overflow: OverflowQueue,
}

impl Pipeline {
    /// Each part from its settings; the first invalid one is the error, naming the
    /// variable and the value.
    pub fn from_env(aws: &aws_config::SdkConfig) -> Result<Self, String> {
        Ok(Self {
            payments: PaymentClient::from_env().map_err(|e| e.to_string())?,
            ledger: Ledger::from_env(aws).map_err(|e| e.to_string())?,
            overflow: OverflowQueue::from_env(aws).map_err(|e| e.to_string())?,
        })
    }
}
