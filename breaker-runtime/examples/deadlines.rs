//! Calls that hang: a guarded async call still running at its `call_timeout`, or near the
//! Lambda invocation's deadline inside `deadline::scope`, is abandoned (its future
//! dropped), counts as a failure, and returns a `CallAbandonedError`, so a downstream that
//! hangs opens the circuit before Lambda kills the invocation.
//!
//! `cargo run -p breaker-runtime --example deadlines`

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{
    CallAbandonedError, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError,
    CircuitState, FailureKind, deadline,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A downstream that never answers.
async fn hanging() -> Result<u32, Error> {
    std::future::pending().await
}

fn unix_millis_in(duration: Duration) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from((now + duration).as_millis()).expect("in range")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .call_timeout(Duration::from_millis(50))
        .build()?;
    let breaker = CircuitBreaker::new("ledger-api", Arc::new(InMemoryStore::new()), config);

    println!("1. a call still running at its 50 ms call timeout is abandoned");
    let error = breaker.call(hanging).await.unwrap_err();
    println!("  {error}");
    let abandoned = error
        .downcast_ref::<CallAbandonedError>()
        .expect("abandoned");
    assert_eq!(abandoned.kind, FailureKind::CallTimeout);
    assert!(abandoned.after >= Duration::from_millis(50));

    println!("2. inside the invocation's scope, one is abandoned before the deadline");
    let breaker_without_timeout = CircuitBreaker::new(
        "report-api",
        Arc::new(InMemoryStore::new()),
        CircuitBreakerConfig::default(),
    );
    // In a handler: `deadline::scope(event.context.deadline, work(event)).await`. The call
    // is abandoned the deadline margin (by default the store timeout, 1 s) before it, so
    // the write its failure causes lands before Lambda ends the invocation.
    let invocation_deadline = unix_millis_in(Duration::from_millis(1_300));
    let error = deadline::scope(invocation_deadline, breaker_without_timeout.call(hanging))
        .await
        .unwrap_err();
    println!("  {error}");
    let abandoned = error
        .downcast_ref::<CallAbandonedError>()
        .expect("abandoned");
    assert_eq!(abandoned.kind, FailureKind::InvocationDeadline);
    assert!(
        unix_millis_in(Duration::ZERO) < invocation_deadline,
        "before the deadline"
    );

    println!("3. abandoned calls count: a second one opens the circuit, the next is rejected");
    assert!(breaker.call(hanging).await.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    let error = breaker.call(hanging).await.unwrap_err();
    println!("  {error}");
    assert!(error.downcast_ref::<CircuitBreakerOpenError>().is_some());
    Ok(())
}
