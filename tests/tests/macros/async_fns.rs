//! `#[circuit_breaker]` on async fns and on fns returning `impl Future`: tripping, not
//! entering the body while open, recovery, `?`, and `Send` futures.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CallAbandonedError, CircuitBreakerOpenError, CircuitState, circuit_breaker};
use devstack::circuits::manual_config;

/// The recovery timeout of every circuit here.
const RECOVERY: Duration = Duration::from_secs(30);

static CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "async-plain", config = manual_config(&CLOCK, 3, 2, RECOVERY), persistence_store = InMemoryStore::new())]
async fn charge(amount: u32, fail: bool) -> Result<u32, anyhow::Error> {
    ENTRIES.fetch_add(1, Ordering::SeqCst);
    tokio::task::yield_now().await;
    if fail {
        anyhow::bail!("payment api 503");
    }
    Ok(amount)
}

#[tokio::test]
async fn trips_skips_the_body_while_open_and_recovers() {
    for _ in 0..3 {
        assert!(charge(1, true).await.is_err());
    }
    let opened_at = CLOCK.unix_millis() / 1000;
    for _ in 0..4 {
        let error = charge(2, false).await.unwrap_err();
        let open = error
            .downcast_ref::<CircuitBreakerOpenError>()
            .expect("open error");
        assert_eq!(&*open.circuit.name, "async-plain");
        assert_eq!(open.circuit.state, CircuitState::Open);
        assert_eq!(open.circuit.opened_at_unix_secs, Some(opened_at));
    }
    assert_eq!(ENTRIES.load(Ordering::SeqCst), 3);

    CLOCK.advance(Duration::from_secs(30));
    assert_eq!(charge(5, false).await.unwrap(), 5);
    // Half-open until the second probe success.
    assert_eq!(charge(6, false).await.unwrap(), 6);
    assert_eq!(charge(7, false).await.unwrap(), 7);
    assert_eq!(ENTRIES.load(Ordering::SeqCst), 6);
}

static REOPEN_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

#[circuit_breaker(name = "async-reopen", config = manual_config(&REOPEN_CLOCK, 3, 2, RECOVERY), persistence_store = InMemoryStore::new())]
async fn flaky(fail: bool) -> Result<(), anyhow::Error> {
    if fail {
        anyhow::bail!("still down");
    }
    Ok(())
}

#[tokio::test]
async fn a_failed_probe_reopens_with_a_new_opened_at() {
    for _ in 0..3 {
        assert!(flaky(true).await.is_err());
    }
    REOPEN_CLOCK.advance(Duration::from_secs(31));
    assert_eq!(flaky(true).await.unwrap_err().to_string(), "still down");
    let reopened_at = REOPEN_CLOCK.unix_millis() / 1000;
    let error = flaky(false).await.unwrap_err();
    let open = error
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("open");
    assert_eq!(open.circuit.opened_at_unix_secs, Some(reopened_at));
}

/// A hand-written error enum with `From` conversions, like thiserror's `#[from]`.
#[derive(Debug)]
enum LookupError {
    NotFound,
    Parse(std::num::ParseIntError),
    Open(CircuitBreakerOpenError),
    /// Abandoned at its deadline (none of these tests sets one).
    Abandoned,
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl From<std::num::ParseIntError> for LookupError {
    fn from(error: std::num::ParseIntError) -> Self {
        Self::Parse(error)
    }
}

impl From<CircuitBreakerOpenError> for LookupError {
    fn from(error: CircuitBreakerOpenError) -> Self {
        Self::Open(error)
    }
}

impl From<CallAbandonedError> for LookupError {
    fn from(_: CallAbandonedError) -> Self {
        Self::Abandoned
    }
}

#[circuit_breaker(name = "async-question-mark", failure_threshold = 2, persistence_store = InMemoryStore::new())]
pub(crate) async fn lookup(key: &str) -> Result<u64, LookupError> {
    if key.is_empty() {
        return Err(LookupError::NotFound);
    }
    let value: u64 = key.parse()?;
    Ok(value)
}

#[tokio::test]
async fn question_mark_early_return_and_a_custom_error_enum() {
    assert_eq!(lookup("42").await.unwrap(), 42);
    assert!(matches!(lookup("").await, Err(LookupError::NotFound)));
    assert!(
        matches!(lookup("x").await, Err(LookupError::Parse(e)) if e.to_string().contains("invalid digit"))
    );
    assert!(
        matches!(lookup("1").await, Err(LookupError::Open(e)) if &*e.circuit.name == "async-question-mark")
    );
}

#[circuit_breaker(name = "returns-impl-future", failure_threshold = 1, persistence_store = InMemoryStore::new())]
fn fetch_later(id: u32) -> impl std::future::Future<Output = Result<u32, anyhow::Error>> + Send {
    async move {
        tokio::task::yield_now().await;
        if id == 0 {
            anyhow::bail!("no id 0");
        }
        Ok(id * 2)
    }
}

#[tokio::test]
async fn fns_returning_impl_future_are_guarded_when_awaited() {
    assert_eq!(fetch_later(4).await.unwrap(), 8);
    let pending = fetch_later(0);
    assert!(pending.await.is_err());
    let error = fetch_later(4).await.unwrap_err();
    assert!(error.downcast_ref::<CircuitBreakerOpenError>().is_some());
}

#[circuit_breaker(name = "async-send", persistence_store = InMemoryStore::new())]
async fn send_safe(n: u64) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(n + 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_futures_are_send_and_run_concurrently() {
    let tasks: Vec<_> = (0..64).map(|n| tokio::spawn(send_safe(n))).collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap().unwrap();
    }
    assert_eq!(total, (1..=64).sum::<u64>());
}

static CONCURRENT_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "async-concurrent", failure_threshold = 5, persistence_store = InMemoryStore::new())]
async fn always_fails() -> Result<(), anyhow::Error> {
    CONCURRENT_ENTRIES.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("down")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_see_the_circuit_open_after_the_threshold() {
    for round in 0..20 {
        let tasks: Vec<_> = (0..32).map(|_| tokio::spawn(always_fails())).collect();
        for task in tasks {
            assert!(task.await.unwrap().is_err());
        }
        // Calls that were admitted before the trip may still fail, but once open no
        // later round enters the body.
        let entries = CONCURRENT_ENTRIES.load(Ordering::SeqCst);
        assert!(entries >= 5, "round {round}: {entries} entries");
        assert!(
            entries <= 32,
            "round {round}: {entries} entries, body entered while open"
        );
    }
}
