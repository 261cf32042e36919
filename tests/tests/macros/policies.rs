//! The rate-policy keys of `#[circuit_breaker]`: a failure rate over the last calls, and a
//! slow-call rate, applied to the call site's circuit.

use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreakerOpenError, circuit_breaker};

#[circuit_breaker(name = "macro-failure-rate", failure_rate = 50, window_calls = 4, minimum_calls = 4, persistence_store = InMemoryStore::new())]
fn lookup(fail: bool) -> Result<u32, anyhow::Error> {
    if fail {
        anyhow::bail!("downstream 503");
    }
    Ok(1)
}

fn is_rejection<T>(result: &Result<T, anyhow::Error>) -> bool {
    matches!(result, Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some())
}

#[test]
fn failure_rate_keys_trip_on_half_of_the_last_four_calls() {
    // Never two failures in a row; the fourth call makes 2 of 4.
    for fail in [true, false, false] {
        assert!(!is_rejection(&lookup(fail)));
    }
    assert!(
        !is_rejection(&lookup(true)),
        "the fourth call runs, and trips"
    );
    assert!(is_rejection(&lookup(false)), "open");
}

#[circuit_breaker(name = "macro-slow-calls", slow_call_duration_ms = 30, slow_call_rate = 50, window_calls = 2, minimum_calls = 2, persistence_store = InMemoryStore::new())]
async fn fetch(delay_ms: u64) -> Result<u64, anyhow::Error> {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok(delay_ms)
}

#[tokio::test]
async fn slow_call_keys_trip_on_slow_successes() {
    assert_eq!(fetch(0).await.unwrap(), 0);
    assert_eq!(
        fetch(80).await.unwrap(),
        80,
        "a slow call returns its answer"
    );
    assert!(is_rejection(&fetch(0).await), "1 of 2 slow: open");
}

#[circuit_breaker(name = "macro-slow-start", failure_threshold = 1, success_threshold = 1, recovery_timeout = 1, slow_start = 600, persistence_store = InMemoryStore::new())]
fn ramped(fail: bool) -> Result<u32, anyhow::Error> {
    if fail {
        anyhow::bail!("downstream 503");
    }
    Ok(1)
}

#[test]
fn the_slow_start_key_ramps_the_calls_after_a_close() {
    assert!(!is_rejection(&ramped(true)), "the failure runs, and trips");
    assert!(is_rejection(&ramped(false)), "open");
    std::thread::sleep(Duration::from_millis(1_100));
    assert_eq!(ramped(false).unwrap(), 1, "the probe closes it");
    // A tenth of the calls at the start of a 600 s ramp: the others are turned away.
    let mut admitted = 0;
    for _ in 0..400 {
        match ramped(false) {
            Ok(_) => admitted += 1,
            Err(e) => {
                let open = e.downcast_ref::<CircuitBreakerOpenError>().expect("open");
                assert_eq!(open.reason(), breaker_runtime::StopReason::SlowStart);
            }
        }
    }
    assert!((20..=80).contains(&admitted), "{admitted} of 400");
}
