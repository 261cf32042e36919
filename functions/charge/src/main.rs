//! `charge`: charges an order through the payment API behind the `payment-backend` circuit.
//! While the circuit is open the order is not dropped: it is buffered to the overflow SQS
//! queue (answered with 202) and `overflow-replay` charges it once the circuit closes.
//!
//! Environment: `PAYMENT_API_URL`, `PAYMENT_TIMEOUT_MS`, `OVERFLOW_QUEUE_URL`,
//! `CIRCUIT_BREAKER_TABLE` and the `CIRCUIT_*` tunables of `circuit-env`.
#![forbid(unsafe_code)]

mod charge;
mod overflow;

use lambda_runtime::{Diagnostic, Error, LambdaEvent, run, service_fn};
use payment_client::{Order, PaymentClient};
use serde_json::{Value, json};

use crate::charge::{App, ChargeError, charge};
use crate::overflow::OverflowQueue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let queue_url =
        std::env::var("OVERFLOW_QUEUE_URL").map_err(|_| "OVERFLOW_QUEUE_URL is not set")?;
    let app = App {
        payments: PaymentClient::from_env()?,
        overflow: OverflowQueue::new(aws_sdk_sqs::Client::new(&aws), queue_url),
    };
    let _ = breaker_runtime::warm_up([payment_client::CIRCUIT]).await;
    let app = &app;
    run(service_fn(move |event: LambdaEvent<Value>| {
        handle(app, event.payload)
    }))
    .await
}

/// Validates, charges (or buffers), and answers in the API-Gateway style: a `statusCode`
/// for what the caller did wrong, an invocation error for what may succeed on a retry.
async fn handle(app: &App, event: Value) -> Result<Value, Diagnostic> {
    let order = match Order::from_payload(event) {
        Ok(order) => order,
        Err(invalid) => return Ok(json!({"statusCode": 400, "error": invalid.to_string()})),
    };
    match charge(app, &order).await {
        Ok(response) => Ok(response),
        Err(ChargeError::Refused { status, body }) => Ok(json!({
            "statusCode": status,
            "order_id": order.order_id,
            "error": body,
        })),
        Err(error) => {
            tracing::error!(order_id = %order.order_id, %error, "charge failed; the invocation fails so Lambda retries it");
            Err(error.into())
        }
    }
}
