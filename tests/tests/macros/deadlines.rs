//! The call-deadline keys of `#[circuit_breaker]`: an async fn whose body hangs is
//! abandoned at its `call_timeout`, or near the invocation deadline of `deadline::scope`,
//! and counts as a failure.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{
    CallAbandonedError, CircuitBreakerOpenError, FailureKind, circuit_breaker, deadline,
};

/// Far longer than any test waits: the body only ends by being abandoned.
const HANG: Duration = Duration::from_secs(600);

static TIMED_OUT_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "macro-call-timeout", call_timeout_ms = 50, failure_threshold = 2, fleet_detection = false, persistence_store = InMemoryStore::new())]
async fn hanging_lookup() -> Result<u32, anyhow::Error> {
    TIMED_OUT_ENTRIES.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(HANG).await;
    Ok(1)
}

/// The error of a call the breaker abandoned: its deadline came while it ran.
fn abandoned<T: std::fmt::Debug>(result: Result<T, anyhow::Error>) -> CallAbandonedError {
    result
        .unwrap_err()
        .downcast::<CallAbandonedError>()
        .expect("abandoned, not rejected")
}

/// The error of a call the breaker rejected without running it.
fn rejected<T: std::fmt::Debug>(result: Result<T, anyhow::Error>) -> CircuitBreakerOpenError {
    result
        .unwrap_err()
        .downcast::<CircuitBreakerOpenError>()
        .expect("rejected, not abandoned")
}

#[tokio::test]
async fn a_hanging_call_is_abandoned_at_its_call_timeout_and_counts_as_a_failure() {
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let abandoned = abandoned(hanging_lookup().await);
        assert_eq!(abandoned.kind, FailureKind::CallTimeout);
        assert!(abandoned.after >= Duration::from_millis(50));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "abandoned at its timeout, not at the end of the body"
        );
    }
    // Two abandoned calls made the threshold: the third is rejected without running.
    let error = rejected(hanging_lookup().await);
    assert_eq!(error.to_string(), "circuit 'macro-call-timeout' is open");
    assert_eq!(TIMED_OUT_ENTRIES.load(Ordering::SeqCst), 2);
}

static DEADLINE_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "macro-invocation-deadline", failure_threshold = 1, fleet_detection = false, persistence_store = InMemoryStore::new())]
async fn hanging_charge() -> Result<u32, anyhow::Error> {
    DEADLINE_ENTRIES.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(HANG).await;
    Ok(1)
}

fn unix_millis_in(duration: Duration) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from((now + duration).as_millis()).unwrap()
}

#[tokio::test]
async fn a_hanging_call_is_abandoned_before_the_invocation_deadline_with_room_to_write() {
    // The default margin is the store timeout (1 s): abandoned about 1 s before this.
    let invocation_deadline = unix_millis_in(Duration::from_millis(1_500));
    let abandoned = abandoned(deadline::scope(invocation_deadline, hanging_charge()).await);
    assert_eq!(abandoned.kind, FailureKind::InvocationDeadline);
    assert!(
        unix_millis_in(Duration::ZERO) < invocation_deadline,
        "answered before the deadline"
    );
    let error = rejected(hanging_charge().await);
    assert_eq!(
        error.circuit.state,
        breaker_runtime::CircuitState::Open,
        "one abandoned call tripped it: {error}"
    );
    assert_eq!(DEADLINE_ENTRIES.load(Ordering::SeqCst), 1);
}
