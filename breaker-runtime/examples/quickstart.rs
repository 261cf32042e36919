//! Trip → reject → recover on the in-memory store, printing each transition.
//! Run it with `cargo run -p breaker-runtime --example quickstart`.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

async fn flaky_downstream(healthy: bool) -> Result<&'static str, Error> {
    if healthy {
        Ok("200 OK")
    } else {
        Err("503 Service Unavailable".into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // A manual clock lets the example skip the 30 s recovery timeout instantly.
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(3)
        .success_threshold(2)
        .recovery_timeout(Duration::from_secs(30))
        .clock(clock.clone())
        .build()?;
    let breaker = CircuitBreaker::new("payment-backend", Arc::new(InMemoryStore::new()), config)
        .with_on_transition(|t| println!("  ↳ transition: {} → {}", t.from_state, t.to_state));

    println!("1. the downstream fails three times in a row");
    for attempt in 1..=3 {
        let result = breaker.call(|| flaky_downstream(false)).await;
        println!("  call {attempt}: {}", describe(&result));
        assert!(result.is_err());
    }
    assert_eq!(breaker.state(), CircuitState::Open);

    println!("2. while open, calls are rejected without reaching the downstream");
    let result = breaker.call(|| flaky_downstream(true)).await;
    println!("  call: {}", describe(&result));
    assert!(matches!(&result, Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some()));

    println!("3. 30 s later one probe goes through; two successes close the circuit");
    clock.advance(Duration::from_secs(30));
    for attempt in 1..=2 {
        let result = breaker.call(|| flaky_downstream(true)).await;
        println!("  probe {attempt}: {}", describe(&result));
        assert_eq!(result?, "200 OK");
    }
    println!("4. final state: {}", breaker.state());
    assert_eq!(breaker.state(), CircuitState::Closed);
    Ok(())
}

fn describe(result: &Result<&'static str, Error>) -> String {
    match result {
        Ok(body) => format!("ok ({body})"),
        Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some() => format!("rejected: {e}"),
        Err(e) => format!("failed: {e}"),
    }
}
