//! One buffered order: parse it, then charge it through the `payment-backend` circuit
//! (the guarded call `charge` makes too, from `payment-client`).

use aws_lambda_events::event::sqs::SqsMessage;
use breaker_runtime::CircuitBreakerOpenError;
use payment_client::{GuardedPaymentError, InvalidOrder, Order, PaymentClient, PaymentError};

/// Why a record stays in the queue.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The circuit is open: the payment API was not called.
    #[error(transparent)]
    CircuitOpen(CircuitBreakerOpenError),
    /// The payment API failed or refused the order.
    #[error(transparent)]
    Payment(PaymentError),
    /// The body is not an order: it goes to the DLQ after `maxReceiveCount` for a human.
    #[error(transparent)]
    NotAnOrder(#[from] InvalidOrder),
}

/// An open circuit defers the record: it stays in the queue like a failed charge.
impl From<GuardedPaymentError> for ReplayError {
    fn from(error: GuardedPaymentError) -> Self {
        match error {
            GuardedPaymentError::CircuitOpen(open) => Self::CircuitOpen(open),
            GuardedPaymentError::Payment(payment) => Self::Payment(payment),
        }
    }
}

/// Returns the order id of the charged order.
pub async fn replay_record(
    payments: &PaymentClient,
    record: &SqsMessage,
) -> Result<String, ReplayError> {
    let body = record.body.as_deref().unwrap_or_default();
    let payload = serde_json::from_str(body)
        .map_err(|e| InvalidOrder(format!("the message body is not JSON: {e}")))?;
    let order = Order::from_payload(payload)?;
    payments.charge_guarded(&order).await?;
    Ok(order.order_id)
}
