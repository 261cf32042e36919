//! The charge both functions make: claim the order in the ledger, charge it through the
//! `payment-backend` circuit, record the outcome. Whatever delivers an order twice (SQS,
//! an SDK retry, a Lambda retry, a redelivered batch), only one copy reaches the API.

use breaker_runtime::CircuitBreakerOpenError;

use crate::ledger::{Claim, Ledger, LedgerError, Settlement};
use crate::order::Order;
use crate::payments::{GuardedPaymentError, PaymentClient, PaymentError, Receipt};

/// How a charge through the ledger ended.
#[derive(Debug)]
pub enum Charged {
    /// Charged now.
    Now(Receipt),
    /// Another copy charged it already: nothing sent.
    Before,
    /// The payment API refused it now (4xx other than 429): recorded as declined. Final.
    Declined(PaymentError),
    /// Declined before: nothing sent.
    DeclinedBefore,
    /// Another attempt holds the order until this Unix second: try again later.
    InFlight {
        /// When its lease runs out.
        lease_until: u64,
    },
    /// The outcome of an attempt (this one or an earlier) is unknown: parked with an alarm,
    /// never charged blindly again.
    Unknown,
    /// The circuit is open: nothing sent, the claim released.
    CircuitOpen(CircuitBreakerOpenError),
    /// The payment API failed without charging (5xx, 429, unreachable): the claim released.
    Failed(PaymentError),
    /// The ledger could not be read or written: nothing sent.
    LedgerUnavailable(LedgerError),
}

impl PaymentClient {
    /// Charges `order` at most once across every copy of it, through the ledger.
    ///
    /// ```no_run
    /// # async fn demo(payments: payment_pipeline::PaymentClient, ledger: payment_pipeline::Ledger) {
    /// use payment_pipeline::{Charged, Order};
    /// let order = Order::from_payload(serde_json::json!({"order_id": "o-1", "amount": 5, "currency": "EUR"})).unwrap();
    /// match payments.charge_once(&ledger, &order).await {
    ///     Charged::Now(receipt) => println!("charged: {}", receipt.body),
    ///     Charged::Before => println!("a duplicate: nothing sent"),
    ///     other => println!("not charged now: {other:?}"),
    /// }
    /// # }
    /// ```
    pub async fn charge_once(&self, ledger: &Ledger, order: &Order) -> Charged {
        let attempt = match ledger.claim(&order.order_id).await {
            Ok(Claim::Claimed(attempt)) => attempt,
            Ok(Claim::Charged) => return Charged::Before,
            Ok(Claim::Declined) => return Charged::DeclinedBefore,
            Ok(Claim::InFlight { lease_until }) => return Charged::InFlight { lease_until },
            Ok(Claim::Unknown) => return Charged::Unknown,
            Err(error) => return Charged::LedgerUnavailable(error),
        };
        let (outcome, detail, charged) = match self.charge_guarded(order).await {
            Ok(receipt) => (
                Settlement::Charged,
                receipt.body.to_string(),
                Charged::Now(receipt),
            ),
            Err(GuardedPaymentError::CircuitOpen(open)) => (
                Settlement::NotCharged,
                String::new(),
                Charged::CircuitOpen(open),
            ),
            Err(error @ GuardedPaymentError::Abandoned(_)) => {
                tracing::error!(order_id = %order.order_id, %error, "charge abandoned at its deadline, outcome unknown: parked in the ledger");
                (Settlement::Unknown, error.to_string(), Charged::Unknown)
            }
            Err(GuardedPaymentError::Payment(error @ PaymentError::Refused { .. })) => (
                Settlement::Declined,
                error.to_string(),
                Charged::Declined(error),
            ),
            Err(GuardedPaymentError::Payment(error)) if error.outcome_known() => (
                Settlement::NotCharged,
                error.to_string(),
                Charged::Failed(error),
            ),
            Err(GuardedPaymentError::Payment(error)) => {
                tracing::error!(order_id = %order.order_id, %error, "charge outcome unknown: parked in the ledger");
                (Settlement::Unknown, error.to_string(), Charged::Unknown)
            }
        };
        if let Err(error) = ledger.settle(&attempt, outcome, &detail).await {
            // The claim stays in progress; once its lease runs out the order is parked as
            // unknown (alarmed), which is safe whatever happened.
            tracing::error!(order_id = %order.order_id, ?outcome, %error, "could not record the outcome in the ledger");
        }
        charged
    }
}
