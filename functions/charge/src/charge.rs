//! One order: charged once through the ledger, or buffered for `overflow-replay` when it
//! cannot be charged now (circuit open, a transient failure, the ledger unavailable).

use std::time::Duration;

use lambda_runtime::Diagnostic;
use payment_pipeline::{BufferError, BufferReason, Charged, Order, PaymentError, Pipeline};
use serde_json::{Value, json};

/// The order could be neither charged nor buffered: the invocation fails, so Lambda
/// retries it and then hands it to the on-failure destination. Never dropped.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ChargeError(#[from] BufferError);

impl From<ChargeError> for Diagnostic {
    fn from(error: ChargeError) -> Self {
        Diagnostic {
            error_type: "BufferFailed".into(),
            error_message: error.to_string(),
        }
    }
}

/// Charges `order` once, or buffers it; answers in the API-Gateway style.
pub async fn charge(app: &Pipeline, order: &Order) -> Result<Value, ChargeError> {
    let charged = app.payments.charge_once(&app.ledger, order).await;
    match answer(&order.order_id, charged) {
        Ok(answer) => Ok(answer),
        Err(buffering) => buffer(app, order, buffering).await,
    }
}

/// Why an order that cannot be charged now is buffered, and for how long it stays hidden.
#[derive(Debug)]
struct Buffering {
    reason: BufferReason,
    opened_at: Option<u64>,
    delay: Duration,
}

impl Buffering {
    fn now(reason: BufferReason) -> Self {
        Self {
            reason,
            opened_at: None,
            delay: Duration::ZERO,
        }
    }
}

/// The answer to a settled charge, or how to buffer the order.
fn answer(id: &str, charged: Charged) -> Result<Value, Buffering> {
    match charged {
        Charged::Now(receipt) => Ok(json!({
            "statusCode": receipt.status,
            "order_id": id,
            "charged": true,
            "receipt": receipt.body,
        })),
        Charged::Before => {
            Ok(json!({"statusCode": 200, "order_id": id, "charged": true, "duplicate": true}))
        }
        Charged::Declined(PaymentError::Refused { status, body }) => {
            Ok(json!({"statusCode": status, "order_id": id, "declined": true, "error": body}))
        }
        Charged::Declined(other) => Ok(
            json!({"statusCode": 402, "order_id": id, "declined": true, "error": other.to_string()}),
        ),
        Charged::DeclinedBefore => Ok(
            json!({"statusCode": 409, "order_id": id, "declined": true, "duplicate": true, "error": "the order was declined before"}),
        ),
        Charged::InFlight { lease_until } => {
            let wait = lease_until.saturating_sub(payment_pipeline::clock::unix_now());
            Err(Buffering {
                delay: Duration::from_secs(wait),
                ..Buffering::now(BufferReason::InFlight)
            })
        }
        Charged::Unknown => Ok(json!({
            "statusCode": 502,
            "order_id": id,
            "outcome": "unknown",
            "error": "the payment API's answer was lost; the order is parked for reconciliation and will not be charged again automatically",
        })),
        Charged::CircuitOpen(open) => Err(Buffering {
            opened_at: open.circuit.opened_at,
            ..Buffering::now(BufferReason::CircuitOpen)
        }),
        Charged::Failed(error) => {
            tracing::warn!(order_id = %id, %error, "payment API failed; buffering the order");
            Err(Buffering::now(BufferReason::PaymentUnavailable))
        }
        Charged::LedgerUnavailable(error) => {
            tracing::warn!(order_id = %id, %error, "ledger unavailable; buffering the order");
            Err(Buffering::now(BufferReason::LedgerUnavailable))
        }
    }
}

/// Buffers the order for `overflow-replay`, answers 202.
async fn buffer(app: &Pipeline, order: &Order, how: Buffering) -> Result<Value, ChargeError> {
    let Buffering {
        reason,
        opened_at,
        delay,
    } = how;
    let message_id = app.overflow.buffer(order, reason, opened_at, delay).await?;
    tracing::info!(order_id = %order.order_id, reason = reason.as_str(), %message_id, "order buffered");
    let mut response = json!({
        "statusCode": 202,
        "buffered": true,
        "reason": reason.as_str(),
        "order_id": order.order_id,
        "message_id": message_id,
    });
    if reason == BufferReason::CircuitOpen {
        response["circuit"] = json!(payment_pipeline::CIRCUIT);
    }
    Ok(response)
}
