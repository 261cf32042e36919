//! The charge and what it does while the circuit is open.

use breaker_runtime::CircuitInfo;
use lambda_runtime::Diagnostic;
use payment_client::{GuardedPaymentError, Order, PaymentClient, PaymentError};
use serde_json::{Value, json};

use crate::overflow::{BufferError, OverflowQueue};

/// What every invocation shares: built once in `main`.
#[derive(Debug)]
pub struct App {
    pub payments: PaymentClient,
    pub overflow: OverflowQueue,
}

/// Why an order was neither charged nor buffered.
#[derive(Debug, thiserror::Error)]
pub enum ChargeError {
    /// The payment API is unwell (5xx, 429, timeout, unreachable): counts toward opening.
    #[error(transparent)]
    Unavailable(PaymentError),
    /// The payment API refused this order (4xx): says nothing about its health.
    #[error("payment API refused the order: HTTP {status}")]
    Refused { status: u16, body: String },
    /// The circuit is open and the order could not be buffered either.
    #[error(transparent)]
    Buffer(#[from] BufferError),
}

impl From<PaymentError> for ChargeError {
    fn from(error: PaymentError) -> Self {
        match error {
            PaymentError::Refused { status, body } => Self::Refused { status, body },
            unwell => Self::Unavailable(unwell),
        }
    }
}

impl From<ChargeError> for Diagnostic {
    fn from(error: ChargeError) -> Self {
        let error_type = match &error {
            ChargeError::Unavailable(_) => "PaymentUnavailable",
            ChargeError::Refused { .. } => "PaymentRefused",
            ChargeError::Buffer(_) => "BufferFailed",
        };
        Diagnostic {
            error_type: error_type.into(),
            error_message: error.to_string(),
        }
    }
}

/// Charges `order` through the shared `payment-backend` circuit; the order id is the
/// idempotency key. While the circuit is open the order is buffered instead.
pub async fn charge(app: &App, order: &Order) -> Result<Value, ChargeError> {
    let receipt = match app.payments.charge_guarded(order).await {
        Ok(receipt) => receipt,
        Err(GuardedPaymentError::CircuitOpen(open)) => {
            return buffer_order(app, order, open.circuit).await;
        }
        Err(GuardedPaymentError::Payment(error)) => return Err(error.into()),
    };
    Ok(json!({
        "statusCode": receipt.status,
        "order_id": order.order_id,
        "charged": true,
        "receipt": receipt.body,
    }))
}

/// While the circuit is open: buffer the order for `overflow-replay`, answer 202.
async fn buffer_order(
    app: &App,
    order: &Order,
    circuit: CircuitInfo,
) -> Result<Value, ChargeError> {
    let message_id = app.overflow.buffer(order, &circuit).await?;
    tracing::info!(order_id = %order.order_id, circuit = %circuit.name, %message_id, "circuit open: order buffered");
    Ok(json!({
        "statusCode": 202,
        "circuit": circuit.name,
        "buffered": true,
        "order_id": order.order_id,
        "message_id": message_id,
    }))
}
