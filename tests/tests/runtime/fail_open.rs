//! A store that errors or hangs never fails or stalls the protected call: the added latency
//! is bounded by the store timeout, and the store is left alone for the back-off.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use breaker_runtime::store::{CircuitRecord, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, CircuitBreakerOpenError,
    CircuitState,
};
use devstack::doubles::{Behaviour, ScriptedStore};

type Error = Box<dyn std::error::Error + Send + Sync>;

const STORE_TIMEOUT: Duration = Duration::from_millis(200);

/// 2 failures open, 1 success closes, a 1 s cache; the store bounded by [`STORE_TIMEOUT`]
/// and left alone for 5 s after an error.
fn settings(clock: &ManualClock) -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(1)
        .local_cache_max_age(Duration::from_secs(1))
        .store_timeout(STORE_TIMEOUT)
        .store_error_backoff(Duration::from_secs(5))
        .clock(clock.clone())
}

fn breaker(store: &Arc<ScriptedStore>, clock: &ManualClock) -> CircuitBreaker {
    let config = settings(clock).build().unwrap();
    CircuitBreaker::new("flaky-store", store.clone(), config)
}

async fn healthy_calls(breaker: &CircuitBreaker, n: usize) -> usize {
    let ran = AtomicUsize::new(0);
    for _ in 0..n {
        let r: Result<(), Error> = breaker
            .call(|| async {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .await;
        r.expect("fails open: the call runs");
    }
    ran.load(Ordering::SeqCst)
}

/// Whether a call is rejected as open (it does not run).
async fn rejected(breaker: &CircuitBreaker) -> bool {
    let r: Result<(), Error> = breaker.call(|| async { Ok(()) }).await;
    r.is_err_and(|e| e.downcast_ref::<CircuitBreakerOpenError>().is_some())
}

#[tokio::test]
async fn failing_store_calls_run_and_the_store_is_backed_off() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Failing));
    let clock = ManualClock::new();
    let breaker = breaker(&store, &clock);
    assert_eq!(healthy_calls(&breaker, 1000).await, 1000);
    assert_eq!(store.calls(), 1, "one failed read, then back-off");
    clock.advance(Duration::from_millis(4_999));
    assert_eq!(healthy_calls(&breaker, 1000).await, 1000);
    assert_eq!(store.calls(), 1, "still backing off");
    clock.advance(Duration::from_millis(1));
    assert_eq!(healthy_calls(&breaker, 1000).await, 1000);
    assert_eq!(store.calls(), 2, "one retry per back-off window");
}

#[tokio::test]
async fn hanging_store_adds_at_most_the_store_timeout() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Hanging));
    let clock = ManualClock::new();
    let breaker = breaker(&store, &clock);
    let started = Instant::now();
    assert_eq!(healthy_calls(&breaker, 1).await, 1);
    let first = started.elapsed();
    assert!(
        first >= STORE_TIMEOUT,
        "the read was waited for up to the timeout: {first:?}"
    );
    assert!(first < STORE_TIMEOUT * 5, "and no longer: {first:?}");
    let started = Instant::now();
    assert_eq!(healthy_calls(&breaker, 1000).await, 1000);
    assert!(
        started.elapsed() < STORE_TIMEOUT,
        "backed off: no call waited for the store"
    );
    assert_eq!(store.calls(), 1);
}

#[tokio::test]
async fn a_failed_trip_write_still_opens_locally_then_recovers_alone() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let breaker = breaker(&store, &clock);
    assert_eq!(healthy_calls(&breaker, 1).await, 1);
    store.set(Behaviour::Failing);
    clock.advance(Duration::from_secs(2));
    for _ in 0..2 {
        let r: Result<(), Error> = breaker
            .call(|| async { Err("downstream down".into()) })
            .await;
        assert!(r.is_err());
    }
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "open locally although the store failed"
    );
    assert!(rejected(&breaker).await);

    // Past the back-off the store still fails: the environment stays open on its own.
    clock.advance(Duration::from_secs(10));
    assert!(rejected(&breaker).await);

    // After recovery it probes and closes on its own authority.
    clock.advance(Duration::from_secs(20));
    assert_eq!(healthy_calls(&breaker, 1).await, 1);
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[test]
fn hanging_store_under_the_blocking_api() {
    let store = Arc::new(ScriptedStore::new(Behaviour::Hanging));
    let clock = ManualClock::new();
    let breaker = breaker(&store, &clock);
    let started = Instant::now();
    for _ in 0..100 {
        let r: Result<u8, Error> = breaker.call_blocking(|| Ok(1));
        assert_eq!(r.unwrap(), 1);
    }
    assert!(started.elapsed() < STORE_TIMEOUT * 5);
    assert_eq!(store.calls(), 1);
}

/// A breaker of `name` on a healthy store, on the manual clock: a 30 s recovery without
/// jitter (the fallback is the cache age and a second: 2 s).
fn recovering(name: &str) -> (Arc<ScriptedStore>, ManualClock, CircuitBreaker) {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let clock = ManualClock::new();
    let config = settings(&clock)
        .recovery_timeout(Duration::from_secs(30))
        .recovery_jitter(Duration::ZERO)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new(name, store.clone(), config);
    (store, clock, breaker)
}

/// Two failing calls: the circuit trips.
async fn trip(breaker: &CircuitBreaker) {
    for _ in 0..2 {
        let r: Result<(), Error> = breaker
            .call(|| async { Err("downstream down".into()) })
            .await;
        assert!(r.is_err());
    }
}

/// A call that counts in `ran` when it runs.
async fn counted(breaker: &CircuitBreaker, ran: &AtomicUsize) -> Result<(), Error> {
    breaker
        .call(|| async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<(), Error>(())
        })
        .await
}

/// The store refuses every election from the trip on; the first is refused at the
/// recovery timeout, and the environment probes alone at 122 s (three recovery timeouts
/// of refusals and the fallback). Returns the record the store keeps.
async fn closed_alone(
    store: &ScriptedStore,
    clock: &ManualClock,
    breaker: &CircuitBreaker,
) -> CircuitRecord {
    assert_eq!(healthy_calls(breaker, 1).await, 1);
    store.set(Behaviour::DenyingUpdates);
    trip(breaker).await;
    let stored = store
        .read(breaker.name())
        .await
        .unwrap()
        .expect("the trip, a put, landed");
    assert_eq!(stored.state, CircuitState::Open);

    let ran = AtomicUsize::new(0);
    clock.advance(Duration::from_secs(30));
    for second in 30..122 {
        let r = counted(breaker, &ran).await;
        assert!(
            r.unwrap_err()
                .downcast_ref::<CircuitBreakerOpenError>()
                .is_some(),
            "rejected {second} s after the trip"
        );
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    counted(breaker, &ran).await.expect("a probe of its own");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(breaker.state(), CircuitState::Closed, "closed alone");
    stored
}

/// Race 3: a store that answers reads and whole-item writes but refuses every election (an
/// IAM role without `dynamodb:UpdateItem`) does not keep the circuit open for ever. After
/// three recovery timeouts of refused elections and its fallback, the environment probes
/// on its own, as when the store is unreachable; the record the store keeps, read again
/// while the refusals are recent, does not undo the probe's close.
#[tokio::test]
async fn refused_elections_end_in_a_probe_of_its_own_which_later_reads_keep() {
    let (store, clock, breaker) = recovering("refused");
    let stored = closed_alone(&store, &clock, &breaker).await;

    // The store still says OPEN (the close lost to it); reading it again does not reopen.
    clock.advance(Duration::from_secs(20));
    assert_eq!(healthy_calls(&breaker, 10).await, 10);
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(store.read("refused").await.unwrap(), Some(stored.clone()));

    // A recovery window after the last refusal, the one election sent to the store is
    // refused again: the environment goes on alone, and the call still runs.
    for _ in 0..30 {
        clock.advance(Duration::from_secs(1));
        assert_eq!(healthy_calls(&breaker, 1).await, 1);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(store.read("refused").await.unwrap(), Some(stored));
}

/// One refused election (a throttled or timed-out attempt), then a quiet spell longer than
/// the bound, is no store that refuses: the next election goes to the store, which answers
/// it, and the probe's close lands there for the whole fleet.
#[tokio::test]
async fn one_refused_election_then_a_quiet_spell_elects_through_the_store() {
    let (store, clock, breaker) = recovering("refused-once");
    assert_eq!(healthy_calls(&breaker, 1).await, 1);
    trip(&breaker).await;
    store.set(Behaviour::DenyingUpdates);
    clock.advance(Duration::from_secs(30));
    assert!(rejected(&breaker).await, "the election was refused");
    store.set(Behaviour::Healthy);

    clock.advance(Duration::from_secs(170));
    let ran = AtomicUsize::new(0);
    counted(&breaker, &ran).await.expect("the probe");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let stored = store.read("refused-once").await.unwrap().expect("written");
    assert_eq!(
        stored.state,
        CircuitState::Closed,
        "the probe was elected, and closed, through the store"
    );
}

/// An environment acting alone tries the store again once per recovery window: once the
/// store answers elections again, its next election lands and the close with it, so the
/// fleet rejoins the store instead of running closed beside an OPEN item.
#[tokio::test]
async fn an_environment_acting_alone_rejoins_a_store_that_answers_again() {
    let (store, clock, breaker) = recovering("rejoins");
    let stored = closed_alone(&store, &clock, &breaker).await;
    store.set(Behaviour::Healthy);

    // The last refusal was at 120 s at the latest: by a recovery timeout and the fallback
    // after it (152 s), and the cache age, the environment has elected through the store.
    for _ in 122..160 {
        clock.advance(Duration::from_secs(1));
        assert_eq!(healthy_calls(&breaker, 1).await, 1);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    let now = store.read("rejoins").await.unwrap().expect("written");
    assert_ne!(now, stored);
    assert_eq!(
        now.state,
        CircuitState::Closed,
        "the close reached the store"
    );
}

/// Race 5, without a retry: a trip that landed but whose answer (and its retries') was
/// lost is applied locally; the next read shows the opening, written by this environment
/// (`opened_by`), so the first right to probe it is this environment's: it probes at the
/// recovery timeout instead of waiting the fallback as a busy environment without it does.
#[tokio::test]
async fn a_trip_whose_answer_was_lost_is_ours_once_a_read_names_its_writer() {
    let (store, clock, breaker) = recovering("answer-lost");
    assert_eq!(healthy_calls(&breaker, 1).await, 1);
    store.set(Behaviour::LosingWriteAnswers);
    trip(&breaker).await;
    store.set(Behaviour::Healthy);
    let stored = store.read("answer-lost").await.unwrap().expect("landed");
    assert_eq!(stored.state, CircuitState::Open);

    // Busy: a call every second, each read again once the cache and the back-off allow.
    for second in 1..30 {
        clock.advance(Duration::from_secs(1));
        assert!(rejected(&breaker).await, "open {second} s after the trip");
    }
    clock.advance(Duration::from_secs(1));
    let ran = AtomicUsize::new(0);
    counted(&breaker, &ran)
        .await
        .expect("the first right: a probe at the recovery timeout");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
