//! What a guarded charge abandoned at its deadline left behind, settled from the
//! [`Progress`] it wrote: a claim never sent is released, a charge sent is parked as
//! `unknown` (never sent again), an answer being recorded is recorded.

use breaker_runtime::CallAbandonedError;

use super::outcome::Charged;
use crate::ledger::{Ledger, Phase, Progress, Settlement};
use crate::order::Order;

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
