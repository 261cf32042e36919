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

static BUFFERED: std::sync::Mutex<Vec<(String, breaker_runtime::StopReason)>> =
    std::sync::Mutex::new(Vec::new());
static CALLBACK_ENTRIES: AtomicU32 = AtomicU32::new(0);

/// An owned argument, as the README's `order: Order`.
#[derive(Debug)]
struct Order {
    id: String,
}

#[circuit_breaker(name = "macro-callback-deadline", call_timeout_ms = 50, failure_threshold = 2, fleet_detection = false, on_circuit_open = buffer_order, persistence_store = InMemoryStore::new())]
async fn hanging_order(order: Order) -> Result<String, anyhow::Error> {
    CALLBACK_ENTRIES.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(HANG).await;
    Ok(order.id)
}

/// Answers rejections only: an abandoned call may have reached the downstream.
fn buffer_order(
    order: Order,
    circuit: breaker_runtime::CircuitInfo,
) -> Result<String, anyhow::Error> {
    let reason = circuit.reason().expect("a rejection has a reason");
    BUFFERED.lock().unwrap().push((order.id.clone(), reason));
    Ok(format!("buffered {}", order.id))
}

#[tokio::test]
async fn a_call_with_a_callback_is_abandoned_at_its_deadline_and_the_callback_answers_rejections_only()
 {
    for n in 0..2 {
        let order = Order {
            id: format!("o-{n}"),
        };
        let started = std::time::Instant::now();
        let abandoned = abandoned(hanging_order(order).await);
        assert_eq!(abandoned.reason(), breaker_runtime::StopReason::CallTimeout);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "abandoned at its timeout, not at the end of the body"
        );
    }
    assert!(
        BUFFERED.lock().unwrap().is_empty(),
        "no abandoned call was handed to the callback"
    );
    // The two abandoned calls opened the circuit: the callback answers the third.
    let answer = hanging_order(Order { id: "o-2".into() }).await.unwrap();
    assert_eq!(answer, "buffered o-2");
    assert_eq!(
        *BUFFERED.lock().unwrap(),
        [("o-2".to_owned(), breaker_runtime::StopReason::Open)]
    );
    assert_eq!(CALLBACK_ENTRIES.load(Ordering::SeqCst), 2);
}

static DEADLINE_CALLBACK_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "macro-callback-invocation-deadline", failure_threshold = 1, fleet_detection = false, on_circuit_open = queue_later, persistence_store = InMemoryStore::new())]
async fn hanging_reserve(sku: String) -> Result<String, anyhow::Error> {
    DEADLINE_CALLBACK_ENTRIES.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(HANG).await;
    Ok(sku)
}

async fn queue_later(
    sku: String,
    circuit: breaker_runtime::CircuitInfo,
) -> Result<String, anyhow::Error> {
    Ok(format!("{sku} queued: {:?}", circuit.reason()))
}

#[tokio::test]
async fn a_call_with_a_callback_is_abandoned_before_the_invocation_deadline() {
    let invocation_deadline = unix_millis_in(Duration::from_millis(1_500));
    let abandoned =
        abandoned(deadline::scope(invocation_deadline, hanging_reserve("sku-1".into())).await);
    assert_eq!(
        abandoned.reason(),
        breaker_runtime::StopReason::InvocationDeadline
    );
    assert!(
        unix_millis_in(Duration::ZERO) < invocation_deadline,
        "answered before the deadline"
    );
    let answer = hanging_reserve("sku-2".into()).await.unwrap();
    assert_eq!(answer, "sku-2 queued: Some(Open)");
    assert_eq!(DEADLINE_CALLBACK_ENTRIES.load(Ordering::SeqCst), 1);
}
