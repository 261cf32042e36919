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
use payment_pipeline::{Charged, FailureCount, Pipeline};

use crate::record::{age, deferral, order_of};

/// The breaker's store calls one guarded call may make: a read, a write.
const STORE_CALLS: u32 = 2;
/// The ledger calls one record may make: put, read, park and read back; settle and read back.
const LEDGER_CALLS: u32 = 6;

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
    /// `REPLAY_MAX_ORDER_AGE_SECS`: an order first buffered longer ago is not charged but
    /// reported failed, so it reaches the DLQ (alarmed) instead of being deferred forever.
    pub max_order_age: Duration,
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
    /// The time one record may need in the worst case: the breaker's own store calls (a
    /// read of the circuit's state, a write of a transition), the claim (its put, the read
    /// of the item it met, parking a stale attempt and reading it back), the charge, its
    /// settle (and the read back of a park), and the deferral of the rest.
    pub fn record_budget(&self) -> Duration {
        self.circuit.store_timeout() * STORE_CALLS
            + self.pipeline.ledger.timeout() * LEDGER_CALLS
            + self.pipeline.payments.timeout()
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
                    tracing::info!(%message_id, delay_secs = delay.as_secs(), "record deferred");
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
        let order = match order_of(record) {
            Ok(order) => order,
            Err(error) => return (Fate::Fail(error), None),
        };
        if let Some(age) = age(record, unix_now()).filter(|age| *age > self.max_order_age.as_secs())
        {
            tracing::error!(order_id = %order.order_id, age, "order buffered longer than REPLAY_MAX_ORDER_AGE_SECS: not charged, left for the DLQ");
            return (
                Fate::Fail(format!(
                    "buffered {age} s ago, longer than REPLAY_MAX_ORDER_AGE_SECS={}",
                    self.max_order_age.as_secs()
                )),
                None,
            );
        }
        let charged = match self
            .pipeline
            .payments
            .charge_once(&self.pipeline.ledger, &order)
            .await
        {
            Ok(charged) => charged,
            Err(open) => {
                let delay = self.wait_for_probe(open.retry_after_unix_secs());
                return (Fate::Defer(delay, FailureCount::Reset), Some(delay));
            }
        };
        if let Charged::Declined(error) = &charged {
            tracing::warn!(order_id = %order.order_id, %error, "declined by the payment API: final");
        }
        (self.fate(charged), None)
    }

    /// What becomes of a record whose charge ended so. Deleted only when the outcome is
    /// durable elsewhere (the ledger, the payment API); kept (deferred, or left in the
    /// queue for the DLQ) otherwise.
    fn fate(&self, charged: Charged) -> Fate {
        match charged {
            Charged::Now(_) => Fate::Done("charged"),
            Charged::Before => Fate::Done("already charged: duplicate dropped"),
            Charged::Declined(_) => Fate::Done("declined"),
            Charged::DeclinedBefore => Fate::Done("already declined: duplicate dropped"),
            Charged::Unknown => Fate::Done("outcome unknown: parked in the ledger"),
            Charged::InFlight { lease_until } => Fate::Defer(
                Duration::from_secs(lease_until.saturating_sub(unix_now())),
                FailureCount::Keep,
            ),
            Charged::OutOfTime => Fate::Defer(Duration::ZERO, FailureCount::Keep),
            Charged::Failed(error) => Fate::Retry(error.to_string()),
            Charged::LedgerUnavailable(error) => Fate::Retry(error.to_string()),
            Charged::Unrecorded { .. } => Fate::Fail(
                "outcome unknown and not parked (the ledger failed): kept until a later receive parks it"
                    .to_owned(),
            ),
            Charged::Conflict => Fate::Fail(
                "the order id belongs to another order (another amount, currency or customer): kept for a human"
                    .to_owned(),
            ),
        }
    }

    /// Until the open circuit may admit a probe, as the rejection said (`retry_after`: the
    /// recovery backed off by the circuit's reopens, or a forced open's end), or, once that
    /// has passed without one, until this environment is quiet (no call of the circuit for
    /// a cache age after its copy went stale: two cache ages and a second), when it may
    /// probe at once instead of waiting a busy environment's jitter. A forced open until
    /// released says no time: a recovery timeout. At least a second, at most SQS's 900.
    fn wait_for_probe(&self, retry_after: Option<u64>) -> Duration {
        let now = unix_now();
        let wait = match retry_after {
            Some(due) if due > now => Duration::from_secs(due - now),
            Some(_) => self.circuit.local_cache_max_age() * 2 + Duration::from_secs(1),
            None => self.circuit.recovery_timeout(),
        };
        wait.clamp(Duration::from_secs(1), MAX_DELAY)
    }
}

#[cfg(test)]
mod tests {
    use payment_pipeline::{Ledger, OverflowQueue, PaymentClient};

    use super::*;

    fn app() -> App {
        let aws = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let second = Duration::from_secs(1);
        App {
            pipeline: Pipeline {
                payments: PaymentClient::new("https://pay.example.com/charges", second * 2, None)
                    .unwrap(),
                ledger: Ledger::new(&aws, "ledger".into(), second * 60, second * 86_400, second),
                overflow: OverflowQueue::new(&aws, "https://sqs/1/q".into(), second),
            },
            circuit: breaker_runtime::CircuitBreakerConfig::builder()
                .store_timeout(Duration::from_millis(500))
                .build()
                .unwrap(),
            max_failures: 5,
            max_order_age: second * 86_400,
        }
    }

    #[test]
    fn a_possibly_charged_order_that_is_not_parked_is_never_deleted() {
        let app = app();
        let fate = app.fate(Charged::Unrecorded { lease_until: 1 });
        assert!(matches!(fate, Fate::Fail(_)), "{fate:?}");
        // Parked with its metric: the ledger holds it; the record may go.
        assert!(matches!(app.fate(Charged::Unknown), Fate::Done(_)));
    }

    #[test]
    fn a_reused_order_id_is_kept_for_a_human_not_dropped_as_a_duplicate() {
        let fate = app().fate(Charged::Conflict);
        assert!(
            matches!(fate, Fate::Fail(ref why) if why.contains("another order")),
            "{fate:?}"
        );
    }

    #[test]
    fn the_record_budget_counts_the_breakers_store_calls_and_every_ledger_round_trip() {
        // 2 × 0.5 s store + 6 × 1 s ledger + 2 s payment + 1 s SQS.
        assert_eq!(app().record_budget(), Duration::from_secs(10));
    }

    #[test]
    fn the_replay_waits_until_the_rejections_retry_after_backoff_included() {
        let app = app();
        // A backed-off wait, far longer than opened_at + recovery_timeout would say.
        let wait = app.wait_for_probe(Some(unix_now() + 240));
        assert!(
            (Duration::from_secs(239)..=Duration::from_secs(240)).contains(&wait),
            "{wait:?}"
        );
        assert_eq!(app.wait_for_probe(None), app.circuit.recovery_timeout());
    }

    #[test]
    fn past_the_recovery_the_replay_waits_until_it_is_quiet_not_a_jitter() {
        let app = app();
        let wait = app.wait_for_probe(Some(unix_now() - 3_600));
        assert_eq!(
            wait,
            app.circuit.local_cache_max_age() * 2 + Duration::from_secs(1)
        );
        assert!(wait < app.circuit.recovery_jitter());
    }

    #[test]
    fn an_opened_at_far_in_the_future_saturates() {
        let wait = app().wait_for_probe(Some(u64::MAX));
        assert_eq!(wait, MAX_DELAY);
    }
}
