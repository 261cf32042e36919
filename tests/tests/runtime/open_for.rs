//! A failure that says how long the downstream wants no calls (`Outcome::OpenFor`, a
//! `Retry-After`), on one manual clock and a shared in-memory store: it opens the circuit at
//! once whatever the count, the opening carries its end (`open_until`), every environment
//! rejects until then with that time to retry, and the first probe comes then, not at the
//! recovery timeout; a probe's hinted failure reopens for its time; a hint past
//! `max_open_for` is cut to it.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, Outcome,
};
use devstack::circuits::{BoxError, ran_or_rejected};

const CIRCUIT: &str = "throttled-api";
const RECOVERY: Duration = Duration::from_secs(60);

fn environment(id: &str, store: &Arc<dyn StateStore>, clock: &ManualClock) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(5)
        .success_threshold(1)
        .recovery_timeout(RECOVERY)
        .local_cache_max_age(Duration::from_secs(1))
        .environment_id(id)
        .clock(clock.clone())
        .build()
        .expect("valid config");
    CircuitBreaker::new(CIRCUIT, Arc::clone(store), config)
}

/// An error that carries the downstream's `Retry-After`, in seconds.
#[derive(Debug)]
struct Throttled(u64);

/// The error test: a throttled error asks for its time, any other error counts.
fn verdict(error: &BoxError) -> Outcome {
    match error.downcast_ref::<Throttled>() {
        Some(Throttled(secs)) => Outcome::OpenFor(Duration::from_secs(*secs)),
        None => Outcome::Failure,
    }
}

impl std::fmt::Display for Throttled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "429, retry after {} s", self.0)
    }
}

impl std::error::Error for Throttled {}

/// One call answering `answer` (`None`: success); `Err` the rejection.
async fn call(
    breaker: &CircuitBreaker,
    answer: Option<u64>,
) -> Result<bool, CircuitBreakerOpenError> {
    let result: Result<(), BoxError> = breaker
        .call_with(verdict, || async move {
            match answer {
                None => Ok(()),
                Some(secs) => Err(Box::new(Throttled(secs)) as BoxError),
            }
        })
        .await;
    ran_or_rejected(result)
}

#[tokio::test]
async fn one_hinted_failure_opens_every_environment_until_the_time_it_asked() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock);
    let b = environment("env-b", &store, &clock);
    let now = clock.unix_millis() / 1000;

    assert_eq!(
        call(&a, Some(20)).await,
        Ok(false),
        "the throttled call ran"
    );
    assert_eq!(a.state(), CircuitState::Open, "one hinted failure opens");
    let record = store.read(CIRCUIT).await.unwrap().unwrap();
    assert_eq!(record.open_until, Some(now + 20), "{record:?}");
    assert_eq!(record.failure_count, 1);

    // B reads the opening: it rejects, and says when to retry: the time asked for.
    let rejected = call(&b, None).await.unwrap_err();
    assert_eq!(rejected.retry_after_unix_secs(), Some(now + 20));
    let rejected = call(&a, None).await.unwrap_err();
    assert_eq!(rejected.retry_after_unix_secs(), Some(now + 20));

    // Just before the time, still rejected; at it, A (which opened it) probes and closes,
    // 40 s before the recovery timeout would have let it.
    clock.set_unix_millis((now + 19) * 1000 + 900);
    assert!(call(&a, None).await.is_err());
    clock.set_unix_millis((now + 20) * 1000);
    assert_eq!(
        call(&a, None).await,
        Ok(true),
        "the probe at the asked time"
    );
    assert_eq!(a.state(), CircuitState::Closed);
}

#[tokio::test]
async fn a_probes_hinted_failure_reopens_for_its_time_and_a_huge_hint_is_cut() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock);
    let now = clock.unix_millis() / 1000;
    // A day asked for: cut to max_open_for (300 s by default).
    assert_eq!(call(&a, Some(86_400)).await, Ok(false));
    let record = store.read(CIRCUIT).await.unwrap().unwrap();
    assert_eq!(record.open_until, Some(now + 300));

    // The probe at the end asks for 45 s more: a reopen until then.
    clock.set_unix_millis((now + 300) * 1000);
    assert_eq!(call(&a, Some(45)).await, Ok(false), "the probe ran");
    let record = store.read(CIRCUIT).await.unwrap().unwrap();
    assert_eq!(record.state, CircuitState::Open);
    assert_eq!(record.reopen_count, 1);
    assert_eq!(record.open_until, Some(now + 345));

    // A probe failing without a hint reopens for the recovery timeout: the time is gone.
    clock.set_unix_millis((now + 345) * 1000);
    let plain: Result<(), BoxError> = a.call(|| async { Err("503".into()) }).await;
    assert!(plain.is_err());
    let record = store.read(CIRCUIT).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.open_until),
        (CircuitState::Open, None)
    );
    let rejected = call(&a, None).await.unwrap_err();
    assert_eq!(
        rejected.retry_after_unix_secs(),
        Some(now + 345 + RECOVERY.as_secs())
    );
}

#[tokio::test]
async fn ordinary_failures_still_need_the_threshold() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock);
    // A hint of no time (`Retry-After: 0`) asks for nothing: one such failure does not trip.
    assert_eq!(call(&a, Some(0)).await, Ok(false));
    assert_eq!(
        a.state(),
        CircuitState::Closed,
        "a zero hint is an ordinary failure"
    );
    for _ in 0..3 {
        let plain: Result<(), BoxError> = a.call(|| async { Err("503".into()) }).await;
        assert!(plain.is_err());
    }
    assert_eq!(a.state(), CircuitState::Closed, "4 of 5");
    // The fifth, with a zero hint again, trips as any fifth failure does, for the recovery
    // timeout.
    assert_eq!(call(&a, Some(0)).await, Ok(false));
    let record = store.read(CIRCUIT).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.open_until),
        (CircuitState::Open, None)
    );
}
