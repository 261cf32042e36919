//! Two `CircuitBreaker` values of one circuit in one process (a tower layer and the
//! attribute, a breaker built per SQS record), neither given an `environment_id`: they are
//! two probers, so while one value's probe runs the other's calls are rejected.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, RecoveryBackoff};
use devstack::circuits::{BoxError, fail, is_rejection};
use tokio::sync::Notify;

fn config(clock: &ManualClock) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(3)
        .recovery_timeout(Duration::from_secs(30))
        .recovery_backoff(RecoveryBackoff::none())
        .probe_lease(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .expect("valid config")
}

#[tokio::test]
async fn two_values_of_one_circuit_never_probe_at_once() {
    let clock = ManualClock::new();
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let first = CircuitBreaker::new("downstream", Arc::clone(&store), config(&clock));
    let second = CircuitBreaker::new("downstream", Arc::clone(&store), config(&clock));
    let tripped = fail(&first).await;
    assert!(tripped.is_err() && !is_rejection(&tripped));
    assert_eq!(first.state(), CircuitState::Open);
    clock.advance(Duration::from_secs(31));

    let started = Notify::new();
    let release = Notify::new();
    let second_ran = AtomicBool::new(false);
    let probe = first.call(|| async {
        started.notify_one();
        release.notified().await;
        Ok::<_, BoxError>(())
    });
    let beside = async {
        started.notified().await;
        let result: Result<(), BoxError> = second
            .call(|| async {
                second_ran.store(true, Ordering::SeqCst);
                Ok(())
            })
            .await;
        release.notify_one();
        result
    };
    let (probed, beside) = tokio::join!(probe, beside);
    assert!(probed.is_ok(), "the first value probes: {probed:?}");
    assert!(
        !second_ran.load(Ordering::SeqCst) && is_rejection(&beside),
        "the second value is rejected while the first's probe runs: {beside:?}"
    );
    let stored = store.read("downstream").await.expect("read").expect("item");
    assert_eq!(stored.probe_successes, 1, "one probe counted");
}
