//! `overflow-replay`: drains the orders `charge` buffered to SQS while `payment-backend`
//! was open. Each record goes through the same circuit: while it is open every record is
//! reported as a batch item failure without calling the payment API (SQS redelivers it
//! later, or moves it to the DLQ after `maxReceiveCount`); once closed, each order is
//! charged with its order id as idempotency key and failures are reported one by one.
//!
//! Environment: `PAYMENT_API_URL`, `PAYMENT_TIMEOUT_MS`, `CIRCUIT_BREAKER_TABLE` and the
//! `CIRCUIT_*` tunables of `circuit-env`. The event source mapping needs
//! `FunctionResponseTypes: [ReportBatchItemFailures]`.
#![forbid(unsafe_code)]

mod replay;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use payment_client::PaymentClient;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let payments = PaymentClient::from_env()?;
    let _ = breaker_runtime::warm_up([payment_client::CIRCUIT]).await;
    let payments = &payments;
    run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        handle(payments, event.payload)
    }))
    .await
}

/// Replays the records in order; a failed record never fails the batch, only itself.
async fn handle(payments: &PaymentClient, event: SqsEvent) -> Result<SqsBatchResponse, Error> {
    let mut response = SqsBatchResponse::default();
    let (mut charged, mut failed) = (0_usize, 0_usize);
    for record in &event.records {
        let message_id = record.message_id.clone().unwrap_or_default();
        match replay::replay_record(payments, record).await {
            Ok(order_id) => {
                charged += 1;
                tracing::info!(%message_id, %order_id, "buffered order charged");
            }
            Err(error) => {
                failed += 1;
                tracing::warn!(%message_id, %error, "record left in the queue");
                response.add_failure(message_id);
            }
        }
    }
    tracing::info!(charged, failed, "batch replayed");
    Ok(response)
}
