//! `on_circuit_open` (async or plain fn on an async protected fn, plain on a sync one,
//! methods, non-`Result` returns) and `on_transition`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitInfo, CircuitState, CircuitTransition, FailureKind, TransitionCause, circuit_breaker,
};
use devstack::circuits::manual_config;

/// The recovery timeout of every circuit here.
const RECOVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq)]
struct Order {
    id: u32,
    items: Vec<String>,
}

static ASYNC_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static ASYNC_SEEN: Mutex<Vec<(Order, CircuitInfo)>> = Mutex::new(Vec::new());

#[circuit_breaker(name = "async-cb-async", config = manual_config(&ASYNC_CLOCK, 2, 1, RECOVERY), on_circuit_open = buffer_order, persistence_store = InMemoryStore::new())]
async fn submit(order: Order) -> Result<String, anyhow::Error> {
    anyhow::bail!("order api down for {}", order.id)
}

async fn buffer_order(order: Order, circuit: CircuitInfo) -> Result<String, anyhow::Error> {
    tokio::task::yield_now().await;
    let id = order.id;
    ASYNC_SEEN.lock().unwrap().push((order, circuit));
    Ok(format!("buffered {id}"))
}

#[tokio::test]
async fn an_async_callback_is_awaited_with_the_exact_arguments() {
    for id in 0..2 {
        let order = Order { id, items: vec![] };
        assert!(submit(order).await.is_err());
    }
    let opened_at = ASYNC_CLOCK.unix_millis() / 1000;
    let order = Order {
        id: 77,
        items: vec!["book".into(), "pen".into()],
    };
    assert_eq!(submit(order.clone()).await.unwrap(), "buffered 77");
    let seen = ASYNC_SEEN.lock().unwrap();
    assert_eq!(
        *seen,
        vec![(
            order,
            CircuitInfo::new("async-cb-async", CircuitState::Open, 2, Some(opened_at))
                .with_retry_after_unix_secs(Some(opened_at + RECOVERY.as_secs()))
        )]
    );
}

static PLAIN_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static PLAIN_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "async-cb-plain", config = manual_config(&PLAIN_CLOCK, 1, 1, RECOVERY), on_circuit_open = cached_rate, persistence_store = InMemoryStore::new())]
async fn exchange_rate(from: &str, to: &str) -> Result<f64, anyhow::Error> {
    PLAIN_ENTRIES.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("rates api down for {from}->{to}")
}

fn cached_rate(from: &str, to: &str, circuit: CircuitInfo) -> Result<f64, anyhow::Error> {
    assert_eq!(circuit.state, CircuitState::Open);
    match (from, to) {
        ("EUR", "USD") => Ok(1.08),
        _ => anyhow::bail!("no cached rate"),
    }
}

#[tokio::test]
async fn a_plain_callback_serves_an_async_fn_without_any_marker() {
    assert!(exchange_rate("EUR", "USD").await.is_err());
    assert_eq!(exchange_rate("EUR", "USD").await.unwrap(), 1.08);
    assert_eq!(
        exchange_rate("GBP", "USD").await.unwrap_err().to_string(),
        "no cached rate"
    );
    assert_eq!(PLAIN_ENTRIES.load(Ordering::SeqCst), 1);
}

static VALUE_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static VALUE_ENTRIES: AtomicU32 = AtomicU32::new(0);

/// Not a `Result`: only panics count, and the callback supplies the value while open.
#[circuit_breaker(name = "cb-non-result", config = manual_config(&VALUE_CLOCK, 2, 1, RECOVERY), on_circuit_open = default_greeting, persistence_store = InMemoryStore::new())]
fn greeting(user: &str) -> String {
    VALUE_ENTRIES.fetch_add(1, Ordering::SeqCst);
    if user.is_empty() {
        panic!("no user");
    }
    format!("hello {user}")
}

fn default_greeting(_user: &str, _circuit: CircuitInfo) -> String {
    "hello".into()
}

#[test]
fn a_non_result_fn_counts_only_panics() {
    for _ in 0..5 {
        assert_eq!(greeting("ada"), "hello ada");
    }
    for _ in 0..2 {
        assert!(std::panic::catch_unwind(|| greeting("")).is_err());
    }
    assert_eq!(greeting("ada"), "hello");
    assert_eq!(VALUE_ENTRIES.load(Ordering::SeqCst), 7);
}

static TRANSITIONS: Mutex<Vec<CircuitTransition>> = Mutex::new(Vec::new());
static HOOK_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

fn record_transition(transition: CircuitTransition) {
    TRANSITIONS.lock().unwrap().push(transition);
}

#[circuit_breaker(name = "hooked", config = manual_config(&HOOK_CLOCK, 1, 1, RECOVERY), on_transition = record_transition, persistence_store = InMemoryStore::new())]
async fn hooked(fail: bool) -> Result<(), anyhow::Error> {
    if fail {
        anyhow::bail!("down");
    }
    Ok(())
}

#[tokio::test]
async fn on_transition_sees_every_transition_once_and_nothing_else() {
    for _ in 0..3 {
        hooked(false).await.unwrap();
    }
    assert!(
        TRANSITIONS.lock().unwrap().is_empty(),
        "no transition, no hook"
    );
    assert!(hooked(true).await.is_err());
    let opened_at = HOOK_CLOCK.unix_millis() / 1000;
    assert!(hooked(false).await.is_err(), "rejected while open");
    HOOK_CLOCK.advance(Duration::from_secs(10));
    hooked(false).await.unwrap();
    let transition = |from_state, to_state, opened_at, cause| {
        CircuitTransition::new("hooked", from_state, to_state, opened_at, cause)
    };
    let seen = TRANSITIONS.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    // The one failure tripped the circuit: an error, counted once.
    let cause = TransitionCause::Failures {
        kind: FailureKind::Error,
        count: 1,
    };
    assert_eq!(
        seen[0],
        transition(
            CircuitState::Closed,
            CircuitState::Open,
            Some(opened_at),
            Some(cause)
        )
    );
    assert_eq!(
        (seen[1].from_state, seen[1].to_state),
        (CircuitState::Open, CircuitState::HalfOpen)
    );
    assert_eq!(
        (seen[2].from_state, seen[2].to_state),
        (CircuitState::HalfOpen, CircuitState::Closed)
    );
}

static PANIC_HOOK_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

fn panicking_hook(_: CircuitTransition) {
    panic!("hook bug");
}

#[circuit_breaker(name = "panicking-hook", config = manual_config(&PANIC_HOOK_CLOCK, 1, 1, RECOVERY), on_transition = panicking_hook, persistence_store = InMemoryStore::new())]
fn panicking_hooked() -> Result<(), anyhow::Error> {
    anyhow::bail!("down")
}

#[test]
fn a_panicking_hook_does_not_stop_the_transition() {
    assert_eq!(panicking_hooked().unwrap_err().to_string(), "down");
    let rejected = panicking_hooked().unwrap_err();
    assert!(
        rejected
            .downcast_ref::<breaker_runtime::CircuitBreakerOpenError>()
            .is_some()
    );
}

struct Client {
    fallback_value: u32,
}

static METHOD_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

impl Client {
    #[circuit_breaker(name = "method-cb", config = manual_config(&METHOD_CLOCK, 1, 1, RECOVERY), on_circuit_open = Self::cached_quote, persistence_store = InMemoryStore::new())]
    async fn quote(&self, sku: u32) -> Result<u32, anyhow::Error> {
        anyhow::bail!("quote api down for {sku}")
    }

    async fn cached_quote(&self, sku: u32, circuit: CircuitInfo) -> Result<u32, anyhow::Error> {
        assert_eq!(&*circuit.name, "method-cb");
        Ok(self.fallback_value + sku)
    }
}

#[tokio::test]
async fn a_method_callback_receives_self_first() {
    let client = Client {
        fallback_value: 100,
    };
    assert!(client.quote(1).await.is_err());
    assert_eq!(client.quote(5).await.unwrap(), 105);
}
