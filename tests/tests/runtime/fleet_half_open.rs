//! The half-open state is the fleet's, on the manual clock: probe successes count whichever
//! environments made them, one probe at a time; a failure reopens; a dead prober's slot is
//! freed by its lease; a quiet environment probes at the recovery timeout; and many threads
//! racing for each probe never run two at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::store::{CircuitRecord, InMemoryStore, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, RecoveryBackoff};
use devstack::circuits::{self, BoxError, fail, is_rejection};
use devstack::doubles::{Behaviour, ScriptedStore};

const RECOVERY: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(30);
const CACHE: Duration = Duration::from_secs(5);

fn config(id: &str, clock: &ManualClock, cache: Duration) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(3)
        .recovery_timeout(RECOVERY)
        // Every opening of these tests waits the recovery timeout.
        .recovery_backoff(RecoveryBackoff::none())
        .probe_lease(LEASE)
        .recovery_jitter(Duration::from_secs(60))
        .local_cache_max_age(cache)
        .environment_id(id)
        .clock(clock.clone())
        .build()
        .expect("valid config")
}

/// Environment `id` of a fleet sharing `store`: 2 failures open, 3 probe successes close.
fn environment(id: &str, store: Arc<dyn StateStore>, clock: &ManualClock) -> CircuitBreaker {
    CircuitBreaker::new("downstream", store, config(id, clock, CACHE))
}

/// One call whose downstream answers; returns whether the downstream was called.
async fn succeed(breaker: &CircuitBreaker) -> bool {
    circuits::succeed(breaker, &AtomicUsize::new(0)).await
}

async fn stored(store: &dyn StateStore) -> CircuitRecord {
    store
        .read("downstream")
        .await
        .expect("read")
        .expect("an item")
}

/// The circuit opened now by an environment that is gone since.
async fn opened_by_a_departed_environment(store: &dyn StateStore, clock: &ManualClock) {
    let tripped = store.apply("downstream", &trip_now(clock)).await;
    assert_eq!(tripped, Ok(WriteOutcome::Won));
}

/// A trip at `clock`'s now by no environment in particular.
fn trip_now(clock: &ManualClock) -> RecordWrite {
    let opened_at = clock.unix_millis() / 1000;
    RecordWrite::Trip {
        opened_by: None,
        failure_count: 2,
        opened_at,
        expiration: opened_at + 3630,
        open_until: None,
    }
}

#[tokio::test]
async fn probe_successes_from_different_environments_close_the_circuit() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let envs: Vec<_> = ["env-a", "env-b", "env-c"]
        .iter()
        .map(|id| environment(id, Arc::clone(&store), &clock))
        .collect();
    for _ in 0..2 {
        assert!(!is_rejection(&fail(&envs[0]).await));
    }
    assert_eq!(envs[0].state(), CircuitState::Open);
    clock.advance(RECOVERY);
    // Each environment calls once, seconds apart: far less often than its cache age.
    for (i, env) in envs.iter().enumerate() {
        assert!(succeed(env).await, "env {i} probes");
        let record = stored(&*store).await;
        if i < 2 {
            assert_eq!(record.state, CircuitState::HalfOpen, "after probe {i}");
            assert_eq!(record.probe_successes, i as u32 + 1, "the fleet's count");
            assert!(
                record.probe_lease_expiry.expect("a lease") < clock.unix_millis() / 1000,
                "the lease is handed over at once"
            );
        } else {
            assert_eq!(
                record.state,
                CircuitState::Closed,
                "the third success closes"
            );
        }
        clock.advance(Duration::from_secs(2));
    }
    assert_eq!(envs[2].state(), CircuitState::Closed);
}

#[tokio::test]
async fn a_probe_failure_from_any_environment_reopens_and_the_count_starts_again() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", Arc::clone(&store), &clock);
    let b = environment("env-b", Arc::clone(&store), &clock);
    opened_by_a_departed_environment(&*store, &clock).await;
    clock.advance(RECOVERY);
    assert!(
        succeed(&a).await,
        "a quiet environment probes at the recovery timeout"
    );
    assert_eq!(stored(&*store).await.probe_successes, 1);
    clock.advance(Duration::from_secs(2));
    assert!(!is_rejection(&fail(&b).await), "b's probe runs, and fails");
    let reopened = stored(&*store).await;
    assert_eq!(reopened.state, CircuitState::Open);
    assert_eq!(reopened.opened_at, Some(clock.unix_millis() / 1000));
    assert_eq!(
        reopened.probe_successes, 0,
        "a reopen forgets the successes"
    );
    assert_eq!(b.state(), CircuitState::Open);
    // The new window: b, whose reopen opened it, probes first; two more successes are not
    // enough, three are.
    clock.advance(RECOVERY);
    for probe in 1..=3 {
        assert!(succeed(&b).await, "probe {probe}");
    }
    assert_eq!(stored(&*store).await.state, CircuitState::Closed);
}

#[tokio::test]
async fn a_dead_probers_slot_is_freed_by_its_lease() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    opened_by_a_departed_environment(&*store, &clock).await;
    clock.advance(RECOVERY);
    // A prober elects itself, counts one success, takes the next probe and dies in it.
    let now = clock.unix_millis() / 1000;
    let elect = |at: u64, successes: u32| RecordWrite::Elect {
        owner: "env-dead".into(),
        expected_opened_at: Some(now - 30),
        expected_successes: successes,
        now: at,
        lease_expiry: at + 30,
        expiration: at + 3630,
    };
    let won = |outcome| assert_eq!(outcome, Ok(WriteOutcome::Won));
    won(store.apply("downstream", &elect(now, 0)).await);
    let hand_over = RecordWrite::HandOver {
        owner: "env-dead".into(),
        probe_successes: 1,
        lease_expiry: now - 1,
        expiration: now + 3630,
    };
    won(store.apply("downstream", &hand_over).await);
    won(store.apply("downstream", &elect(now, 1)).await);
    let other = environment("env-other", store.clone(), &clock);
    store.reset_counts();
    clock.advance(Duration::from_secs(10));
    assert!(!succeed(&other).await, "the dead prober's lease is live");
    clock.advance(LEASE - Duration::from_secs(10));
    assert!(!succeed(&other).await, "through its expiry second");
    assert_eq!(store.writes(), 0, "no election while the lease is live");
    // No call for longer than its cache age since the copy went stale: quiet.
    clock.advance(Duration::from_secs(11));
    assert!(
        succeed(&other).await,
        "after the lease, a quiet environment takes over"
    );
    let record = stored(&*store).await;
    assert_eq!(record.half_open_owner.as_deref(), Some("env-other"));
    assert_eq!(
        record.probe_successes, 2,
        "the dead prober's success still counts"
    );
    clock.advance(Duration::from_secs(6));
    assert!(succeed(&other).await);
    assert_eq!(stored(&*store).await.state, CircuitState::Closed);
}

#[tokio::test]
async fn a_quiet_environment_probes_at_the_recovery_timeout_a_busy_one_waits_the_fallback() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let quiet = environment("env-quiet", store.clone(), &clock);
    let busy = environment("env-busy", store.clone(), &clock);
    opened_by_a_departed_environment(&*store, &clock).await;
    assert!(!succeed(&quiet).await);
    // The busy environment calls every second until the recovery timeout.
    for _ in 0..30 {
        assert!(!succeed(&busy).await);
        clock.advance(Duration::from_secs(1));
    }
    store.reset_counts();
    assert!(!succeed(&busy).await, "busy: the fallback first");
    assert_eq!(store.writes(), 0);
    assert!(succeed(&quiet).await, "quiet: at the recovery timeout");
    assert_eq!(
        store.consistent_reads(),
        1,
        "after one strongly consistent read"
    );
    assert_eq!(store.writes(), 2, "one election and one hand-over");
}

#[test]
fn threads_racing_for_every_probe_never_run_two_at_once() {
    for round in 0..50 {
        let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
        let clock = ManualClock::new();
        let tripped = futures_block_on(store.apply("downstream", &trip_now(&clock)));
        assert_eq!(tripped, Ok(WriteOutcome::Won));
        clock.advance(RECOVERY);
        let in_flight = AtomicU32::new(0);
        let most = AtomicU32::new(0);
        let probes = AtomicU32::new(0);
        std::thread::scope(|scope| {
            for t in 0..16 {
                // Cache age 0: every call reads, so every thread races for every hand-over.
                let config = config(&format!("env-{t}"), &clock, Duration::ZERO);
                let env = CircuitBreaker::new("downstream", Arc::clone(&store), config);
                let (in_flight, most, probes, store) = (&in_flight, &most, &probes, &store);
                scope.spawn(move || {
                    let stored_state = || {
                        let record = futures_block_on(store.read("downstream"));
                        record.expect("read").expect("an item").state
                    };
                    while stored_state() != CircuitState::Closed {
                        let _ = env.call_blocking(|| {
                            // A call that runs while the item is half-open is a probe; once
                            // closed, calls run as closed calls.
                            if stored_state() == CircuitState::HalfOpen {
                                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                                most.fetch_max(now, Ordering::SeqCst);
                                probes.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_micros(200));
                                in_flight.fetch_sub(1, Ordering::SeqCst);
                            }
                            Ok::<(), BoxError>(())
                        });
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1, "round {round}");
        assert_eq!(
            probes.load(Ordering::SeqCst),
            3,
            "round {round}: exactly the three probes that close"
        );
    }
}

/// Drives a store future on this thread (the in-memory store answers at once).
fn futures_block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(future)
}
