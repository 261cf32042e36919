//! One order: charged once through the ledger behind the `payment-backend` circuit, or
//! buffered for `overflow-replay` when it cannot be charged now (circuit open, a transient
//! failure, the ledger unavailable). While the circuit is open the attribute's
//! `on_circuit_open` buffers it: nothing is written to the ledger, the API is not called.
//! A charge abandoned at its deadline is not the callback's: it may have reached the API, so
//! what it left behind is settled (a charge sent is parked as `unknown`), never buffered.
//!
//! In the order an order travels: [`charge_or_buffer`], the guarded [`charge`] (or, while
//! open, [`buffer_order`]), then [`answer`] for an attempt that did not charge, and
//! [`buffer`] for one that must wait.

use std::time::Duration;

use breaker_runtime::{CallAbandonedError, CircuitInfo, Outcome, circuit_breaker};
use lambda_runtime::Diagnostic;
use payment_pipeline::{
    BufferError, BufferReason, Charged, NotCharged, Order, PaymentError, Pipeline, Progress,
};
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
pub async fn charge_or_buffer(app: &Pipeline, order: &Order) -> Result<Value, ChargeError> {
    let progress = Progress::default();
    let charged = match charge(app, order, &progress).await {
        Ok(answer) => return Ok(answer),
        Err(Unsettled::Buffer(error)) => return Err(error.into()),
        Err(Unsettled::Abandoned(error)) => {
            payment_pipeline::settle_abandoned(&app.ledger, order, &progress, &error).await
        }
        Err(Unsettled::Attempt(attempt)) => attempt.charged,
    };
    match answer(&order.order_id, charged) {
        Ok(answer) => Ok(answer),
        Err(buffering) => Ok(buffer(app, order, buffering).await?),
    }
}

/// Why [`charge`] did not answer: the attempt's outcome, or the buffering that failed.
#[derive(Debug)]
enum Unsettled {
    /// Admitted, not charged: what the ledger or the API answered.
    Attempt(NotCharged),
    /// Abandoned at its deadline: it may have reached the API, so what it left behind is
    /// settled ([`charge_or_buffer`]), never buffered.
    Abandoned(CallAbandonedError),
    /// Open, and SQS did not take the order.
    Buffer(BufferError),
}

/// The breaker answers an abandoned call with this error, not with the callback.
impl From<CallAbandonedError> for Unsettled {
    fn from(error: CallAbandonedError) -> Self {
        Self::Abandoned(error)
    }
}

/// Only an unwell payment API counts toward opening (5xx, 429, systemic refusals, timeouts,
/// unreachable); never a decline, a duplicate, the ledger or SQS. A 429 or 503 with
/// `Retry-After` opens the circuit for that long, for every function sharing it.
fn payment_api_unwell(outcome: &Unsettled) -> Outcome {
    match outcome {
        Unsettled::Attempt(attempt) => payment_pipeline::payment_api_verdict(attempt),
        _ => Outcome::Ignored,
    }
}

/// Charges `order` once: the ledger's claim, the payment call, the record of its outcome,
/// all only once the circuit admitted the call. `progress` says how far it got, for the
/// caller of a charge abandoned at its deadline.
#[circuit_breaker(
    name = "payment-backend",
    on_circuit_open = buffer_order,
    config = circuit_env::circuit_config(),
    handled = payment_api_unwell,
    on_transition = breaker_runtime::emf::log_transition
)]
async fn charge(app: &Pipeline, order: &Order, progress: &Progress) -> Result<Value, Unsettled> {
    let receipt = app
        .payments
        .charge_admitted(&app.ledger, order, progress)
        .await
        .map_err(Unsettled::Attempt)?;
    Ok(json!({
        "statusCode": receipt.status,
        "order_id": order.order_id,
        "charged": true,
        "receipt": receipt.body,
    }))
}

/// Runs instead of [`charge`] while the circuit is open: the order is buffered, nothing is lost.
async fn buffer_order(
    app: &Pipeline,
    order: &Order,
    _progress: &Progress,
    circuit: CircuitInfo,
) -> Result<Value, Unsettled> {
    let buffering = Buffering {
        opened_at: circuit.opened_at_unix_secs,
        ..Buffering::now(BufferReason::CircuitOpen)
    };
    buffer(app, order, buffering)
        .await
        .map_err(Unsettled::Buffer)
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

    fn until(reason: BufferReason, unix_secs: u64) -> Self {
        let wait = unix_secs.saturating_sub(payment_pipeline::clock::unix_now());
        Self {
            delay: Duration::from_secs(wait),
            ..Self::now(reason)
        }
    }
}

/// The answer to a settled attempt, or how to buffer the order.
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
        Charged::Declined(PaymentError::Declined { status, code, body }) => Ok(
            json!({"statusCode": status, "order_id": id, "declined": true, "code": code, "error": body}),
        ),
        Charged::Declined(other) => Ok(
            json!({"statusCode": 402, "order_id": id, "declined": true, "error": other.to_string()}),
        ),
        Charged::DeclinedBefore => Ok(
            json!({"statusCode": 409, "order_id": id, "declined": true, "duplicate": true, "error": "the order was declined before"}),
        ),
        Charged::Conflict => {
            payment_pipeline::rejected::log_rejected(
                payment_pipeline::rejected::Rejection::Conflict,
                Some(id),
                "the order id belongs to another order",
            );
            Ok(json!({
            "statusCode": 409,
            "order_id": id,
            "conflict": true,
            "error": "this order id belongs to another order (another amount, currency or customer); nothing was charged",
            }))
        }
        Charged::InFlight { lease_until } => {
            Err(Buffering::until(BufferReason::InFlight, lease_until))
        }
        Charged::Unknown => Ok(unknown(id)),
        Charged::Unrecorded { lease_until } => Err(Buffering::until(
            BufferReason::OutcomeUnrecorded,
            lease_until,
        )),
        Charged::OutOfTime => Err(Buffering::now(BufferReason::OutOfTime)),
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

fn unknown(id: &str) -> Value {
    json!({
        "statusCode": 502,
        "order_id": id,
        "outcome": "unknown",
        "error": "the payment API's answer was lost; the order is parked for reconciliation and will not be charged again automatically",
    })
}

/// Buffers the order for `overflow-replay`; answers 202 (502 for an outcome unknown).
async fn buffer(app: &Pipeline, order: &Order, how: Buffering) -> Result<Value, BufferError> {
    let Buffering {
        reason,
        opened_at,
        delay,
    } = how;
    let message_id = app.overflow.buffer(order, reason, opened_at, delay).await?;
    tracing::info!(order_id = %order.order_id, reason = reason.as_str(), %message_id, "order buffered");
    let mut response = match reason {
        BufferReason::OutcomeUnrecorded => unknown(&order.order_id),
        _ => json!({"statusCode": 202}),
    };
    response["buffered"] = json!(true);
    response["reason"] = json!(reason.as_str());
    response["order_id"] = json!(order.order_id);
    response["message_id"] = json!(message_id);
    if reason == BufferReason::CircuitOpen {
        response["circuit"] = json!(payment_pipeline::CIRCUIT);
    }
    Ok(response)
}
