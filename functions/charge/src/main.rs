//! `charge`: charges an order through the payment API behind the `payment-backend` circuit,
//! once: a conditional write in the ledger table guards every charge. An order that cannot
//! be charged now (circuit open, a 5xx/429/unreachable API, the ledger unavailable) is not
//! dropped: it is buffered to the overflow SQS queue (answered with 202) and
//! `overflow-replay` charges it later. Only when SQS fails too does the invocation fail, so
//! Lambda retries it and then hands it to the on-failure destination.
//!
//! Environment (docs/functions.md): `PAYMENT_API_URL`, `PAYMENT_TIMEOUT_MS`,
//! `OVERFLOW_QUEUE_URL`, `SQS_OPERATION_TIMEOUT_MS`, `LEDGER_TABLE`, `LEDGER_*`,
//! `CIRCUIT_BREAKER_TABLE` and the `CIRCUIT_*` tunables of `circuit-env`. An invalid value
//! stops the function at start, naming the variable and the value.
#![forbid(unsafe_code)]

mod charge;

use breaker_runtime::deadline;
use lambda_runtime::{Diagnostic, Error, LambdaEvent, run, service_fn};
use payment_pipeline::{Order, Pipeline};
use serde_json::{Value, json};

use crate::charge::charge;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = circuit_env::start([payment_pipeline::CIRCUIT], Pipeline::from_env).await?;
    let app = &app;
    // Guarded calls are abandoned before the invocation's deadline, so a hung payment API
    // counts as a failure (and its trip is written) instead of dying with the invocation.
    run(service_fn(move |event: LambdaEvent<Value>| {
        deadline::scope(event.context.deadline, handle(app, event.payload))
    }))
    .await
}

/// Validates, then charges or buffers: a `statusCode` for what the caller did wrong, an
/// invocation error only when the order could not be kept anywhere.
async fn handle(app: &Pipeline, event: Value) -> Result<Value, Diagnostic> {
    let order = match Order::from_payload(event) {
        Ok(order) => order,
        Err(invalid) => return Ok(json!({"statusCode": 400, "error": invalid.to_string()})),
    };
    charge(app, &order).await.map_err(|error| {
        tracing::error!(order_id = %order.order_id, %error, "neither charged nor buffered; the invocation fails so Lambda retries it");
        error.into()
    })
}
