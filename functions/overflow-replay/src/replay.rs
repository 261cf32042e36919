//! One batch of buffered orders. Each record is charged once through the ledger, or
//! deferred (sent again with a delay, the original deleted) when it cannot be charged yet,
//! or reported as a batch item failure when it fails on its own. Only those failures spend
//! a message's receive budget, so however long an outage lasts, no order reaches the DLQ
//! because the circuit was open. A poison record still does: one that is not an order at
//! once, one whose charge keeps failing while the circuit stays closed after
//! `REPLAY_MAX_FAILURES` failures in a row (meeting the open circuit starts the count over).

use std::time::{Duration, SystemTime};

use aws_lambda_events::event::sqs::SqsMessage;
use payment_pipeline::clock::unix_now;
use payment_pipeline::overflow::MAX_DELAY;
use payment_pipeline::{Charged, Deferral, FailureCount, Order, Pipeline};

/// What every invocation shares: built once in `main`.
#[derive(Debug)]
pub struct App {
    /// The payment client, the ledger, the overflow queue.
    pub pipeline: Pipeline,
    /// The circuit's config: when an open circuit may admit a probe again.
    pub circuit: breaker_runtime::CircuitBreakerConfig,
    /// `REPLAY_MAX_FAILURES`: failed charges a record is deferred after before it is
    /// reported failed (and so, after `maxReceiveCount` more, reaches the DLQ).
    pub max_failures: u64,
}

/// What became of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Settled (charged, declined, a duplicate, parked as unknown): delete it.
    Done(&'static str),
    /// Not chargeable yet: send it again after this delay, delete the original.
    Defer(Duration, FailureCount),
    /// The charge failed (5xx, 429, unreachable, the ledger unavailable) while the circuit
    /// was closed: deferred like the above with `failures` + 1, until there are too many.
    Retry(String),
    /// Failed on its own: leave it in the queue (one receive spent).
    Fail(String),
}

/// What a batch came to.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Message ids to report as batch item failures.
    pub failures: Vec<String>,
    /// How many records were settled, deferred, failed.
    pub done: usize,
    pub deferred: usize,
}

impl App {
    /// The time one record may need in the worst case: claim, charge, settle, and the
    /// deferral of the rest.
    pub fn record_budget(&self) -> Duration {
        self.pipeline.payments.timeout()
            + self.pipeline.ledger.timeout() * 2
            + self.pipeline.overflow.timeout()
    }

    /// Replays `records` in order until `deadline` is too close to start another one.
    pub async fn replay(&self, records: &[SqsMessage], deadline: SystemTime) -> BatchOutcome {
        let mut outcome = BatchOutcome::default();
        let mut deferrals = Vec::new();
        // Once the circuit is open, the rest of the batch waits as long without a call.
        let mut open_for: Option<Duration> = None;
        // The first record starts whenever its payment call fits: a timeout shorter than
        // the whole budget must not defer every record of every invocation forever.
        let mut started = 0_usize;
        for record in records {
            let message_id = record.message_id.clone().unwrap_or_default();
            let left = deadline
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            let fate = if let Some(delay) = open_for {
                Fate::Defer(delay, FailureCount::Reset)
            } else if left < self.record_budget()
                && (started > 0 || left < self.pipeline.payments.timeout())
            {
                tracing::info!(%message_id, ?left, "invocation time short: record deferred");
                Fate::Defer(Duration::ZERO, FailureCount::Keep)
            } else {
                started += 1;
                let (fate, open) = self.replay_record(record).await;
                open_for = open;
                fate
            };
            match fate {
                Fate::Done(what) => {
                    outcome.done += 1;
                    tracing::info!(%message_id, what, "record settled");
                }
                Fate::Defer(delay, failures) => {
                    outcome.deferred += 1;
                    deferrals.push(deferral(record, delay, failures));
                }
                Fate::Retry(error) => {
                    let mut retry = deferral(record, Duration::ZERO, FailureCount::Increment);
                    let failures = retry.failure_count() + 1;
                    // Backing off doubles each time: a record that failed a probe comes back
                    // after the next probe, and meets the open circuit (which resets it).
                    retry.delay =
                        self.circuit.recovery_timeout() * 2_u32.pow(failures.min(10) as u32 - 1);
                    if failures >= self.max_failures {
                        tracing::warn!(%message_id, %error, failures, "record failed too often: left in the queue");
                        outcome.failures.push(message_id);
                    } else {
                        tracing::warn!(%message_id, %error, "charge failed: record deferred");
                        outcome.deferred += 1;
                        deferrals.push(retry);
                    }
                }
                Fate::Fail(error) => {
                    tracing::warn!(%message_id, %error, "record left in the queue");
                    outcome.failures.push(message_id);
                }
            }
        }
        if !deferrals.is_empty() {
            let unsent = self.pipeline.overflow.defer(&deferrals).await;
            outcome.deferred -= unsent.len();
            outcome.failures.extend(unsent);
        }
        outcome
    }

    /// One record; also returns how long the rest of the batch must wait when the circuit
    /// turned out to be open.
    async fn replay_record(&self, record: &SqsMessage) -> (Fate, Option<Duration>) {
        let body = record.body.as_deref().unwrap_or_default();
        let order = match serde_json::from_str(body)
            .map_err(|e| format!("the message body is not JSON: {e}"))
            .and_then(|payload| {
                Order::from_payload(unwrap_destination_record(payload)).map_err(|e| e.to_string())
            }) {
            Ok(order) => order,
            Err(error) => return (Fate::Fail(error), None),
        };
        match self
            .pipeline
            .payments
            .charge_once(&self.pipeline.ledger, &order)
            .await
        {
            Charged::Now(_) => (Fate::Done("charged"), None),
            Charged::Before => (Fate::Done("already charged: duplicate dropped"), None),
            Charged::Declined(error) => {
                tracing::warn!(order_id = %order.order_id, %error, "declined by the payment API: final");
                (Fate::Done("declined"), None)
            }
            Charged::DeclinedBefore => (Fate::Done("already declined: duplicate dropped"), None),
            Charged::Unknown => (Fate::Done("outcome unknown: parked in the ledger"), None),
            Charged::InFlight { lease_until } => (
                Fate::Defer(
                    Duration::from_secs(lease_until.saturating_sub(unix_now())),
                    FailureCount::Keep,
                ),
                None,
            ),
            Charged::CircuitOpen(open) => {
                let delay = self.wait_for_probe(open.circuit.opened_at);
                (Fate::Defer(delay, FailureCount::Reset), Some(delay))
            }
            Charged::Failed(error) => (Fate::Retry(error.to_string()), None),
            Charged::LedgerUnavailable(error) => (Fate::Retry(error.to_string()), None),
        }
    }

    /// Until the open circuit may admit a probe: its recovery instant, or, once that has
    /// passed without one, the longest an environment that did not open it waits (cache
    /// age, a second, jitter). At least a second, at most SQS's 900.
    fn wait_for_probe(&self, opened_at: Option<u64>) -> Duration {
        let now = unix_now();
        let recovery_at = opened_at.unwrap_or(now) + self.circuit.recovery_timeout().as_secs();
        let wait = if recovery_at > now {
            Duration::from_secs(recovery_at - now)
        } else {
            self.circuit.local_cache_max_age()
                + Duration::from_secs(1)
                + self.circuit.recovery_jitter()
        };
        wait.clamp(Duration::from_secs(1), MAX_DELAY)
    }
}

/// A record of `charge`'s on-failure destination carries the event in `requestPayload`
/// (next to `requestContext`, `responsePayload`): moved here as is, it is that order.
fn unwrap_destination_record(mut payload: serde_json::Value) -> serde_json::Value {
    let wrapped = payload.get("requestContext").is_some()
        && payload
            .get("requestPayload")
            .is_some_and(serde_json::Value::is_object);
    if wrapped {
        payload["requestPayload"].take()
    } else {
        payload
    }
}

fn deferral(record: &SqsMessage, delay: Duration, failures: FailureCount) -> Deferral {
    Deferral {
        message_id: record.message_id.clone().unwrap_or_default(),
        body: record.body.clone().unwrap_or_default(),
        attributes: record
            .message_attributes
            .iter()
            .filter_map(|(name, attribute)| {
                Some((
                    name.clone(),
                    (
                        attribute.data_type.clone()?,
                        attribute.string_value.clone()?,
                    ),
                ))
            })
            .collect(),
        delay,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_on_failure_destination_record_is_the_order_it_carries() {
        let order = json!({"order_id": "o-1", "amount": 5, "currency": "EUR"});
        let record = json!({
            "version": "1.0",
            "requestContext": {"condition": "RetriesExhausted"},
            "requestPayload": order,
            "responsePayload": {"errorType": "BufferFailed"},
        });
        assert_eq!(unwrap_destination_record(record), order);
        // An order that merely has such a field stays as it is.
        let odd = json!({"order_id": "o-2", "requestPayload": {"x": 1}});
        assert_eq!(unwrap_destination_record(odd.clone()), odd);
    }
}
