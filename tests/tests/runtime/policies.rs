//! Trip policies beyond consecutive failures, through `CircuitBreaker`: a failure rate over
//! the last N calls and over the last N seconds, a slow-call rate (a slow probe reopens),
//! the trip written to the store like any other, the same through the tower layer, and many
//! threads failing at once committing one transition; failures under a disable not counting
//! after its release.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::tower::{BoxError, CircuitBreakerLayer};
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitState, RecoveryBackoff, SlidingWindow,
};
use devstack::circuits::is_rejection;
use devstack::contention::{at_once_on_threads, counting_transitions};
use tower::{Layer, ServiceExt, service_fn};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn ok(breaker: &CircuitBreaker) -> Result<(), Error> {
    breaker.call_blocking(|| Ok(()))
}

fn fail(breaker: &CircuitBreaker) -> Result<(), Error> {
    breaker.call_blocking(|| Err("downstream 503".into()))
}

#[tokio::test]
async fn a_failure_rate_trips_where_consecutive_failures_never_would() {
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::new());
    let config = CircuitBreakerConfig::builder()
        .failure_rate(50)
        .sliding_window(SlidingWindow::Calls(10))
        .minimum_calls(10)
        .clock(clock.clone())
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("rate", store.clone(), config);
    // Every other call fails: never two in a row.
    for n in 1..=10 {
        let _ = if n % 2 == 1 {
            fail(&breaker)
        } else {
            ok(&breaker)
        };
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "call {n}: below the minimum, or a success"
        );
    }
    assert_eq!(
        breaker.info().await.failure_count,
        5,
        "5 failures in the window"
    );
    // The 11th call fails: 5 of the last 10 failed.
    assert!(fail(&breaker).is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    let stored = store
        .read("rate")
        .await
        .unwrap()
        .expect("the trip was written");
    assert_eq!(
        (stored.state, stored.failure_count),
        (CircuitState::Open, 5)
    );
    assert!(is_rejection(&ok(&breaker)));
}

#[test]
fn a_time_window_forgets_failures_older_than_its_span() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_rate(60)
        .sliding_window(SlidingWindow::Time(Duration::from_secs(10)))
        .minimum_calls(3)
        .clock(clock.clone())
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("time-window", Arc::new(InMemoryStore::new()), config);
    let _ = fail(&breaker);
    let _ = fail(&breaker);
    clock.advance(Duration::from_secs(10));
    // The two failures are 10 s old: out of the window. 1 of 3 failed.
    let _ = ok(&breaker);
    let _ = ok(&breaker);
    let _ = fail(&breaker);
    assert_eq!(breaker.state(), CircuitState::Closed);
    // 2 of 4, then 3 of 5: 60 %.
    let _ = fail(&breaker);
    assert_eq!(breaker.state(), CircuitState::Closed);
    let _ = fail(&breaker);
    assert_eq!(breaker.state(), CircuitState::Open);
}

fn slow_config(clock: &ManualClock) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .slow_calls(Duration::from_millis(500), 50)
        .sliding_window(SlidingWindow::Calls(4))
        .minimum_calls(4)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        // The reopened circuit probes again at the recovery timeout.
        .recovery_backoff(RecoveryBackoff::none())
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn slow_successes_trip_and_a_slow_probe_reopens() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new("slow", Arc::new(InMemoryStore::new()), slow_config(&clock));
    let call = |millis: u64| {
        let clock = clock.clone();
        breaker.call(move || async move {
            clock.advance(Duration::from_millis(millis));
            Ok::<_, Error>(millis)
        })
    };
    for millis in [10, 600, 20] {
        assert!(call(millis).await.is_ok());
    }
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "1 of 3 slow, below the minimum"
    );
    assert_eq!(
        call(499).await.unwrap(),
        499,
        "just under the threshold is not slow"
    );
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(
        call(500).await.unwrap(),
        500,
        "a slow call still returns its answer"
    );
    assert_eq!(breaker.state(), CircuitState::Open, "2 of the last 4 slow");

    clock.advance(Duration::from_secs(30));
    assert!(call(700).await.is_ok(), "the probe runs");
    assert_eq!(breaker.state(), CircuitState::Open, "a slow probe reopens");
    clock.advance(Duration::from_secs(30));
    assert!(call(5).await.is_ok());
    assert_eq!(breaker.state(), CircuitState::Closed, "a fast probe closes");
    // The window started again: one slow call of one is below the minimum.
    assert!(call(900).await.is_ok());
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[tokio::test]
async fn the_tower_layer_applies_the_rate_policy() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new(
        "tower-slow",
        Arc::new(InMemoryStore::new()),
        slow_config(&clock),
    );
    let slow_clock = clock.clone();
    let service =
        CircuitBreakerLayer::new(breaker.clone()).layer(service_fn(move |millis: u64| {
            let clock = slow_clock.clone();
            async move {
                clock.advance(Duration::from_millis(millis));
                Ok::<_, BoxError>(millis)
            }
        }));
    for millis in [1, 800, 2, 800] {
        assert_eq!(service.clone().oneshot(millis).await.unwrap(), millis);
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    let rejected = service.oneshot(1).await;
    assert!(
        matches!(rejected, Err(e) if e.downcast_ref::<breaker_runtime::CircuitBreakerOpenError>().is_some())
    );
}

#[test]
fn threads_failing_at_once_commit_one_transition() {
    const THREADS: usize = 16;
    for round in 0..50 {
        let config = CircuitBreakerConfig::builder()
            .failure_rate(50)
            .sliding_window(SlidingWindow::Calls(20))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let (breaker, transitions) = counting_transitions(CircuitBreaker::new(
            "rate-storm",
            Arc::new(InMemoryStore::new()),
            config,
        ));
        at_once_on_threads(THREADS, || {
            for _ in 0..10 {
                let _ = fail(&breaker);
            }
        });
        assert_eq!(breaker.state(), CircuitState::Open, "round {round}");
        assert_eq!(
            transitions.load(Ordering::SeqCst),
            1,
            "round {round}: one CLOSED → OPEN"
        );
    }
}

#[tokio::test]
async fn failures_under_a_disable_leave_the_window_empty_for_the_release() {
    use breaker_runtime::store::{Override, OverrideKind, RecordWrite, WriteOutcome};
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::new());
    let now_secs = || clock.unix_millis() / 1000;
    let disable = Override::new(OverrideKind::Disabled, "ops", now_secs());
    let set = RecordWrite::Override {
        set: disable.clone(),
        replaces: None,
        expiration: None,
    };
    assert!(matches!(
        store.apply("disabled-rate", &set).await.unwrap(),
        WriteOutcome::Won
    ));
    let config = CircuitBreakerConfig::builder()
        .failure_rate(50)
        .sliding_window(SlidingWindow::Calls(10))
        .minimum_calls(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("disabled-rate", store.clone(), config);
    // Disabled: every call runs and fails, and none trips.
    for _ in 0..8 {
        assert!(!is_rejection(&fail(&breaker)), "a disabled circuit runs");
    }
    assert_eq!(breaker.state(), CircuitState::Closed);

    let release = RecordWrite::Release {
        released: disable,
        now: now_secs(),
        expiration: now_secs() + 86_400,
    };
    assert!(matches!(
        store.apply("disabled-rate", &release).await.unwrap(),
        WriteOutcome::Won
    ));
    clock.advance(Duration::from_secs(6)); // past the cache age: the release is seen
    // One failure after the release is below the minimum of 4 calls: the 8 failures
    // counted under the disable must not count.
    assert!(!is_rejection(&fail(&breaker)));
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "tripped on failures counted while disabled"
    );
}
