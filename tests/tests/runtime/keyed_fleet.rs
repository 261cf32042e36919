//! Keyed circuits and the fleet's counters, on the manual clock: each key's reports count
//! one environment as one reporter of that key, however its other keys report in between,
//! so one environment alone never raises a suspicion of a key.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::__protocol::key_item_id;
use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
use devstack::circuits::fail;

/// Environment `id`'s keyed circuit "webhooks": its own policy never trips in these tests
/// (50 consecutive failures), the fleet policy's defaults (3 failures from 2 reporters in a
/// 10 s window raise a suspicion, 1 report a second).
fn environment(id: &str, store: Arc<dyn StateStore>, clock: &ManualClock) -> KeyedCircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(50)
        .environment_id(id)
        .local_cache_max_age(Duration::from_secs(5))
        .clock(clock.clone())
        .build()
        .expect("valid config");
    KeyedCircuitBreaker::new("webhooks", store, config)
}

/// Moves `clock` 100 ms into the next fleet window (10 s).
fn to_window_start(clock: &ManualClock) {
    let into = clock.unix_millis() % 10_000;
    clock.advance(Duration::from_millis(10_000 - into + 100));
}

/// Whether `key`'s item shows a suspicion (or anything at all: no item until one).
async fn suspected(store: &InMemoryStore, key: &str) -> bool {
    let record = store
        .read(&key_item_id("webhooks", key))
        .await
        .expect("read");
    record.is_some()
}

#[tokio::test]
async fn one_environment_is_one_reporter_of_each_key_however_its_keys_interleave() {
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::with_fleet_counters());
    let a = environment("env-a", store.clone(), &clock);
    to_window_start(&clock);

    // Keys "x" and "y" fail in turn, a report interval apart: three reports of "x" in one
    // window, each after one of "y".
    for _ in 0..3 {
        for key in ["x", "y"] {
            fail(&a.breaker(key)).await.expect_err("failed");
        }
        clock.advance(Duration::from_millis(1_100));
    }
    assert!(
        !suspected(&store, "x").await,
        "one environment alone raised a suspicion of x"
    );

    // A second environment's failure of "x" makes two reporters: the suspicion holds.
    let b = environment("env-b", store.clone(), &clock);
    fail(&b.breaker("x")).await.expect_err("failed");
    assert!(
        suspected(&store, "x").await,
        "two reporters of x suspect it"
    );
}
