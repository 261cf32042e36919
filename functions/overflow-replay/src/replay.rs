//! One buffered order: parse it, then charge it through the `payment-backend` circuit.

use aws_lambda_events::event::sqs::SqsMessage;
use breaker_runtime::{CircuitBreakerOpenError, circuit_breaker};
use payment_client::{InvalidOrder, Order, PaymentClient, PaymentError, Receipt};

/// Why a record stays in the queue.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The circuit is open: the payment API was not called.
    #[error(transparent)]
    CircuitOpen(#[from] CircuitBreakerOpenError),
    /// The payment API failed or refused the order.
    #[error(transparent)]
    Payment(#[from] PaymentError),
    /// The body is not an order: it goes to the DLQ after `maxReceiveCount` for a human.
    #[error(transparent)]
    NotAnOrder(#[from] InvalidOrder),
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
    charge(payments, &order).await?;
    Ok(order.order_id)
}

/// Only an unwell payment API counts toward opening the circuit.
fn payment_api_unwell(error: &ReplayError) -> bool {
    matches!(error, ReplayError::Payment(e) if e.is_downstream_failure())
}

/// The same circuit as `charge`: the two functions share its state through DynamoDB.
#[circuit_breaker(
    name = "payment-backend",
    config = circuit_env::circuit_config(),
    handled = payment_api_unwell,
    on_transition = breaker_runtime::emf::log_transition
)]
async fn charge(payments: &PaymentClient, order: &Order) -> Result<Receipt, ReplayError> {
    Ok(payments.charge(order).await?)
}
