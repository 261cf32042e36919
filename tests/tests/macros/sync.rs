//! `#[circuit_breaker]` on plain (sync) fns: tripping, not entering the body while open,
//! the callback's arguments, recovery. Each test has its own fn, store and clock.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState, circuit_breaker};
use devstack::circuits::manual_config;

/// The recovery timeout of every circuit here.
const RECOVERY: Duration = Duration::from_secs(30);

fn unix_secs(clock: &ManualClock) -> u64 {
    clock.unix_millis() / 1000
}

static PLAIN_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static PLAIN_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "sync-plain", config = manual_config(&PLAIN_CLOCK, 3, 1, RECOVERY), persistence_store = InMemoryStore::new())]
fn fetch_plain(fail: bool) -> Result<u32, anyhow::Error> {
    PLAIN_ENTRIES.fetch_add(1, Ordering::SeqCst);
    if fail {
        anyhow::bail!("downstream 503");
    }
    Ok(7)
}

#[test]
fn trips_after_failure_threshold_and_then_skips_the_body() {
    for _ in 0..3 {
        assert_eq!(fetch_plain(true).unwrap_err().to_string(), "downstream 503");
    }
    assert_eq!(PLAIN_ENTRIES.load(Ordering::SeqCst), 3);

    let opened_at = unix_secs(&PLAIN_CLOCK);
    PLAIN_CLOCK.advance(Duration::from_secs(29));
    for _ in 0..5 {
        let error = fetch_plain(false).unwrap_err();
        let open = error
            .downcast_ref::<CircuitBreakerOpenError>()
            .expect("a rejection carries CircuitBreakerOpenError");
        assert_eq!(&*open.circuit.name, "sync-plain");
        assert_eq!(open.circuit.state, CircuitState::Open);
        assert_eq!(open.circuit.opened_at_unix_secs, Some(opened_at));
        assert_eq!(open.circuit.failure_count, 3);
    }
    assert_eq!(
        PLAIN_ENTRIES.load(Ordering::SeqCst),
        3,
        "body entered while open"
    );

    PLAIN_CLOCK.advance(Duration::from_secs(1));
    assert_eq!(fetch_plain(false).unwrap(), 7, "the probe runs the body");
    assert_eq!(
        fetch_plain(false).unwrap(),
        7,
        "closed again after one success"
    );
    assert_eq!(PLAIN_ENTRIES.load(Ordering::SeqCst), 5);
}

static RESET_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);

#[circuit_breaker(name = "sync-reset", config = manual_config(&RESET_CLOCK, 3, 1, RECOVERY), persistence_store = InMemoryStore::new())]
fn fetch_reset(fail: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if fail {
        return Err("boom".into());
    }
    Ok(())
}

#[test]
fn a_success_resets_the_consecutive_failure_count() {
    for _ in 0..10 {
        assert!(fetch_reset(true).is_err());
        assert!(fetch_reset(true).is_err());
        assert!(fetch_reset(false).is_ok());
    }
    assert!(fetch_reset(true).is_err());
    assert!(fetch_reset(true).is_err());
    let third = fetch_reset(true).unwrap_err();
    assert_eq!(
        third.to_string(),
        "boom",
        "the third failure still ran the body"
    );
    let rejected = fetch_reset(false).unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
}

static CALLBACK_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static CALLBACK_ENTRIES: AtomicU32 = AtomicU32::new(0);
/// What the callback was given: the three arguments and the circuit.
type Seen = (String, Vec<u8>, (u32, u32), CircuitInfo);
static CALLBACK_SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// A non-`Result` error type: fine with a callback.
#[circuit_breaker(name = "sync-callback", config = manual_config(&CALLBACK_CLOCK, 3, 1, RECOVERY), on_circuit_open = cached_price, persistence_store = InMemoryStore::new())]
fn price(sku: String, mut payload: Vec<u8>, (qty, fail): (u32, u32)) -> Result<u32, String> {
    CALLBACK_ENTRIES.fetch_add(1, Ordering::SeqCst);
    payload.clear();
    if fail == 1 {
        return Err(format!("no price for {sku}"));
    }
    Ok(qty * 10)
}

fn cached_price(
    sku: String,
    payload: Vec<u8>,
    args: (u32, u32),
    circuit: CircuitInfo,
) -> Result<u32, String> {
    CALLBACK_SEEN
        .lock()
        .unwrap()
        .push((sku, payload, args, circuit));
    Ok(1)
}

#[test]
fn callback_gets_the_exact_arguments_and_the_circuit_info() {
    for _ in 0..3 {
        assert_eq!(
            price("a".into(), vec![1], (2, 1)),
            Err("no price for a".to_string())
        );
    }
    let opened_at = unix_secs(&CALLBACK_CLOCK);
    assert_eq!(price("sku-9".into(), vec![9, 8, 7], (5, 0)), Ok(1));
    assert_eq!(CALLBACK_ENTRIES.load(Ordering::SeqCst), 3);
    let seen = CALLBACK_SEEN.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (sku, payload, args, circuit) = &seen[0];
    assert_eq!(sku, "sku-9");
    assert_eq!(
        payload,
        &vec![9, 8, 7],
        "the body never ran, so nothing was moved or changed"
    );
    assert_eq!(*args, (5, 0));
    assert_eq!(
        *circuit,
        CircuitInfo::new("sync-callback", CircuitState::Open, 3, Some(opened_at))
            .with_retry_after_unix_secs(Some(opened_at + RECOVERY.as_secs()))
    );
}

static SHARED_STORE: LazyLock<Arc<InMemoryStore>> =
    LazyLock::new(|| Arc::new(InMemoryStore::new()));

#[circuit_breaker(name = "sync-inline", failure_threshold = 2, recovery_timeout = 60, persistence_store = SHARED_STORE.clone())]
fn inline(fail: bool) -> anyhow::Result<&'static str> {
    if fail {
        anyhow::bail!("down");
    }
    Ok("up")
}

#[test]
fn inline_tunables_set_the_threshold() {
    assert!(inline(true).is_err());
    assert_eq!(inline(false).unwrap(), "up");
    assert!(inline(true).is_err());
    assert!(inline(true).is_err());
    let rejected = inline(false).unwrap_err();
    let open = rejected
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("open");
    assert_eq!(open.circuit.failure_count, 2);
}

#[circuit_breaker(name = "sync-early-return", persistence_store = InMemoryStore::new())]
fn parse_port(text: &str) -> Result<u16, anyhow::Error> {
    if text.is_empty() {
        return Ok(80);
    }
    let port: u16 = text.parse()?;
    Ok(port)
}

#[test]
fn early_return_and_question_mark_work_in_the_body() {
    assert_eq!(parse_port("").unwrap(), 80);
    assert_eq!(parse_port("8080").unwrap(), 8080);
    assert!(parse_port("http").is_err());
}

#[test]
fn sync_fns_work_inside_a_tokio_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let value = runtime.block_on(async { tokio::spawn(async { parse_port("443") }).await });
    assert_eq!(value.unwrap().unwrap(), 443);
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(current.block_on(async { parse_port("22") }).unwrap(), 22);
}
