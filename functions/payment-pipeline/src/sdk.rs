//! The bound every AWS call of the pipeline gets (the ledger's DynamoDB, the overflow
//! queue's SQS): one setting for the operation, retries included, and half of it for each
//! attempt, so one slow attempt still leaves room for a retry.

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;

/// The SDK timeouts for an operation bounded by `timeout`.
pub(crate) fn operation_timeouts(timeout: Duration) -> TimeoutConfig {
    TimeoutConfig::builder()
        .operation_timeout(timeout)
        .operation_attempt_timeout(timeout / 2)
        .build()
}
