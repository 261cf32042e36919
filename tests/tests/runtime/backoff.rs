//! The backed-off recovery across environments on one manual clock: the reopen count
//! travels in the shared record, so an environment that only read it waits as long as the
//! one that reopened; a close, a trip and a whole-item reopen without the count start
//! again at the recovery timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::store::{CircuitRecord, InMemoryStore, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, RecoveryBackoff};
use devstack::circuits::{BoxError, is_rejection};

const CIRCUIT: &str = "downstream";
const RECOVERY: Duration = Duration::from_secs(30);

fn backoff() -> RecoveryBackoff {
    RecoveryBackoff::exponential(2, Duration::from_secs(600))
}

/// Environment `id`: one failure opens, one probe success closes, and a cache age of 0, so
/// every call reads the record (each environment is quiet: it may elect at the due time).
fn environment(id: &str, store: &Arc<dyn StateStore>, clock: &ManualClock) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(RECOVERY)
        .recovery_backoff(backoff())
        .local_cache_max_age(Duration::ZERO)
        .environment_id(id)
        .clock(clock.clone())
        .build()
        .expect("valid config");
    CircuitBreaker::new(CIRCUIT, Arc::clone(store), config)
}

/// One call answering `ok`; whether the downstream was called.
async fn call(breaker: &CircuitBreaker, ok: bool) -> bool {
    let called = AtomicUsize::new(0);
    let result: Result<(), BoxError> = breaker
        .call(|| async {
            called.fetch_add(1, Ordering::SeqCst);
            match ok {
                true => Ok(()),
                false => Err("downstream 503".into()),
            }
        })
        .await;
    let ran = called.load(Ordering::SeqCst) == 1;
    assert_eq!(ran, !is_rejection(&result), "{result:?}");
    ran
}

async fn stored(store: &dyn StateStore) -> CircuitRecord {
    store.read(CIRCUIT).await.expect("read").expect("an item")
}

/// The wait the stored opening's record calls for.
fn wait_of(record: &CircuitRecord) -> Duration {
    backoff().wait(
        RECOVERY,
        record.reopen_count,
        record.failure_count,
        record.opened_at.expect("open"),
    )
}

/// Moves `clock` to `offset` after the stored opening.
async fn at_opening_plus(store: &dyn StateStore, clock: &ManualClock, offset: Duration) {
    let opened_at = stored(store).await.opened_at.expect("open");
    let target = Duration::from_secs(opened_at) + offset;
    clock.set_unix_millis(target.as_millis() as u64);
}

#[tokio::test]
async fn an_environment_that_read_two_reopens_waits_the_longer_due_time() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock);
    let b = environment("env-b", &store, &clock);
    assert!(call(&a, false).await, "the trip");
    assert_eq!(stored(&*store).await.reopen_count, 0);

    // The first window is the recovery timeout; a's probe fails: one reopen.
    at_opening_plus(&*store, &clock, RECOVERY - Duration::from_secs(1)).await;
    assert!(!call(&b, true).await, "not yet due");
    at_opening_plus(&*store, &clock, RECOVERY).await;
    assert!(
        call(&a, false).await,
        "a probes at the recovery timeout, and fails"
    );
    let once = stored(&*store).await;
    assert_eq!((once.state, once.reopen_count), (CircuitState::Open, 1));
    let first_wait = wait_of(&once);
    assert!(
        first_wait >= RECOVERY * 3 / 2 && first_wait <= RECOVERY * 2,
        "{first_wait:?}"
    );

    // Without the backoff b would probe at 30 s; it waits the backed-off due time.
    at_opening_plus(&*store, &clock, RECOVERY).await;
    assert!(!call(&b, true).await, "a reopened circuit waits longer");
    at_opening_plus(&*store, &clock, first_wait - Duration::from_secs(1)).await;
    assert!(!call(&a, true).await && !call(&b, true).await);
    at_opening_plus(&*store, &clock, first_wait).await;
    assert!(call(&a, false).await, "due: a probes again, and fails");
    let twice = stored(&*store).await;
    assert_eq!(twice.reopen_count, 2);
    let second_wait = wait_of(&twice);
    assert!(
        second_wait >= RECOVERY * 3 && second_wait <= RECOVERY * 4,
        "{second_wait:?}"
    );

    // b only read the record, and waits exactly as long as a would.
    at_opening_plus(&*store, &clock, first_wait).await;
    assert!(
        !call(&b, true).await,
        "the first backed-off wait is not enough any more"
    );
    at_opening_plus(&*store, &clock, second_wait - Duration::from_secs(1)).await;
    assert!(!call(&b, true).await);
    at_opening_plus(&*store, &clock, second_wait).await;
    assert!(
        call(&b, true).await,
        "b probes at the fleet's due time and closes"
    );
    let closed = stored(&*store).await;
    assert_eq!(
        (closed.state, closed.reopen_count),
        (CircuitState::Closed, 0)
    );
}

#[tokio::test]
async fn a_close_starts_the_backoff_again() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock);
    assert!(call(&a, false).await);
    at_opening_plus(&*store, &clock, RECOVERY).await;
    assert!(call(&a, false).await, "reopens once");
    let once = stored(&*store).await;
    at_opening_plus(&*store, &clock, wait_of(&once)).await;
    assert!(call(&a, true).await, "closes");
    assert_eq!(stored(&*store).await.state, CircuitState::Closed);

    clock.advance(Duration::from_secs(5));
    assert!(call(&a, false).await, "trips again");
    let tripped = stored(&*store).await;
    assert_eq!(
        tripped.reopen_count, 0,
        "a trip from closed counts no reopen"
    );
    at_opening_plus(&*store, &clock, RECOVERY).await;
    assert!(
        call(&a, false).await,
        "probes at the recovery timeout again"
    );
    assert_eq!(
        stored(&*store).await.reopen_count,
        1,
        "the count starts from 0"
    );
}

#[tokio::test]
async fn a_whole_item_reopen_without_the_count_waits_the_recovery_timeout() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock);
    let b = environment("env-b", &store, &clock);
    assert!(call(&a, false).await);
    for _ in 0..3 {
        let record = stored(&*store).await;
        at_opening_plus(&*store, &clock, wait_of(&record)).await;
        assert!(call(&a, false).await, "a's probe fails");
    }
    let reopened = stored(&*store).await;
    assert_eq!(reopened.reopen_count, 3);

    // A Powertools environment elects itself and reopens: whole items, without the count.
    let now = clock.unix_millis() / 1000 + wait_of(&reopened).as_secs() + 1;
    clock.set_unix_millis(now * 1000);
    let elect = RecordWrite::Elect {
        owner: "powertools".into(),
        expected_opened_at: reopened.opened_at,
        expected_successes: 0,
        now,
        lease_expiry: now + 30,
        expiration: now + 3630,
    };
    assert_eq!(store.apply(CIRCUIT, &elect).await, Ok(WriteOutcome::Won));
    let powertools_reopen = RecordWrite::Reopen {
        owner: "powertools".into(),
        opened_at: now,
        failure_count: 1,
        reopen_count: 0,
        expiration: now + 3630,
        open_until: None,
    };
    assert_eq!(
        store.apply(CIRCUIT, &powertools_reopen).await,
        Ok(WriteOutcome::Won)
    );
    assert_eq!(stored(&*store).await.reopen_count, 0);

    at_opening_plus(&*store, &clock, RECOVERY - Duration::from_secs(1)).await;
    assert!(!call(&b, true).await);
    at_opening_plus(&*store, &clock, RECOVERY).await;
    assert!(call(&b, true).await, "back to the recovery timeout");
}

#[test]
fn the_attributes_keys_set_the_backoff_and_bad_builder_values_name_their_field() {
    use breaker_runtime::__private::inline_config;
    let none = inline_config().recovery_backoff("none").build();
    assert_eq!(none.recovery_backoff(), &RecoveryBackoff::none());
    let capped = (inline_config().recovery_backoff("doubling"))
        .recovery_backoff_max_secs(600)
        .build();
    let expected = RecoveryBackoff::exponential(2, Duration::from_secs(600));
    assert_eq!(capped.recovery_backoff(), &expected);
    let doubling = inline_config().recovery_backoff("doubling").build();
    assert_eq!(doubling.recovery_backoff(), &RecoveryBackoff::doubling());
    let default = inline_config().build();
    assert_eq!(
        default.recovery_backoff(),
        &RecoveryBackoff::none(),
        "opt-in"
    );

    let error = |backoff| {
        CircuitBreakerConfig::builder()
            .recovery_backoff(backoff)
            .build()
            .unwrap_err()
            .to_string()
    };
    let slow = error(RecoveryBackoff::exponential(1, Duration::from_secs(60)));
    assert!(slow.contains("recovery_backoff_factor"), "{slow}");
    let short = error(RecoveryBackoff::exponential(2, Duration::from_secs(10)));
    assert!(short.contains("recovery_backoff_max"), "{short}");
    let long = error(RecoveryBackoff::exponential(2, Duration::from_secs(90_000)));
    assert!(long.contains("recovery_backoff_max"), "{long}");
}
