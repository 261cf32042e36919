//! Helpers of the in-process circuit tests (`tests/tests/runtime`, `tests/tests/macros`): a
//! config on a manual clock, a failing call, a counted succeeding call, and whether a result
//! is the breaker's rejection; [`keyed`], the same for keyed circuits.

pub mod keyed;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError};

/// The error type of the calls these tests guard.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A circuit that opens after `failures` consecutive failures, probes once `recovery` has
/// passed on `clock`, closes after `successes` probe successes, and trusts its copy of the
/// shared state for 5 s.
pub fn manual_config(
    clock: &ManualClock,
    failures: u32,
    successes: u32,
    recovery: Duration,
) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .failure_threshold(failures)
        .success_threshold(successes)
        .recovery_timeout(recovery)
        .local_cache_max_age(Duration::from_secs(5))
        .clock(clock.clone())
        .build()
        .expect("valid config")
}

/// One call through `breaker` whose downstream answers 503.
pub async fn fail(breaker: &CircuitBreaker) -> Result<(), BoxError> {
    breaker
        .call(|| async { Err::<(), BoxError>("downstream 503".into()) })
        .await
}

/// One call through `breaker` whose downstream answers, counted in `calls`; returns whether
/// the downstream was called (not: the breaker rejected the call).
pub async fn succeed(breaker: &CircuitBreaker, calls: &AtomicUsize) -> bool {
    let before = calls.load(Ordering::SeqCst);
    let result: Result<(), BoxError> = breaker
        .call(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .await;
    assert!(result.is_ok() || is_rejection(&result), "{result:?}");
    calls.load(Ordering::SeqCst) > before
}

/// Whether `result` is the breaker's rejection (the circuit was open), not the call's own
/// outcome.
pub fn is_rejection<T>(result: &Result<T, BoxError>) -> bool {
    matches!(result, Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some())
}

/// How a guarded call ended: `Ok(true)` it ran and succeeded, `Ok(false)` it ran and
/// failed, `Err` the breaker's rejection.
pub fn ran_or_rejected(result: Result<(), BoxError>) -> Result<bool, CircuitBreakerOpenError> {
    match result {
        Ok(()) => Ok(true),
        Err(e) => match e.downcast::<CircuitBreakerOpenError>() {
            Ok(open) => Err(*open),
            Err(_) => Ok(false),
        },
    }
}
