//! What runs once the `payment-backend` circuit admitted a charge: the ledger's claim, the
//! payment call bounded by what is left of the claim's lease and of the invocation, and the
//! record of its outcome. Both guarded calls (`charge`'s, with its `on_circuit_open`, and
//! [`PaymentClient::charge_guarded`]) run this body, so a rejected call writes nothing.

use std::time::Duration;

use breaker_runtime::deadline;

use super::answer::{PaymentError, Receipt};
use super::client::PaymentClient;
use super::outcome::{Charged, NotCharged};
use crate::clock::unix_millis;
use crate::ledger::{Claim, Ledger, Phase, Progress, Settlement};
use crate::order::Order;

/// Least time worth sending a charge with: below it the claim is released unsent.
pub const MIN_SEND_TIME: Duration = Duration::from_millis(100);

impl PaymentClient {
    /// Claims `order`, charges it, records the outcome; call it only once the circuit
    /// admitted the call. `progress` says how far it got, for a caller that drops it.
    pub async fn charge_admitted(
        &self,
        ledger: &Ledger,
        order: &Order,
        progress: &Progress,
    ) -> Result<Receipt, NotCharged> {
        let answer = |charged| {
            Err(NotCharged {
                charged,
                api_unwell: false,
            })
        };
        let attempt = match ledger.claim(order, progress).await {
            Ok(Claim::Claimed(attempt)) => attempt,
            Ok(Claim::Charged) => return answer(Charged::Before),
            Ok(Claim::Declined) => return answer(Charged::DeclinedBefore),
            Ok(Claim::InFlight { lease_until }) => {
                return answer(Charged::InFlight { lease_until });
            }
            Ok(Claim::Unknown) => return answer(Charged::Unknown),
            Ok(Claim::Conflict) => return answer(Charged::Conflict),
            Err(error) => return answer(Charged::LedgerUnavailable(error)),
        };
        let margin = circuit_env::circuit_config().deadline_margin();
        let bound = send_bound(
            unix_millis(),
            attempt.lease_until,
            deadline::current_unix_millis(),
            ledger.timeout(),
            margin,
        );
        let Some(bound) = bound else {
            tracing::info!(order_id = %order.order_id, "too little time left to send the charge: claim released");
            if let Err(error) = ledger.settle(&attempt, Settlement::NotCharged, "").await {
                tracing::warn!(order_id = %order.order_id, %error, "could not release an unsent claim");
            }
            return answer(Charged::OutOfTime);
        };
        progress.set(Phase::Sending(attempt.clone()));
        let (settlement, detail, outcome) = match self.charge_within(order, bound).await {
            Ok(receipt) => (Settlement::Charged, receipt.reference(), Ok(receipt)),
            Err(error @ PaymentError::Declined { .. }) => (
                Settlement::Declined,
                error.to_string(),
                answer(Charged::Declined(error)),
            ),
            Err(error) if error.outcome_known() => {
                let api_unwell = self.counts_against_api(&error, order);
                (
                    Settlement::NotCharged,
                    error.to_string(),
                    Err(NotCharged {
                        charged: Charged::Failed(error),
                        api_unwell,
                    }),
                )
            }
            Err(error) => {
                tracing::error!(order_id = %order.order_id, %error, "charge outcome unknown: parked in the ledger");
                let detail = error.to_string();
                let unknown = NotCharged {
                    charged: Charged::Unknown,
                    api_unwell: true,
                };
                (Settlement::Unknown, detail, Err(unknown))
            }
        };
        progress.set(Phase::Settling(attempt.clone(), settlement, detail.clone()));
        match ledger.settle(&attempt, settlement, &detail).await {
            Ok(()) => outcome,
            Err(error) if settlement == Settlement::Unknown => {
                tracing::error!(order_id = %order.order_id, %error, "could not park the order as unknown: it is kept for a later copy to park");
                Err(NotCharged {
                    charged: Charged::Unrecorded {
                        lease_until: attempt.lease_until,
                    },
                    api_unwell: true,
                })
            }
            Err(error) => {
                // The claim stays in progress; once its lease runs out the copy that meets
                // it parks the order as unknown (alarmed), which is safe whatever happened.
                tracing::error!(order_id = %order.order_id, ?settlement, %error, "could not record the outcome in the ledger");
                outcome
            }
        }
    }
}

/// How long the charge may take so that its outcome is recorded before the claim's lease
/// (`lease_until`, Unix seconds) runs out and before the invocation's deadline (Unix
/// millis) less `margin`, leaving one ledger call (`settle`) for the record; `None` when
/// that is less than [`MIN_SEND_TIME`]. As the breaker treats deadlines: one nearer than
/// that reservation bounds the charge by itself, one already past (an emulator's, a skewed
/// clock's) is not enforced.
pub(crate) fn send_bound(
    now_millis: u64,
    lease_until: u64,
    deadline_millis: Option<u64>,
    settle: Duration,
    margin: Duration,
) -> Option<Duration> {
    let settle = settle.as_millis() as u64;
    let lease_left = lease_until
        .saturating_mul(1000)
        .saturating_sub(now_millis)
        .saturating_sub(settle);
    let deadline_left = match deadline_millis.map(|deadline| deadline.saturating_sub(now_millis)) {
        None | Some(0) => u64::MAX,
        Some(left) => {
            let reserved = left
                .saturating_sub(settle)
                .saturating_sub(margin.as_millis() as u64);
            if reserved >= MIN_SEND_TIME.as_millis() as u64 {
                reserved
            } else {
                left
            }
        }
    };
    Some(Duration::from_millis(lease_left.min(deadline_left)))
        .filter(|bound| *bound >= MIN_SEND_TIME)
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::Client;
    use aws_sdk_dynamodb::operation::put_item::PutItemOutput;
    use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
    use aws_sdk_dynamodb::types::error::InternalServerError;
    use aws_smithy_mocks::{RuleMode, mock, mock_client};
    use tokio::net::TcpListener;

    use super::*;

    #[tokio::test]
    async fn a_lost_answer_that_cannot_be_parked_keeps_the_order() {
        // The API takes the request and never answers; the ledger then refuses the park.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/charges", listener.local_addr().unwrap());
        let _hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        let payments = PaymentClient::new(&url, Duration::from_millis(200), None).unwrap();
        let put = mock!(Client::put_item).then_output(|| PutItemOutput::builder().build());
        let update = mock!(Client::update_item).then_error(|| {
            UpdateItemError::InternalServerError(
                InternalServerError::builder().message("throttled").build(),
            )
        });
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&put, &update]);
        let ledger = Ledger::on_client(
            client,
            "ledger".into(),
            Duration::from_secs(60),
            Duration::from_secs(86_400),
            Duration::from_secs(1),
        );
        let order = Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#).unwrap();
        let progress = Progress::default();
        let outcome = payments.charge_admitted(&ledger, &order, &progress).await;
        match outcome {
            Err(NotCharged {
                charged: Charged::Unrecorded { lease_until },
                api_unwell: true,
            }) => assert!(lease_until > 0),
            other => panic!("an unparked unknown must not be answered as parked: {other:?}"),
        }
    }

    const NOW: u64 = 1_000_000_000;

    #[test]
    fn a_charge_ends_in_time_to_be_recorded_within_its_lease_and_its_invocation() {
        let settle = Duration::from_millis(1500);
        let margin = Duration::from_secs(1);
        // Lease 10 s away, no deadline: the lease less the settle.
        assert_eq!(
            send_bound(NOW, NOW / 1000 + 10, None, settle, margin),
            Some(Duration::from_millis(8500))
        );
        // A deadline 3 s away: less the settle and the margin.
        assert_eq!(
            send_bound(NOW, NOW / 1000 + 10, Some(NOW + 3000), settle, margin),
            Some(Duration::from_millis(500))
        );
        // A deadline nearer than the reservation bounds the charge by itself; one already
        // past is not enforced, as the breaker does.
        assert_eq!(
            send_bound(NOW, NOW / 1000 + 10, Some(NOW + 2000), settle, margin),
            Some(Duration::from_millis(2000))
        );
        assert_eq!(
            send_bound(NOW, NOW / 1000 + 10, Some(NOW - 5), settle, margin),
            Some(Duration::from_millis(8500))
        );
        // Nothing left of the lease, or of the invocation, worth sending in: the claim is
        // released unsent.
        assert_eq!(send_bound(NOW, NOW / 1000 + 1, None, settle, margin), None);
        assert_eq!(
            send_bound(NOW, NOW / 1000 + 10, Some(NOW + 50), settle, margin),
            None
        );
    }
}
