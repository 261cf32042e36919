//! Two call sites with the same `name` and the same store share one circuit; a different
//! store or name gives a different circuit. Checked from many threads and tasks. A later
//! call site with another config joins the first one's circuit and config (and is logged
//! at WARN, naming both: `breaker/registry.rs`); `CircuitBreaker::new` of the same name is a
//! circuit of its own on the same item.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, circuit_breaker,
};

static STORE: LazyLock<Arc<InMemoryStore>> = LazyLock::new(|| Arc::new(InMemoryStore::new()));
static DYN_STORE: LazyLock<Arc<dyn StateStore>> = LazyLock::new(|| Arc::new(InMemoryStore::new()));

fn is_open(error: &anyhow::Error) -> bool {
    error.downcast_ref::<CircuitBreakerOpenError>().is_some()
}

#[circuit_breaker(name = "inventory", failure_threshold = 3, persistence_store = STORE.clone())]
fn reserve(fail: bool) -> Result<(), anyhow::Error> {
    if fail {
        anyhow::bail!("inventory down");
    }
    Ok(())
}

#[circuit_breaker(name = "inventory", failure_threshold = 3, persistence_store = STORE.clone())]
async fn release(fail: bool) -> Result<(), anyhow::Error> {
    if fail {
        anyhow::bail!("inventory down");
    }
    Ok(())
}

/// Same name, another store: another circuit.
#[circuit_breaker(name = "inventory", failure_threshold = 3, persistence_store = InMemoryStore::new())]
fn audit() -> Result<(), anyhow::Error> {
    Ok(())
}

#[tokio::test]
async fn failures_at_two_call_sites_add_up_in_one_circuit() {
    assert!(reserve(true).is_err());
    assert!(release(true).await.is_err());
    assert!(reserve(true).is_err());
    assert!(is_open(&release(false).await.unwrap_err()));
    assert!(is_open(&reserve(false).unwrap_err()));
    audit().expect("a circuit on another store stays closed");
    let record = STORE
        .read("inventory")
        .await
        .unwrap()
        .expect("the trip was stored");
    assert_eq!(record.state, CircuitState::Open);
    assert_eq!(record.failure_count, 3);
}

static DYN_ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "ledger", failure_threshold = 4, persistence_store = DYN_STORE.clone())]
fn ledger_sync() -> Result<(), anyhow::Error> {
    DYN_ENTRIES.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("ledger down")
}

#[circuit_breaker(name = "ledger", failure_threshold = 4, persistence_store = Arc::clone(&DYN_STORE))]
async fn ledger_async() -> Result<(), anyhow::Error> {
    DYN_ENTRIES.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("ledger down")
}

#[test]
fn many_threads_and_tasks_on_two_call_sites_trip_one_circuit() {
    // A crowd of threads and tasks trips the circuit through both call sites; afterwards
    // every call, from either site, is rejected.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(|| (0..50).filter(|_| ledger_sync().is_err()).count()))
        .collect();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            runtime.spawn(async {
                for _ in 0..50 {
                    let _ = ledger_async().await;
                }
            })
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), 50);
    }
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
    let entries = DYN_ENTRIES.load(Ordering::SeqCst);
    // Every call admitted before the trip may run; with 16 callers at most 16 are in
    // flight when it trips. 800 calls were made in total.
    assert!((4..=4 + 16).contains(&entries), "{entries} entries");
    for _ in 0..10 {
        assert!(is_open(&ledger_sync().unwrap_err()));
        assert!(is_open(&runtime.block_on(ledger_async()).unwrap_err()));
    }
    assert_eq!(DYN_ENTRIES.load(Ordering::SeqCst), entries);
}

static MIXED_STORE: LazyLock<Arc<InMemoryStore>> = LazyLock::new(|| Arc::new(InMemoryStore::new()));

#[circuit_breaker(name = "mixed", failure_threshold = 2, persistence_store = MIXED_STORE.clone())]
fn mixed_first(fail: bool) -> Result<(), anyhow::Error> {
    anyhow::ensure!(!fail, "mixed down");
    Ok(())
}

/// Another config for the same circuit: it joins the first site's.
#[circuit_breaker(name = "mixed", failure_threshold = 50, persistence_store = MIXED_STORE.clone())]
fn mixed_later(fail: bool) -> Result<(), anyhow::Error> {
    anyhow::ensure!(!fail, "mixed down");
    Ok(())
}

#[tokio::test]
async fn a_later_call_site_with_another_config_joins_the_first_ones_circuit() {
    mixed_first(false).expect("closed");
    // The later site's threshold (50) is not used: the first site's 2 failures open it.
    assert!(!is_open(&mixed_later(true).unwrap_err()));
    assert!(!is_open(&mixed_later(true).unwrap_err()));
    assert!(is_open(&mixed_first(false).unwrap_err()));
    assert!(is_open(&mixed_later(false).unwrap_err()));
    let record = MIXED_STORE.read("mixed").await.unwrap().expect("tripped");
    assert_eq!(
        (record.state, record.failure_count),
        (CircuitState::Open, 2)
    );
}

#[tokio::test]
async fn circuit_breaker_new_of_a_shared_name_counts_apart_on_the_same_item() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let config = || {
        CircuitBreakerConfig::builder()
            .failure_threshold(2)
            .local_cache_max_age(std::time::Duration::ZERO)
            .build()
            .unwrap()
    };
    let one = CircuitBreaker::new("apart", Arc::clone(&store), config());
    let two = CircuitBreaker::new("apart", Arc::clone(&store), config());
    let fail = || async { Err::<(), _>(anyhow::anyhow!("down")) };
    // One failure each: neither value reaches its threshold of 2, as two environments would not.
    assert!(!is_open(&one.call(fail).await.unwrap_err()));
    assert!(!is_open(&two.call(fail).await.unwrap_err()));
    assert_eq!(store.read("apart").await.unwrap(), None, "no trip yet");
    // A trip by one reaches the other through the item (cache age 0: its next read).
    assert!(!is_open(&one.call(fail).await.unwrap_err()));
    let rejected = two.call(|| async { Ok::<_, anyhow::Error>(()) }).await;
    assert!(is_open(&rejected.unwrap_err()));
}
