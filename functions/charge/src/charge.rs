//! One order: charged once through the ledger, or buffered for `overflow-replay` when it
//! cannot be charged now (circuit open, a transient failure, the ledger unavailable).

use std::time::Duration;

use lambda_runtime::Diagnostic;
use payment_client::{BufferError, BufferReason, Charged, Order, PaymentError, Pipeline};
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
    let id = &order.order_id;
    match app.payments.charge_once(&app.ledger, order).await {
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
            let wait = lease_until.saturating_sub(payment_client::ledger::unix_now());
            buffer(
                app,
                order,
                BufferReason::InFlight,
                None,
                Duration::from_secs(wait),
            )
            .await
        }
        Charged::Unknown => Ok(json!({
            "statusCode": 502,
            "order_id": id,
            "outcome": "unknown",
            "error": "the payment API's answer was lost; the order is parked for reconciliation and will not be charged again automatically",
        })),
        Charged::CircuitOpen(open) => {
            buffer(
                app,
                order,
                BufferReason::CircuitOpen,
                open.circuit.opened_at,
                Duration::ZERO,
            )
            .await
        }
        Charged::Failed(error) => {
            tracing::warn!(order_id = %id, %error, "payment API failed; buffering the order");
            buffer(
                app,
                order,
                BufferReason::PaymentUnavailable,
                None,
                Duration::ZERO,
            )
            .await
        }
        Charged::LedgerUnavailable(error) => {
            tracing::warn!(order_id = %id, %error, "ledger unavailable; buffering the order");
            buffer(
                app,
                order,
                BufferReason::LedgerUnavailable,
                None,
                Duration::ZERO,
            )
            .await
        }
    }
}

/// Buffers the order for `overflow-replay`, answers 202.
async fn buffer(
    app: &Pipeline,
    order: &Order,
    reason: BufferReason,
    opened_at: Option<u64>,
    delay: Duration,
) -> Result<Value, ChargeError> {
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
        response["circuit"] = json!(payment_client::CIRCUIT);
    }
    Ok(response)
}
