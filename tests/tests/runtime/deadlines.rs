//! Call deadlines on the manual clock: a call still running at its call timeout is
//! abandoned, counts as a failure of that kind and trips; inside an invocation scope a call
//! is abandoned before the deadline, with the margin left for the trip write, which has
//! landed when the call returns; a blocking call cannot be abandoned but counts when it
//! returns late; without a deadline nothing is abandoned.

use std::future::pending;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CallAbandonedError, CircuitBreaker, CircuitBreakerConfig, CircuitState, CircuitTransition,
    FailureKind, TransitionCause, deadline,
};
use devstack::circuits::BoxError;

/// A circuit on `clock` that opens after `failures` failures, with `call_timeout` if given.
fn breaker(
    clock: &ManualClock,
    store: Arc<dyn StateStore>,
    failures: u32,
    call_timeout: Option<Duration>,
) -> CircuitBreaker {
    let builder = CircuitBreakerConfig::builder()
        .failure_threshold(failures)
        .local_cache_max_age(Duration::from_secs(5))
        .clock(clock.clone());
    let builder = match call_timeout {
        Some(timeout) => builder.call_timeout(timeout),
        None => builder,
    };
    CircuitBreaker::new("hung-api", store, builder.build().expect("valid config"))
}

/// A downstream that never answers; `started` is set once the breaker has admitted it.
async fn never_answers(started: Arc<AtomicBool>) -> Result<(), BoxError> {
    started.store(true, Ordering::SeqCst);
    pending().await
}

/// A call whose downstream never answers, run as a task so the clock can move meanwhile;
/// returns once the call runs (its admission may wait on the store runtime's thread).
async fn hang(breaker: &CircuitBreaker) -> tokio::task::JoinHandle<Result<(), BoxError>> {
    let breaker = breaker.clone();
    let started = Arc::new(AtomicBool::new(false));
    let running = Arc::clone(&started);
    let call = tokio::spawn(async move { breaker.call(|| never_answers(running)).await });
    while !started.load(Ordering::SeqCst) {
        assert!(
            !call.is_finished(),
            "the call ended before it ran: {:?}",
            call.await
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    settle().await;
    call
}

/// Lets spawned tasks run until they wait again.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn abandoned(result: &Result<(), BoxError>) -> Option<CallAbandonedError> {
    let error = result.as_ref().err()?;
    error.downcast_ref::<CallAbandonedError>().cloned()
}

#[tokio::test]
async fn a_call_still_running_at_its_timeout_is_abandoned_counts_and_trips() {
    let clock = ManualClock::new();
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let seen = Arc::new(Mutex::new(Vec::<CircuitTransition>::new()));
    let hook = Arc::clone(&seen);
    let breaker = breaker(&clock, store.clone(), 2, Some(Duration::from_secs(2)))
        .with_on_transition(move |t| hook.lock().unwrap().push(t));
    for round in 0..2 {
        let call = hang(&breaker).await;
        assert!(
            !call.is_finished(),
            "round {round}: still running before its timeout"
        );
        clock.advance(Duration::from_millis(1_999));
        settle().await;
        assert!(!call.is_finished(), "round {round}: 1 ms early");
        clock.advance(Duration::from_millis(1));
        let result = call.await.expect("the task ends");
        let abandoned = abandoned(&result).expect("abandoned, not rejected");
        assert_eq!(abandoned.kind, FailureKind::CallTimeout);
        assert_eq!(abandoned.after, Duration::from_secs(2));
        assert!(
            result
                .unwrap_err()
                .to_string()
                .contains("call abandoned after 2s"),
            "the message says what happened"
        );
    }
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "two abandoned calls trip"
    );
    let record = store
        .read("hung-api")
        .await
        .unwrap()
        .expect("the trip was written");
    assert_eq!(record.state, CircuitState::Open);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].cause,
        Some(TransitionCause::Failures {
            kind: FailureKind::CallTimeout,
            count: 2
        })
    );
}

#[tokio::test]
async fn a_call_in_an_invocation_is_abandoned_before_the_deadline_with_the_trip_written() {
    let clock = ManualClock::new();
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let breaker = breaker(&clock, store.clone(), 1, None);
    let margin = CircuitBreakerConfig::default().deadline_margin();
    assert_eq!(
        margin,
        Duration::from_secs(1),
        "the store timeout by default"
    );
    let invocation_deadline = clock.unix_millis() + 10_000;
    let guarded = breaker.clone();
    let started = Arc::new(AtomicBool::new(false));
    let running = Arc::clone(&started);
    let call = tokio::spawn(deadline::scope(invocation_deadline, async move {
        guarded.call(|| never_answers(running)).await
    }));
    while !started.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    settle().await;
    clock.advance(Duration::from_millis(8_999));
    settle().await;
    assert!(
        !call.is_finished(),
        "running until the deadline minus the margin"
    );
    clock.advance(Duration::from_millis(1));
    let result = call.await.expect("the task ends");
    let abandoned = abandoned(&result).expect("abandoned at the deadline");
    assert_eq!(abandoned.kind, FailureKind::InvocationDeadline);
    // The call returned with the margin still ahead, and the trip already in the store.
    assert!(clock.unix_millis() + margin.as_millis() as u64 <= invocation_deadline);
    let record = store.read("hung-api").await.unwrap().expect("tripped");
    assert_eq!(record.state, CircuitState::Open);
}

#[tokio::test]
async fn without_a_timeout_or_deadline_a_running_call_is_never_abandoned() {
    let clock = ManualClock::new();
    let breaker = breaker(&clock, Arc::new(InMemoryStore::new()), 1, None);
    let call = hang(&breaker).await;
    clock.advance(Duration::from_secs(3_600));
    settle().await;
    assert!(!call.is_finished(), "an hour later it still runs");
    call.abort();
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[test]
fn a_blocking_call_that_returns_after_its_timeout_counts_as_timed_out() {
    let clock = ManualClock::new();
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let breaker = breaker(&clock, store, 1, Some(Duration::from_secs(2)));
    let quick: Result<u32, BoxError> = breaker.call_blocking(|| {
        clock.advance(Duration::from_millis(1_500));
        Ok(1)
    });
    assert_eq!(quick.unwrap(), 1);
    assert_eq!(breaker.state(), CircuitState::Closed, "in time: a success");
    let late: Result<u32, BoxError> = breaker.call_blocking(|| {
        clock.advance(Duration::from_secs(3));
        Ok(2)
    });
    assert_eq!(late.unwrap(), 2, "a blocking call's result is returned");
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "but it counted as a failure"
    );
}

#[test]
fn a_blocking_call_near_the_invocation_deadline_counts_as_a_deadline_failure() {
    let clock = ManualClock::new();
    let seen = Arc::new(Mutex::new(Vec::<CircuitTransition>::new()));
    let hook = Arc::clone(&seen);
    let breaker = breaker(&clock, Arc::new(InMemoryStore::new()), 1, None)
        .with_on_transition(move |t| hook.lock().unwrap().push(t));
    let invocation_deadline = clock.unix_millis() + 5_000;
    let result: Result<(), BoxError> = deadline::scope_blocking(invocation_deadline, || {
        breaker.call_blocking(|| {
            clock.advance(Duration::from_millis(4_500));
            Ok(())
        })
    });
    assert!(result.is_ok());
    assert_eq!(breaker.state(), CircuitState::Open);
    let cause = seen.lock().unwrap()[0].cause;
    assert_eq!(
        cause,
        Some(TransitionCause::Failures {
            kind: FailureKind::InvocationDeadline,
            count: 1
        })
    );
}
