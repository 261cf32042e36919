//! `overflow-replay`: drains the orders `charge` buffered to SQS. Each record is charged
//! once through the ledger and the same `payment-backend` circuit; while the circuit is
//! open, or when the invocation's remaining time is too short to start another record, the
//! record is deferred: sent again with a delay (until the circuit may admit a probe, at
//! most 900 s) and deleted, so waiting never spends its receive budget. A failed charge
//! (5xx, 429, a systemic refusal, unreachable, the ledger unavailable) is deferred too,
//! with a doubling delay, up to `REPLAY_MAX_FAILURES` times in a row (default 5; meeting the
//! open circuit starts the count over). An order-level decline (402, 422 with a decline
//! code) is final: recorded as declined and deleted. A record is deleted only when its
//! outcome is durable elsewhere; one that fails on its own (not an order, a charge that
//! failed too often, an order id taken by another order, an order older than
//! `REPLAY_MAX_ORDER_AGE_SECS`, an outcome unknown the ledger could not park) is reported
//! as a batch item failure, and reaches the DLQ after `maxReceiveCount`.
//!
//! Environment (docs/functions.md): `PAYMENT_API_URL`, `PAYMENT_API_ALLOW_HTTP_HOST`,
//! `PAYMENT_TIMEOUT_MS`, `OVERFLOW_QUEUE_URL`, `SQS_OPERATION_TIMEOUT_MS`, `LEDGER_TABLE`,
//! `LEDGER_*`, `REPLAY_MAX_FAILURES`, `REPLAY_MAX_ORDER_AGE_SECS`, `CIRCUIT_BREAKER_TABLE`
//! and the `CIRCUIT_*` tunables of `circuit-env`. The event source mapping needs
//! `FunctionResponseTypes: [ReportBatchItemFailures]`.
#![forbid(unsafe_code)]

mod record;
mod replay;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use breaker_runtime::lambda::run_concurrent;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use payment_pipeline::Pipeline;

use crate::replay::App;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = circuit_env::start([payment_pipeline::CIRCUIT], app_from_env).await?;
    // Shared by every invocation for the life of the process, several at once on Lambda
    // Managed Instances (`AWS_LAMBDA_MAX_CONCURRENCY`; else one at a time).
    let app: &'static App = Box::leak(Box::new(app));
    run_concurrent(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        // breaker's `run_concurrent` scopes each invocation: guarded charges are abandoned
        // before its deadline (counted, their outcome parked as unknown) rather than dying
        // with it.
        let records = &event.payload.records;
        let left = event
            .context
            .deadline()
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        if let Err(error) = app.pipeline.check_lease(left) {
            // Every record stays in the queue (and reaches the DLQ): none is charged under
            // settings that could park a running charge as unknown.
            tracing::error!(%error, "invalid configuration: the batch is not charged");
            let mut response = SqsBatchResponse::default();
            for record in records {
                response.add_failure(record.message_id.clone().unwrap_or_default());
            }
            return Ok(response);
        }
        let outcome = app.replay(records, event.context.deadline()).await;
        tracing::info!(
            settled = outcome.done,
            deferred = outcome.deferred,
            failed = outcome.failures.len(),
            "batch replayed"
        );
        let mut response = SqsBatchResponse::default();
        for message_id in outcome.failures {
            response.add_failure(message_id);
        }
        Ok::<_, Error>(response)
    }))
    .await
}

/// Default `REPLAY_MAX_ORDER_AGE_SECS`: 7 days, half the queues' 14-day retention, so an
/// order that could not be charged for a week reaches the DLQ with a week to spare.
const DEFAULT_MAX_ORDER_AGE_SECS: u64 = 7 * 86_400;
/// Its maximum: 13 days, a day short of the retention, for the receives that move it to the DLQ.
const MAX_ORDER_AGE_SECS: u64 = 13 * 86_400;

/// The replay's settings, checked before the first invocation.
fn app_from_env(aws: &aws_config::SdkConfig) -> Result<App, String> {
    Ok(App {
        pipeline: Pipeline::from_env(aws)?,
        circuit: circuit_env::circuit_config(),
        max_failures: circuit_env::setting::number("REPLAY_MAX_FAILURES", 5, 1..=100)
            .map_err(|e| e.to_string())?,
        max_order_age: circuit_env::setting::secs(
            "REPLAY_MAX_ORDER_AGE_SECS",
            DEFAULT_MAX_ORDER_AGE_SECS,
            60..=MAX_ORDER_AGE_SECS,
        )
        .map_err(|e| e.to_string())?,
    })
}
