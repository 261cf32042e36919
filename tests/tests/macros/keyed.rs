//! `keyed_by`: a circuit per key. One key trips while the others still run, the callback
//! learns the key, `max_open_keys` caps the keys open at once, and call sites naming the
//! same keyed circuit share it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use breaker_runtime::__protocol::key_item_id;
use breaker_runtime::store::{InMemoryStore, StateStore as _};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState, circuit_breaker};
use devstack::circuits::manual_config;

const RECOVERY: Duration = Duration::from_secs(10);

static CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static STORE: LazyLock<Arc<InMemoryStore>> = LazyLock::new(|| Arc::new(InMemoryStore::new()));
static BODY_RUNS: AtomicU32 = AtomicU32::new(0);
static REJECTED: Mutex<Vec<(String, CircuitInfo)>> = Mutex::new(Vec::new());

struct Webhook {
    merchant: String,
    up: bool,
}

#[circuit_breaker(name = "macro-webhooks", keyed_by = hook.merchant, config = manual_config(&CLOCK, 2, 1, RECOVERY), on_circuit_open = retry_later, persistence_store = STORE.clone())]
async fn deliver(hook: Webhook) -> Result<u16, anyhow::Error> {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    match hook.up {
        true => Ok(200),
        false => anyhow::bail!("{}'s endpoint answers 503", hook.merchant),
    }
}

fn retry_later(hook: Webhook, circuit: CircuitInfo) -> Result<u16, anyhow::Error> {
    REJECTED.lock().unwrap().push((hook.merchant, circuit));
    Ok(429)
}

fn hook(merchant: &str, up: bool) -> Webhook {
    Webhook {
        merchant: merchant.into(),
        up,
    }
}

#[tokio::test]
async fn one_key_trips_another_still_runs_and_the_callback_learns_the_key() {
    for _ in 0..2 {
        assert!(deliver(hook("shop-17", false)).await.is_err());
    }
    let runs = BODY_RUNS.load(Ordering::SeqCst);
    assert_eq!(deliver(hook("shop-17", true)).await.unwrap(), 429);
    assert_eq!(
        BODY_RUNS.load(Ordering::SeqCst),
        runs,
        "the open key's body never ran"
    );
    assert_eq!(deliver(hook("shop-18", true)).await.unwrap(), 200);
    assert_eq!(
        BODY_RUNS.load(Ordering::SeqCst),
        runs + 1,
        "another key runs"
    );

    let rejected = REJECTED.lock().unwrap().clone();
    assert_eq!(rejected.len(), 1);
    let (merchant, circuit) = &rejected[0];
    assert_eq!(merchant, "shop-17");
    assert_eq!(
        (circuit.name(), circuit.key()),
        ("macro-webhooks", Some("shop-17"))
    );
    assert_eq!(circuit.state, CircuitState::Open);
    // The key's own item holds its trip; the keyed circuit's name has none.
    let item = STORE.read(&key_item_id("macro-webhooks", "shop-17")).await;
    assert_eq!(item.unwrap().map(|r| r.state), Some(CircuitState::Open));
    assert_eq!(STORE.read("macro-webhooks").await.unwrap(), None);
}

static CAPPED_CLOCK: LazyLock<ManualClock> = LazyLock::new(ManualClock::new);
static HOSTS: LazyLock<Arc<InMemoryStore>> = LazyLock::new(|| Arc::new(InMemoryStore::new()));

#[circuit_breaker(name = "macro-hosts", keyed_by = host, max_open_keys = 1, config = manual_config(&CAPPED_CLOCK, 1, 1, RECOVERY), persistence_store = HOSTS.clone())]
fn fetch(host: &str) -> Result<(), anyhow::Error> {
    anyhow::bail!("{host} is down")
}

/// Another call site of the same keyed circuit (same name, same store): it shares the
/// keys' circuits. Its key is any `AsRef<str>` value, here a `String` built per call.
#[circuit_breaker(name = "macro-hosts", keyed_by = format!("db-{n}"), persistence_store = HOSTS.clone())]
fn ping(n: u32) -> Result<(), anyhow::Error> {
    let _ = n;
    Ok(())
}

fn rejected(result: Result<(), anyhow::Error>) -> bool {
    result
        .err()
        .is_some_and(|e| e.downcast_ref::<CircuitBreakerOpenError>().is_some())
}

#[test]
fn max_open_keys_refuses_the_trip_past_the_cap_and_call_sites_share_the_keys() {
    assert!(!rejected(fetch("db-1")), "the first failure trips db-1");
    assert!(rejected(fetch("db-1")), "db-1 is open");
    assert!(
        rejected(ping(1)),
        "the other call site shares db-1's circuit"
    );
    assert!(ping(3).is_ok(), "and runs the other keys");
    // The cap is one key: db-2's trip is refused, its calls keep running (and failing).
    for _ in 0..3 {
        assert!(!rejected(fetch("db-2")), "db-2 is past the cap, not open");
    }
    assert!(ping(2).is_ok());
}
