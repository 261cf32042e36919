//! The blocking API from plain threads and from inside current-thread and multi-thread
//! tokio runtimes: no "cannot start a runtime from within a runtime" panic, no deadlock,
//! through a full trip → reject → probe → close cycle (every step needs the store).

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Trip, reject, recover, close — all through the blocking API. Returns the states seen.
fn full_cycle() -> Vec<CircuitState> {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(1)
        .local_cache_max_age(Duration::ZERO)
        .clock(clock.clone())
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("sync", Arc::new(InMemoryStore::new()), config);
    let mut states = vec![];
    for _ in 0..2 {
        let r: Result<(), Error> = breaker.call_blocking(|| Err("boom".into()));
        assert!(r.is_err());
    }
    states.push(breaker.state());
    let r: Result<(), Error> = breaker.call_blocking(|| Ok(()));
    assert!(
        r.unwrap_err()
            .downcast_ref::<CircuitBreakerOpenError>()
            .is_some()
    );
    clock.advance(Duration::from_secs(30));
    let r: Result<u8, Error> = breaker.call_blocking(|| Ok(1));
    assert_eq!(r.unwrap(), 1);
    states.push(breaker.state());
    states
}

/// Runs `f` on its own thread and fails the test if it does not finish in time.
fn within_deadline(name: &str, f: impl FnOnce() -> Vec<CircuitState> + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    let states = finished
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{name}: deadlock or panic"));
    assert_eq!(
        states,
        vec![CircuitState::Open, CircuitState::Closed],
        "{name}"
    );
}

#[test]
fn from_plain_threads() {
    for i in 0..8 {
        within_deadline(&format!("plain thread {i}"), full_cycle);
    }
}

#[test]
fn inside_a_current_thread_runtime() {
    within_deadline("current-thread runtime", || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async { full_cycle() })
    });
}

#[test]
fn inside_a_multi_thread_runtime_worker() {
    within_deadline("multi-thread runtime", || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async { tokio::spawn(async { full_cycle() }).await.unwrap() })
    });
}

#[test]
fn inside_spawn_blocking() {
    within_deadline("spawn_blocking", || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async { tokio::task::spawn_blocking(full_cycle).await.unwrap() })
    });
}

#[tokio::test(flavor = "current_thread")]
async fn async_and_blocking_calls_share_one_circuit_in_one_runtime() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .clock(clock)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("mixed", Arc::new(InMemoryStore::new()), config);
    let r: Result<(), Error> = breaker.call_blocking(|| Err("boom".into()));
    assert!(r.is_err());
    let r: Result<(), Error> = breaker.call(|| async { Err("boom".into()) }).await;
    assert!(r.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
}
