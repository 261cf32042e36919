//! CircuitBreaker behaviour on the in-memory store with a manual clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, RecordWrite, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerOpenError, CircuitState, CircuitTransition};
use devstack::circuits::{BoxError as Error, fail, is_rejection, manual_config};

const RECOVERY: Duration = Duration::from_secs(30);

async fn succeed(breaker: &CircuitBreaker, entered: &AtomicUsize) -> Result<(), Error> {
    breaker
        .call(|| async {
            entered.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .await
}

#[tokio::test]
async fn trips_after_threshold_rejects_without_calling_then_recovers() {
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::new());
    let breaker = CircuitBreaker::new("svc", store.clone(), manual_config(&clock, 3, 2, RECOVERY));
    let entered = AtomicUsize::new(0);

    for _ in 0..2 {
        assert!(fail(&breaker).await.is_err());
    }
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "two failures stay closed"
    );
    assert!(fail(&breaker).await.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    let stored = store
        .read("svc")
        .await
        .unwrap()
        .expect("trip wrote a record");
    assert_eq!(stored.state, CircuitState::Open);
    assert_eq!(stored.failure_count, 3);
    assert_eq!(stored.opened_at, Some(clock.unix_millis() / 1000));

    clock.advance(Duration::from_secs(29));
    let rejected = succeed(&breaker, &entered).await;
    assert!(
        is_rejection(&rejected),
        "open before recovery rejects: {rejected:?}"
    );
    assert_eq!(
        entered.load(Ordering::SeqCst),
        0,
        "the protected call never ran while open"
    );
    let Err(e) = rejected else { unreachable!() };
    let info = &e.downcast_ref::<CircuitBreakerOpenError>().unwrap().circuit;
    assert_eq!(&*info.name, "svc");
    assert_eq!(info.state, CircuitState::Open);
    assert_eq!(info.failure_count, 3);
    assert_eq!(info.opened_at_unix_secs, Some(stored.opened_at.unwrap()));
    assert_eq!(e.to_string(), "circuit 'svc' is open");

    clock.advance(Duration::from_secs(1));
    succeed(&breaker, &entered).await.expect("first probe runs");
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    succeed(&breaker, &entered)
        .await
        .expect("second probe runs");
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(entered.load(Ordering::SeqCst), 2);
    assert_eq!(
        store.read("svc").await.unwrap().unwrap().state,
        CircuitState::Closed
    );
}

#[tokio::test]
async fn a_failed_probe_reopens_with_a_new_opened_at() {
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::new());
    let breaker = CircuitBreaker::new("svc", store.clone(), manual_config(&clock, 1, 3, RECOVERY));
    assert!(fail(&breaker).await.is_err());
    let first_open = store.read("svc").await.unwrap().unwrap().opened_at.unwrap();
    clock.advance(Duration::from_secs(30));
    assert!(
        !is_rejection(&fail(&breaker).await),
        "the probe ran and failed"
    );
    let reopened = store.read("svc").await.unwrap().unwrap();
    assert_eq!(reopened.state, CircuitState::Open);
    assert_eq!(reopened.opened_at, Some(first_open + 30));
    assert_eq!(reopened.half_open_owner, None);
    assert!(
        is_rejection(&fail(&breaker).await),
        "open again after the failed probe"
    );
}

#[tokio::test]
async fn successes_reset_the_consecutive_count() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new(
        "svc",
        Arc::new(InMemoryStore::new()),
        manual_config(&clock, 3, 1, RECOVERY),
    );
    let entered = AtomicUsize::new(0);
    for _ in 0..10 {
        assert!(fail(&breaker).await.is_err());
        assert!(fail(&breaker).await.is_err());
        succeed(&breaker, &entered).await.expect("closed");
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(breaker.info().await.failure_count, 0);
}

#[tokio::test]
async fn ignored_errors_change_nothing() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new(
        "svc",
        Arc::new(InMemoryStore::new()),
        manual_config(&clock, 2, 1, RECOVERY),
    );
    let counts = |e: &Error| !e.to_string().starts_with("400");
    for _ in 0..50 {
        let r: Result<(), Error> = breaker
            .call_with(counts, || async { Err("400 bad request".into()) })
            .await;
        assert!(!is_rejection(&r));
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert!(fail(&breaker).await.is_err());
    // An ignored error between two counted ones does not reset the count either.
    let _ = breaker
        .call_with(counts, || async { Err::<(), Error>("400".into()) })
        .await;
    assert!(fail(&breaker).await.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test]
async fn panics_count_as_failures_and_are_resumed() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new(
        "svc",
        Arc::new(InMemoryStore::new()),
        manual_config(&clock, 2, 1, RECOVERY),
    );
    for _ in 0..2 {
        let b = breaker.clone();
        let joined = tokio::spawn(async move {
            b.call(|| async {
                if true {
                    panic!("downstream client bug");
                }
                Ok::<(), Error>(())
            })
            .await
        })
        .await;
        let panic = joined.expect_err("the panic propagates to the caller");
        assert!(panic.is_panic());
    }
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test]
async fn hooks_fire_once_per_committed_transition_and_panicking_hooks_are_contained() {
    let clock = ManualClock::new();
    let seen: Arc<Mutex<Vec<CircuitTransition>>> = Arc::default();
    let log = seen.clone();
    let breaker = CircuitBreaker::new(
        "svc",
        Arc::new(InMemoryStore::new()),
        manual_config(&clock, 1, 1, RECOVERY),
    )
    .with_on_transition(move |t| {
        log.lock().unwrap().push(t);
        panic!("a broken hook");
    });
    let entered = AtomicUsize::new(0);
    assert!(fail(&breaker).await.is_err());
    assert!(is_rejection(&fail(&breaker).await));
    clock.advance(Duration::from_secs(30));
    succeed(&breaker, &entered).await.expect("probe");
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "the panicking hook did not undo the transition"
    );
    let transitions: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|t| (t.from_state, t.to_state))
        .collect();
    assert_eq!(
        transitions,
        vec![
            (CircuitState::Closed, CircuitState::Open),
            (CircuitState::Open, CircuitState::HalfOpen),
            (CircuitState::HalfOpen, CircuitState::Closed),
        ]
    );
    let first = seen.lock().unwrap()[0].clone();
    assert_eq!(first.name, "svc");
    assert_eq!(
        first.opened_at_unix_secs,
        Some(clock.unix_millis() / 1000 - 30)
    );
}

#[tokio::test]
async fn another_environments_trip_is_seen_within_the_cache_age() {
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::new());
    let breaker = CircuitBreaker::new("svc", store.clone(), manual_config(&clock, 5, 1, RECOVERY));
    let entered = AtomicUsize::new(0);
    succeed(&breaker, &entered).await.expect("closed");

    // Another environment trips the shared record.
    let opened_at = clock.unix_millis() / 1000;
    store
        .apply(
            "svc",
            &RecordWrite::Trip {
                opened_by: None,
                failure_count: 5,
                opened_at,
                expiration: opened_at + 3630,
                open_until: None,
            },
        )
        .await
        .unwrap();

    clock.advance(Duration::from_millis(4_999));
    succeed(&breaker, &entered)
        .await
        .expect("still trusting the cached closed state");
    clock.advance(Duration::from_millis(1));
    assert!(
        is_rejection(&succeed(&breaker, &entered).await),
        "the cache expired and the trip is seen"
    );
    assert_eq!(entered.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn healthy_calls_read_the_store_once_per_cache_age_and_never_write() {
    let clock = ManualClock::new();
    let store = Arc::new(devstack::doubles::ScriptedStore::new(
        devstack::doubles::Behaviour::Healthy,
    ));
    let breaker = CircuitBreaker::new("svc", store.clone(), manual_config(&clock, 5, 1, RECOVERY));
    let entered = AtomicUsize::new(0);
    for second in 0..60 {
        for _ in 0..100 {
            succeed(&breaker, &entered).await.expect("healthy");
        }
        assert_eq!(store.reads(), second / 5 + 1, "one read per 5 s window");
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(store.writes(), 0);
    assert_eq!(entered.load(Ordering::SeqCst), 6000);
}

#[tokio::test]
async fn clones_share_one_circuit() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new(
        "svc",
        Arc::new(InMemoryStore::new()),
        manual_config(&clock, 2, 1, RECOVERY),
    );
    let clone = breaker.clone();
    assert!(fail(&breaker).await.is_err());
    assert!(fail(&clone).await.is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(clone.name(), "svc");
}

#[tokio::test]
async fn info_reports_local_failures_while_closed() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::new(
        "svc",
        Arc::new(InMemoryStore::new()),
        manual_config(&clock, 3, 1, RECOVERY),
    );
    assert!(fail(&breaker).await.is_err());
    assert!(fail(&breaker).await.is_err());
    let info = breaker.info().await;
    assert_eq!(
        (info.state, info.failure_count, info.opened_at_unix_secs),
        (CircuitState::Closed, 2, None)
    );
}
