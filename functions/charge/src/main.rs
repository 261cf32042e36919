//! `charge`: charges an order through the payment API behind the `payment-backend` circuit,
//! once: a conditional write in the ledger table, made only once the circuit admitted the
//! call, guards every charge. An order that cannot be charged now (circuit open: the
//! attribute's `on_circuit_open`; a failing API, the ledger unavailable) is not dropped: it
//! is buffered to the overflow SQS queue (answered with 202) and `overflow-replay` charges
//! it later. Only when SQS fails too does the invocation fail, so
//! Lambda retries it and then hands it to the on-failure destination.
//!
//! Environment (docs/functions.md): `PAYMENT_API_URL`, `PAYMENT_API_ALLOW_HTTP_HOST`,
//! `PAYMENT_TIMEOUT_MS`,
//! `OVERFLOW_QUEUE_URL`, `SQS_OPERATION_TIMEOUT_MS`, `LEDGER_TABLE`, `LEDGER_*`,
//! `CIRCUIT_BREAKER_TABLE` and the `CIRCUIT_*` tunables of `circuit-env`. An invalid value
//! stops the function at start, naming the variable and the value.
#![forbid(unsafe_code)]

mod charge;

use std::time::Duration;

use breaker_runtime::lambda::run_concurrent;
use lambda_runtime::{Diagnostic, Error, LambdaEvent, service_fn};
use payment_pipeline::rejected::{Rejection, log_rejected};
use payment_pipeline::{Order, Pipeline};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::charge::charge_or_buffer;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = circuit_env::start([payment_pipeline::CIRCUIT], Pipeline::from_env).await?;
    // Shared by every invocation for the life of the process, several at once on Lambda
    // Managed Instances.
    let app: &'static Pipeline = Box::leak(Box::new(app));
    // breaker's `run_concurrent` bounds each charge by its own invocation's deadline (its
    // scope), so a hung payment API times out, counts as a failure and is parked before the
    // invocation ends. It runs `AWS_LAMBDA_MAX_CONCURRENCY` invocations at once where Lambda
    // sets it (Managed Instances), else one at a time. The event stays raw text: the amount
    // is forwarded exactly as the caller wrote it.
    run_concurrent(service_fn(move |event: LambdaEvent<Box<RawValue>>| {
        handle(app, event.payload, event.context.deadline)
    }))
    .await
}

/// Validates, then charges or buffers: a `statusCode` for what the caller did wrong, an
/// invocation error only when the order could not be kept anywhere (or the settings
/// contradict the function timeout, which only the deadline tells).
async fn handle(app: &Pipeline, event: Box<RawValue>, deadline: u64) -> Result<Value, Diagnostic> {
    let left = deadline.saturating_sub(payment_pipeline::clock::unix_millis());
    if let Err(error) = app.check_lease(Duration::from_millis(left)) {
        tracing::error!(%error, "invalid configuration: the order is not charged, the invocation fails");
        return Err(Diagnostic {
            error_type: "InvalidConfiguration".into(),
            error_message: error,
        });
    }
    let order = match Order::parse(event.get()) {
        Ok(order) => order,
        Err(invalid) => {
            // Kept nowhere: for an asynchronous invocation the answer is discarded, so the
            // log line and the metric are its only trace.
            let order_id = serde_json::from_str::<Value>(event.get())
                .ok()
                .and_then(|event| event.get("order_id")?.as_str().map(str::to_owned));
            log_rejected(
                Rejection::Invalid,
                order_id.as_deref(),
                &invalid.to_string(),
            );
            return Ok(json!({"statusCode": 400, "error": invalid.to_string()}));
        }
    };
    charge_or_buffer(app, &order).await.map_err(|error| {
        tracing::error!(order_id = %order.order_id, %error, "neither charged nor buffered; the invocation fails so Lambda retries it");
        error.into()
    })
}
