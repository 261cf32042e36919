//! The protocol's rules for every environment, whatever the fleet, on the manual clock: a
//! half-open circuit closes however far apart its probes come; the environment that opened
//! a circuit probes first and the busy others neither race for the election nor call early
//! (the fleet's half-open state, quiet environments included, is `fleet_half_open.rs`); a
//! store that cannot be read never makes an environment forget a known OPEN; an election
//! that errors while the store answers is not won; a fleet cut off from the store probes
//! on its own after recovery.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::store::{CircuitRecord, InMemoryStore, RecordWrite, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
use devstack::circuits::{BoxError, fail, is_rejection, succeed};
use devstack::doubles::{Behaviour, ScriptedStore};

const RECOVERY: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(30);
const JITTER: Duration = Duration::from_secs(10);

/// Environment `id` of a fleet sharing `store`: 2 failures open, 3 probe successes close.
fn environment(id: &str, store: Arc<dyn StateStore>, clock: &ManualClock) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(3)
        .recovery_timeout(RECOVERY)
        .probe_lease(LEASE)
        .recovery_jitter(JITTER)
        .local_cache_max_age(Duration::from_secs(5))
        .store_error_backoff(Duration::from_secs(5))
        .environment_id(id)
        .clock(clock.clone())
        .build()
        .expect("valid config");
    CircuitBreaker::new("downstream", store, config)
}

async fn trip(breaker: &CircuitBreaker) {
    for _ in 0..2 {
        assert!(!is_rejection(&fail(breaker).await));
    }
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test]
async fn probes_far_apart_still_close_the_circuit() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let env = environment("env-a", store, &clock);
    let calls = AtomicUsize::new(0);
    trip(&env).await;
    clock.advance(RECOVERY);
    // One call every 40 s: each probe comes after the previous lease (30 s) ran out.
    for probe in 1..=3 {
        assert!(succeed(&env, &calls).await, "probe {probe} runs");
        let expected = if probe < 3 {
            CircuitState::HalfOpen
        } else {
            CircuitState::Closed
        };
        assert_eq!(env.state(), expected, "after probe {probe}");
        clock.advance(Duration::from_secs(40));
    }
}

#[tokio::test]
async fn the_environment_that_opened_probes_first_and_the_others_wait_without_writing() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let opener = environment("env-opener", store.clone(), &clock);
    let other = environment("env-other", store.clone(), &clock);
    let calls = AtomicUsize::new(0);
    assert!(succeed(&other, &calls).await, "closed: runs");
    trip(&opener).await;
    // The other environment learns of the opening from its next read; it stays busy (a
    // call every second), so it has no call to elect early on.
    clock.advance(Duration::from_secs(6));
    for _ in 6..30 {
        assert!(!succeed(&other, &calls).await, "open: rejected");
        clock.advance(Duration::from_secs(1));
    }
    store.reset_counts();
    // At recovery only the opener elects itself; the other one rejects without a write.
    assert!(!succeed(&other, &calls).await);
    assert_eq!(store.writes(), 0, "no election without the first right");
    assert!(
        succeed(&opener, &calls).await,
        "the opener probes at recovery"
    );
    assert_eq!(store.writes(), 2, "one election, and its hand-over");
    // While the opener's next probe runs (its lease live), the other one, which reads the
    // record (it made no call for longer than its cache age), neither calls nor writes.
    clock.advance(LEASE - Duration::from_secs(10));
    let probed: Result<(), BoxError> = opener
        .call(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            let writes = store.writes();
            assert!(!succeed(&other, &calls).await);
            assert_eq!(
                store.writes(),
                writes,
                "no election while the opener's lease is live"
            );
            Ok(())
        })
        .await;
    assert!(probed.is_ok(), "second probe: {probed:?}");
    assert_eq!(other.state(), CircuitState::HalfOpen);
}

#[tokio::test]
async fn without_the_opener_another_environment_verifies_then_elects_after_the_fallback() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let other = environment("env-other", store.clone(), &clock);
    let calls = AtomicUsize::new(0);
    // Another environment (gone since) opened the circuit.
    let opened_at = clock.unix_millis() / 1000;
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 2,
        opened_at,
        expiration: opened_at + 3630,
        open_until: None,
    };
    store.apply("downstream", &trip).await.expect("trip");
    // A busy environment (a call every second) waits the fallback: the cache age (5 s)
    // and a second, then its jitter.
    for second in 0..35 {
        assert!(
            !succeed(&other, &calls).await,
            "open: rejected at {second} s"
        );
        clock.advance(Duration::from_secs(1));
    }
    clock.advance(Duration::from_millis(999));
    assert!(
        !succeed(&other, &calls).await,
        "not before recovery + cache age + 1 s"
    );
    clock.advance(Duration::from_millis(1));
    let mut probed = false;
    for _ in 0..=JITTER.as_secs() {
        store.reset_counts();
        if succeed(&other, &calls).await {
            probed = true;
            break;
        }
        clock.advance(Duration::from_secs(1));
    }
    assert!(probed, "after the fallback it probes");
    assert_eq!(
        store.consistent_reads(),
        1,
        "a consistent read before the election"
    );
    assert_eq!(store.writes(), 2, "one election, and its hand-over");
    assert_eq!(other.state(), CircuitState::HalfOpen);
}

#[tokio::test]
async fn a_failed_read_keeps_a_known_open_until_recovery() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let env = environment("env-a", store.clone(), &clock);
    let calls = AtomicUsize::new(0);
    trip(&env).await;
    store.set(Behaviour::Failing);
    // Every read from here fails; the cached OPEN stands until recovery.
    for _ in 0..29 {
        clock.advance(Duration::from_secs(1));
        assert!(
            !succeed(&env, &calls).await,
            "rejected at {} ms",
            clock.unix_millis()
        );
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the downstream it knows is down is not called"
    );
    assert_eq!(env.state(), CircuitState::Open);
    // At recovery it probes on its own (the store cannot be reached) and closes alone.
    clock.advance(Duration::from_secs(1));
    for probe in 1..=3 {
        assert!(succeed(&env, &calls).await, "probe {probe} alone");
    }
    assert_eq!(env.state(), CircuitState::Closed);
}

#[tokio::test]
async fn a_throttled_election_is_not_won() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let env = environment("env-a", store.clone(), &clock);
    let calls = AtomicUsize::new(0);
    trip(&env).await;
    clock.advance(RECOVERY);
    store.set(Behaviour::ThrottlingWrites);
    assert!(
        !succeed(&env, &calls).await,
        "the election errored: no probe"
    );
    assert_eq!(env.state(), CircuitState::Open);
    assert_eq!(
        store
            .read("downstream")
            .await
            .expect("read")
            .map(|r| r.state),
        Some(CircuitState::Open)
    );
    // Once the store takes writes again (after the back-off, at most 1.5 × 5 s after a
    // throttle), the election is made.
    store.set(Behaviour::Healthy);
    clock.advance(Duration::from_millis(7_500));
    assert!(succeed(&env, &calls).await, "elected and probing");
    let now = clock.unix_millis() / 1000;
    // It called 7.5 s before (less than two cache ages): busy, so it keeps its lease for
    // its next probe.
    let mut kept = CircuitRecord::half_open(now - 37, 2, "env-a", now + 30);
    kept.probe_successes = 1;
    kept.opened_by = Some("env-a".into());
    assert_eq!(
        store.read("downstream").await.expect("read"),
        Some(kept),
        "the probe's success counted, the lease kept"
    );
}
