//! The charge both functions make: once the `payment-backend` circuit admits it, claim the
//! order in the ledger, charge it, record the outcome. Whatever delivers an order twice
//! (SQS, an SDK retry, a Lambda retry, a redelivered batch), only one copy reaches the API;
//! a copy the circuit rejects writes nothing.

use breaker_runtime::{CallAbandonedError, CircuitBreakerOpenError};

use crate::ledger::{Ledger, LedgerError, Phase, Progress, Settlement};
use crate::order::Order;
use crate::payments::{PaymentClient, PaymentError, Receipt};

/// How a charge through the ledger ended.
#[derive(Debug)]
pub enum Charged {
    /// Charged now.
    Now(Receipt),
    /// Another copy charged it already: nothing sent.
    Before,
    /// The payment API declined this order now: recorded as declined. Final.
    Declined(PaymentError),
    /// Declined before: nothing sent.
    DeclinedBefore,
    /// Another attempt holds the order until this Unix second: try again later.
    InFlight {
        /// When its lease runs out.
        lease_until: u64,
    },
    /// The outcome of an attempt (this one or an earlier) is unknown: parked with its
    /// `PaymentOutcomeUnknown` metric, never charged blindly again.
    Unknown,
    /// The outcome is unknown and could not be parked (the ledger failed): the claim stays
    /// `in_progress` until `lease_until`. Keep the order (its record, a buffered copy): the
    /// copy that meets the expired claim parks it, with its metric.
    Unrecorded {
        /// When the claim's lease runs out.
        lease_until: u64,
    },
    /// The order id is taken by another order (another amount, currency or customer):
    /// nothing sent. Not a duplicate; a human decides.
    Conflict,
    /// The circuit is open: nothing sent, nothing written.
    CircuitOpen(CircuitBreakerOpenError),
    /// The guarded call was abandoned at its deadline; [`PaymentClient::charge_once`] turns
    /// it into what the attempt had reached (never returned by it).
    Abandoned(CallAbandonedError),
    /// Too little time was left to send the charge: nothing sent, the claim released.
    OutOfTime,
    /// The payment API failed without charging (5xx, 429, a systemic refusal,
    /// unreachable): the claim released.
    Failed(PaymentError),
    /// The ledger could not be read or written: nothing sent.
    LedgerUnavailable(LedgerError),
}

/// An admitted attempt that did not charge: the answer, and whether it counts against the
/// payment API's health (only an unwell API does, never the ledger or a duplicate).
#[derive(Debug)]
pub struct NotCharged {
    /// What became of the order.
    pub charged: Charged,
    /// True when the payment API failed: it counts toward opening the circuit.
    pub api_unwell: bool,
}

impl NotCharged {
    fn answer(charged: Charged) -> Self {
        Self {
            charged,
            api_unwell: false,
        }
    }
}

/// The circuit's classifier: only an unwell payment API counts toward opening.
pub fn payment_api_unwell(outcome: &NotCharged) -> bool {
    outcome.api_unwell
}

/// A rejection: the payment API was never called.
impl From<CircuitBreakerOpenError> for NotCharged {
    fn from(error: CircuitBreakerOpenError) -> Self {
        Self::answer(Charged::CircuitOpen(error))
    }
}

/// An abandoned call: it may have reached the payment API.
impl From<CallAbandonedError> for NotCharged {
    fn from(error: CallAbandonedError) -> Self {
        Self::answer(Charged::Abandoned(error))
    }
}

impl PaymentClient {
    /// Charges `order` at most once across every copy of it, through the ledger, behind
    /// the `payment-backend` circuit: the claim is written only once the circuit admitted
    /// the call.
    ///
    /// ```no_run
    /// # async fn demo(payments: payment_pipeline::PaymentClient, ledger: payment_pipeline::Ledger) {
    /// use payment_pipeline::{Charged, Order};
    /// let order = Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#).unwrap();
    /// match payments.charge_once(&ledger, &order).await {
    ///     Charged::Now(receipt) => println!("charged: {}", receipt.body),
    ///     Charged::Before => println!("a duplicate: nothing sent"),
    ///     other => println!("not charged now: {other:?}"),
    /// }
    /// # }
    /// ```
    pub async fn charge_once(&self, ledger: &Ledger, order: &Order) -> Charged {
        let progress = Progress::default();
        match self.charge_guarded(ledger, order, &progress).await {
            Ok(receipt) => Charged::Now(receipt),
            Err(NotCharged {
                charged: Charged::Abandoned(error),
                ..
            }) => settle_abandoned(ledger, order, &progress, &error).await,
            Err(not_charged) => not_charged.charged,
        }
    }
}

/// What an attempt dropped at its deadline left behind, settled: a claim never sent is
/// released, a charge sent is parked as `unknown`, an answer being recorded is recorded.
/// `progress` is the one the abandoned attempt wrote.
pub async fn settle_abandoned(
    ledger: &Ledger,
    order: &Order,
    progress: &Progress,
    error: &CallAbandonedError,
) -> Charged {
    let (attempt, settlement, detail) = match progress.phase() {
        Phase::Idle => return Charged::OutOfTime,
        Phase::Claiming(attempt) => (attempt, Settlement::NotCharged, String::new()),
        Phase::Sending(attempt) => (
            attempt,
            Settlement::Unknown,
            format!("charge outcome unknown: {error}"),
        ),
        Phase::Settling(attempt, settlement, detail) => (attempt, settlement, detail),
    };
    if settlement == Settlement::Unknown {
        tracing::error!(order_id = %order.order_id, %error, "charge abandoned at its deadline, outcome unknown: parked in the ledger");
    }
    match (
        ledger.settle(&attempt, settlement, &detail).await,
        settlement,
    ) {
        (Ok(()), Settlement::Charged) => Charged::Before,
        (Ok(()), Settlement::Declined) => Charged::DeclinedBefore,
        (Ok(()), Settlement::Unknown) => Charged::Unknown,
        (Ok(()), Settlement::NotCharged) => Charged::OutOfTime,
        (Err(error), Settlement::NotCharged) => {
            tracing::warn!(order_id = %order.order_id, %error, "could not release a claim abandoned before sending");
            Charged::OutOfTime
        }
        (Err(error), _) => {
            tracing::error!(order_id = %order.order_id, ?settlement, %error, "could not record the outcome of an abandoned charge: the order is kept");
            Charged::Unrecorded {
                lease_until: attempt.lease_until,
            }
        }
    }
}
