//! Shadow mode: a new circuit's thresholds tried on live traffic without rejecting a call.
//! Every call runs; what the circuit would have done (open, reject, probe, close) goes to
//! the `on_shadow` hooks (and, with `emf::log_shadow`, to CloudWatch), and the shared
//! record is never written.
//!
//! `cargo run -p breaker-runtime --example shadow`

use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, ShadowDecision};

type Error = Box<dyn std::error::Error + Send + Sync>;

async fn downstream(healthy: bool) -> Result<&'static str, Error> {
    if healthy {
        Ok("200 OK")
    } else {
        Err("503 Service Unavailable".into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .shadow(true)
        .clock(clock.clone())
        .build()?;
    let store = Arc::new(InMemoryStore::new());
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&verdicts);
    let breaker =
        CircuitBreaker::new("search-api", store.clone(), config).with_on_shadow(move |event| {
            println!("  ↳ shadow: {} ({})", event.decision, event.name());
            seen.lock().unwrap().push(event.decision);
        });

    println!("two failures: the circuit would open; it stays closed");
    for _ in 0..2 {
        assert!(breaker.call(|| downstream(false)).await.is_err());
    }
    assert_eq!(breaker.state(), CircuitState::Closed);

    println!("a call the open circuit would have rejected runs, and is reported");
    assert_eq!(breaker.call(|| downstream(true)).await?, "200 OK");

    println!("30 s later: the would-be probe succeeds, the circuit would close");
    clock.advance(Duration::from_secs(30));
    assert_eq!(breaker.call(|| downstream(true)).await?, "200 OK");

    assert_eq!(
        *verdicts.lock().unwrap(),
        [
            ShadowDecision::WouldOpen,
            ShadowDecision::WouldReject,
            ShadowDecision::WouldProbe,
            ShadowDecision::WouldClose,
        ]
    );
    assert_eq!(store.read("search-api").await?, None, "nothing was written");
    Ok(())
}
