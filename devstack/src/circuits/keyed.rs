//! Helpers of the keyed-circuit tests (`tests/tests/runtime/keyed.rs` on the in-memory
//! store, `tests/tests/dynamodb/keyed.rs` on dynalite): one environment's keyed circuit,
//! a key's answered call and a key's trip.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::store::StateStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker, RecoveryBackoff};

use super::{BoxError, fail, is_rejection};

/// How long an open key of [`environment`] waits for its probe.
pub const RECOVERY: Duration = Duration::from_secs(30);
/// How long [`environment`] trusts its copy of a key's shared state.
pub const CACHE: Duration = Duration::from_secs(5);

/// Environment `id`'s keyed circuit "webhooks" on `store`: 2 failures open a key, one
/// probe success closes it, at most `cap` keys open.
pub fn environment(
    id: &str,
    store: Arc<dyn StateStore>,
    clock: &ManualClock,
    cap: u32,
) -> KeyedCircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(1)
        .recovery_timeout(RECOVERY)
        .recovery_backoff(RecoveryBackoff::none())
        .local_cache_max_age(CACHE)
        .environment_id(id)
        .clock(clock.clone())
        .build()
        .expect("valid config");
    KeyedCircuitBreaker::new("webhooks", store, config)
        .with_max_open_keys(cap)
        .expect("a cap of at least 1")
}

/// One call of `key` whose downstream answers; whether the downstream was called.
pub async fn succeed(keyed: &KeyedCircuitBreaker, key: &str) -> bool {
    let called = AtomicUsize::new(0);
    let result: Result<(), BoxError> = keyed
        .call(key, || async {
            called.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .await;
    assert!(result.is_ok() || is_rejection(&result), "{result:?}");
    called.load(Ordering::SeqCst) == 1
}

/// Opens `key`'s circuit: two failing calls, neither rejected.
pub async fn trip(keyed: &KeyedCircuitBreaker, key: &str) {
    for _ in 0..2 {
        let failed = fail(&keyed.breaker(key)).await;
        assert!(!is_rejection(&failed), "{key} rejected before it tripped");
    }
}
