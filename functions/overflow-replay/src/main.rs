//! `overflow-replay`: drains the orders `charge` buffered to SQS. Each record is charged
//! once through the ledger and the same `payment-backend` circuit; while the circuit is
//! open, or when the invocation's remaining time is too short to start another record, the
//! record is deferred: sent again with a delay (until the circuit may admit a probe, at
//! most 900 s) and deleted, so waiting never spends its receive budget. A failed charge
//! (5xx, 429, unreachable, the ledger unavailable) is deferred too, with a doubling delay,
//! up to `REPLAY_MAX_FAILURES` times in a row (default 5; meeting the open circuit starts
//! the count over). A refusal (4xx other than 429) is final: recorded as declined and
//! deleted. Only a record that fails on its own (not an order, a charge that failed too
//! often) is reported as a batch item failure, and reaches the DLQ after `maxReceiveCount`.
//!
//! Environment (docs/functions.md): `PAYMENT_API_URL`, `PAYMENT_TIMEOUT_MS`,
//! `OVERFLOW_QUEUE_URL`, `SQS_OPERATION_TIMEOUT_MS`, `LEDGER_TABLE`, `LEDGER_*`,
//! `REPLAY_MAX_FAILURES`, `CIRCUIT_BREAKER_TABLE` and the `CIRCUIT_*` tunables of
//! `circuit-env`. The event source mapping needs `FunctionResponseTypes:
//! [ReportBatchItemFailures]`.
#![forbid(unsafe_code)]

mod replay;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use breaker_runtime::deadline;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use payment_pipeline::Pipeline;

use crate::replay::App;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = circuit_env::start([payment_pipeline::CIRCUIT], app_from_env).await?;
    let app = &app;
    run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        // Guarded charges are abandoned before the invocation's deadline (counted, their
        // outcome parked as unknown) rather than dying with it.
        let records = &event.payload.records;
        let replay = app.replay(records, event.context.deadline());
        let outcome = deadline::scope(event.context.deadline, replay).await;
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

/// The replay's settings, checked before the first invocation.
fn app_from_env(aws: &aws_config::SdkConfig) -> Result<App, String> {
    Ok(App {
        pipeline: Pipeline::from_env(aws)?,
        circuit: circuit_env::circuit_config(),
        max_failures: circuit_env::setting::number("REPLAY_MAX_FAILURES", 5, 1..=100)
            .map_err(|e| e.to_string())?,
    })
}
