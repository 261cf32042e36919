//! How a charge ends: what an admitted attempt answers ([`Charged`], inside [`NotCharged`]
//! when there is no receipt) and what the guarded call adds around it, a rejection or an
//! abandonment ([`GuardedError`]). Whatever delivers an order twice (SQS, an SDK retry, a
//! Lambda retry, a redelivered batch), only one copy reaches the API.

use breaker_runtime::{CallAbandonedError, CircuitBreakerOpenError, Outcome};

use super::answer::{PaymentError, Receipt};
use crate::ledger::LedgerError;

/// How an admitted charge through the ledger ended.
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

/// The circuit's classifier: only an unwell payment API counts toward opening.
pub fn payment_api_unwell(outcome: &NotCharged) -> bool {
    outcome.api_unwell
}

/// Why [`charge_guarded`](crate::PaymentClient::charge_guarded) gave no receipt: the
/// circuit's answer around the attempt, or the admitted attempt's own.
#[derive(Debug)]
pub enum GuardedError {
    /// The circuit is open: nothing sent, nothing written.
    CircuitOpen(CircuitBreakerOpenError),
    /// Abandoned at its deadline: it may have reached the payment API, so what it left
    /// behind is settled with [`settle_abandoned`](crate::settle_abandoned).
    Abandoned(CallAbandonedError),
    /// Admitted, and not charged.
    Attempt(NotCharged),
}

/// A rejection: the payment API was never called.
impl From<CircuitBreakerOpenError> for GuardedError {
    fn from(error: CircuitBreakerOpenError) -> Self {
        Self::CircuitOpen(error)
    }
}

/// An abandoned call: it may have reached the payment API.
impl From<CallAbandonedError> for GuardedError {
    fn from(error: CallAbandonedError) -> Self {
        Self::Abandoned(error)
    }
}

/// The guarded call's classifier: only an admitted attempt's unwell payment API counts
/// (the breaker counts an abandonment itself), and a 429 or 503 that says `Retry-After`
/// opens the circuit for that long, for every function sharing it.
pub(crate) fn guarded_api_unwell(error: &GuardedError) -> Outcome {
    match error {
        GuardedError::Attempt(attempt) => payment_api_verdict(attempt),
        _ => Outcome::Ignored,
    }
}

/// What an admitted attempt that did not charge tells the circuit: nothing unless the
/// payment API was unwell ([`payment_api_unwell`]); a failure; when the API answered a 429
/// or 503 with `Retry-After`, a failure that opens the circuit for that long
/// ([`Outcome::OpenFor`]), for every function sharing it; and a 429 or 503 without one, a
/// load shed ([`Outcome::Overloaded`]: a failure under the default policy, a share of calls
/// shed under the adaptive one).
pub fn payment_api_verdict(outcome: &NotCharged) -> Outcome {
    if !payment_api_unwell(outcome) {
        return Outcome::Ignored;
    }
    match &outcome.charged {
        Charged::Failed(failed) => match (failed.retry_after(), failed.is_load_shed()) {
            (Some(asked), _) => Outcome::OpenFor(asked),
            (None, true) => Outcome::Overloaded,
            (None, false) => Outcome::Failure,
        },
        _ => Outcome::Failure,
    }
}
