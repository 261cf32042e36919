//! Many tasks and threads hit one circuit at the moment recovery elapses: exactly one
//! probe runs per round, and while it runs every other call is rejected without reaching
//! the protected function. Repeated for 200 rounds each.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};
use devstack::contention::{Tally, at_once_on_tasks, at_once_on_threads, counting_transitions};

type Error = Box<dyn std::error::Error + Send + Sync>;

const ROUNDS: usize = 200;

/// A circuit that is open with recovery just elapsed.
fn tripped_and_recovered() -> (CircuitBreaker, ManualClock) {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .expect("valid config");
    let breaker = CircuitBreaker::new("contended", Arc::new(InMemoryStore::new()), config);
    let tripped: Result<(), Error> = breaker.call_blocking(|| Err("boom".into()));
    assert!(tripped.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    clock.advance(Duration::from_secs(30));
    (breaker, clock)
}

/// Counts a rejection; any other error fails the test.
fn record(tally: &Tally, result: &Result<(), Error>) {
    if let Err(e) = result {
        assert!(
            e.downcast_ref::<CircuitBreakerOpenError>().is_some(),
            "unexpected error: {e}"
        );
        tally.rejected.fetch_add(1, Ordering::SeqCst);
    }
}

/// One probe ran, every other call of the round was rejected, and the probe closed the
/// circuit.
fn assert_one_probe_closed(breaker: &CircuitBreaker, tally: &Tally, others: usize, round: usize) {
    tally.assert_one_ran(others, &format!("round {round}"));
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "round {round}: the probe closed the circuit"
    );
}

#[test]
fn tasks_one_probe_per_round() {
    const TASKS: usize = 64;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    for round in 0..ROUNDS {
        let (breaker, _clock) = tripped_and_recovered();
        let tally = Arc::new(Tally::default());
        at_once_on_tasks(&runtime, TASKS, || {
            let (breaker, tally) = (breaker.clone(), tally.clone());
            async move {
                let result = breaker
                    .call(|| async {
                        tally.entered.fetch_add(1, Ordering::SeqCst);
                        tally.hold_until_rejected_async(TASKS - 1).await;
                        Ok(())
                    })
                    .await;
                record(&tally, &result);
            }
        });
        assert_one_probe_closed(&breaker, &tally, TASKS - 1, round);
    }
}

#[test]
fn threads_one_probe_per_round() {
    const THREADS: usize = 16;
    for round in 0..ROUNDS {
        let (breaker, _clock) = tripped_and_recovered();
        let tally = Tally::default();
        at_once_on_threads(THREADS, || {
            let result = breaker.call_blocking(|| {
                tally.entered.fetch_add(1, Ordering::SeqCst);
                tally.hold_until_rejected(THREADS - 1);
                Ok(())
            });
            record(&tally, &result);
        });
        assert_one_probe_closed(&breaker, &tally, THREADS - 1, round);
    }
}

#[test]
fn concurrent_failures_trip_once_and_commit_one_transition() {
    const THREADS: usize = 16;
    for round in 0..50 {
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder()
            .failure_threshold(3)
            .clock(clock)
            .build()
            .unwrap();
        let (breaker, transitions) = counting_transitions(CircuitBreaker::new(
            "storm",
            Arc::new(InMemoryStore::new()),
            config,
        ));
        at_once_on_threads(THREADS, || {
            for _ in 0..10 {
                let _: Result<(), Error> = breaker.call_blocking(|| Err("boom".into()));
            }
        });
        assert_eq!(breaker.state(), CircuitState::Open, "round {round}");
        assert_eq!(
            transitions.load(Ordering::SeqCst),
            1,
            "round {round}: one CLOSED → OPEN transition"
        );
    }
}
