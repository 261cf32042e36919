//! The reopen count on DynamoDB: a reopen writes `reopen_count`, an election and a
//! hand-over (updates) keep it, a trip and a close (whole items) drop it; a Powertools
//! item without it reads as 0; a breaker fleet on dynalite waits the backed-off time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use breaker_runtime::store::{CircuitRecord, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, RecoveryBackoff};
use devstack::circuits::{BoxError, is_rejection};

use crate::item_layout::{Item, item, n, put_raw, raw, s};

const T0: u64 = 1_700_000_000;

fn key(circuit: &str) -> Item {
    item(&[("id", s(circuit))])
}

#[tokio::test]
async fn a_reopen_writes_the_count_updates_keep_it_and_whole_items_drop_it() {
    let (dynalite, store) = crate::simple_table().await;
    let circuit = "payments";
    let won = |outcome| assert_eq!(outcome, Ok(WriteOutcome::Won));
    let trip = |opened_at: u64| RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at,
        expiration: opened_at + 3630,
        open_until: None,
    };
    won(store.apply(circuit, &trip(T0)).await);
    let elect = |owner: &str, opened_at: u64, now: u64| RecordWrite::Elect {
        owner: owner.into(),
        expected_opened_at: Some(opened_at),
        expected_successes: 0,
        now,
        lease_expiry: now + 30,
        expiration: now + 3630,
    };
    won(store.apply(circuit, &elect("env-a", T0, T0 + 30)).await);
    let reopen = RecordWrite::Reopen {
        owner: "env-a".into(),
        opened_at: T0 + 31,
        failure_count: 1,
        reopen_count: 2,
        expiration: T0 + 31 + 120 + 3600,
        open_until: None,
    };
    won(store.apply(circuit, &reopen).await);
    let reopened = raw(&dynalite, "circuits", key(circuit)).await;
    assert_eq!(reopened.get("reopen_count"), Some(&n(2)));
    assert_eq!(
        reopened.get("expiration"),
        Some(&n(T0 + 3751)),
        "the TTL the reopen named"
    );

    won(store
        .apply(circuit, &elect("env-b", T0 + 31, T0 + 200))
        .await);
    let elected = raw(&dynalite, "circuits", key(circuit)).await;
    assert_eq!(elected.get("state"), Some(&s("HALF_OPEN")));
    assert_eq!(
        elected.get("reopen_count"),
        Some(&n(2)),
        "an election keeps it"
    );
    let hand_over = RecordWrite::HandOver {
        owner: "env-b".into(),
        probe_successes: 1,
        lease_expiry: T0 + 200,
        expiration: T0 + 3830,
    };
    won(store.apply(circuit, &hand_over).await);
    assert_eq!(
        raw(&dynalite, "circuits", key(circuit))
            .await
            .get("reopen_count"),
        Some(&n(2)),
        "a hand-over keeps it"
    );
    let record = store.read(circuit).await.expect("read").expect("item");
    assert_eq!((record.reopen_count, record.probe_successes), (2, 1));

    let close = RecordWrite::Close {
        owner: "env-b".into(),
        expiration: T0 + 3900,
    };
    won(store.apply(circuit, &close).await);
    assert!(
        !raw(&dynalite, "circuits", key(circuit))
            .await
            .contains_key("reopen_count")
    );
    won(store.apply(circuit, &trip(T0 + 400)).await);
    assert!(
        !raw(&dynalite, "circuits", key(circuit))
            .await
            .contains_key("reopen_count")
    );
}

#[tokio::test]
async fn a_powertools_item_reads_as_no_reopen_and_a_broken_count_heals_on_the_next_trip() {
    let (dynalite, store) = crate::simple_table().await;
    put_raw(
        &dynalite,
        "circuits",
        item(&[
            ("id", s("py")),
            ("state", s("OPEN")),
            ("failure_count", n(1)),
            ("opened_at", n(T0)),
            ("expiration", n(T0 + 3630)),
        ]),
    )
    .await;
    let record = store.read("py").await.expect("read").expect("item");
    assert_eq!(
        record,
        CircuitRecord::open(T0, 1),
        "absent: no reopen counted"
    );

    put_raw(
        &dynalite,
        "circuits",
        item(&[
            ("id", s("broken")),
            ("state", s("OPEN")),
            ("opened_at", n(T0)),
            ("reopen_count", s("three")),
        ]),
    )
    .await;
    assert_eq!(
        store.read("broken").await,
        Ok(Some(CircuitRecord::closed())),
        "unreadable: read as closed"
    );
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at: T0 + 10,
        expiration: T0 + 3640,
        open_until: None,
    };
    assert_eq!(
        store.apply("broken", &trip).await,
        Ok(WriteOutcome::Won),
        "the trip heals it"
    );
    assert_eq!(
        store.read("broken").await,
        Ok(Some(CircuitRecord::open(T0 + 10, 5)))
    );
}

fn environment(id: &str, store: &Arc<dyn StateStore>, clock: &ManualClock) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .recovery_backoff(RecoveryBackoff::exponential(2, Duration::from_secs(300)))
        .local_cache_max_age(Duration::ZERO)
        .environment_id(id)
        .clock(clock.clone())
        .build()
        .expect("valid config");
    CircuitBreaker::new("downstream", Arc::clone(store), config)
}

async fn call(breaker: &CircuitBreaker, ok: bool) -> bool {
    let ran = AtomicBool::new(false);
    let result: Result<(), BoxError> = breaker
        .call(|| async {
            ran.store(true, Ordering::SeqCst);
            if ok { Ok(()) } else { Err("503".into()) }
        })
        .await;
    assert_eq!(
        ran.load(Ordering::SeqCst),
        !is_rejection(&result),
        "{result:?}"
    );
    ran.load(Ordering::SeqCst)
}

#[tokio::test]
async fn an_environment_that_read_the_reopen_waits_the_backed_off_time() {
    let (dynalite, store) = crate::simple_table().await;
    let store: Arc<dyn StateStore> = Arc::new(store);
    let clock = ManualClock::at_unix_millis(T0 * 1000);
    let a = environment("env-a", &store, &clock);
    let b = environment("env-b", &store, &clock);
    assert!(call(&a, false).await, "trips");
    clock.advance(Duration::from_secs(30));
    assert!(
        call(&a, false).await,
        "probes at the recovery timeout, and fails"
    );
    let reopened = raw(&dynalite, "circuits", key("downstream")).await;
    assert_eq!(reopened.get("reopen_count"), Some(&n(1)));
    let record = store.read("downstream").await.expect("read").expect("item");
    let wait = RecoveryBackoff::exponential(2, Duration::from_secs(300)).wait(
        Duration::from_secs(30),
        1,
        record.failure_count,
        record.opened_at.expect("open"),
    );
    assert!(wait > Duration::from_secs(30), "{wait:?}");
    let opened = Duration::from_secs(record.opened_at.expect("open"));
    clock.set_unix_millis((opened + Duration::from_secs(30)).as_millis() as u64);
    assert!(
        !call(&b, true).await,
        "30 s after a reopen: still open for b"
    );
    clock.set_unix_millis((opened + wait - Duration::from_secs(1)).as_millis() as u64);
    assert!(!call(&b, true).await);
    clock.set_unix_millis((opened + wait).as_millis() as u64);
    assert!(call(&b, true).await, "due: b probes and closes");
    assert_eq!(b.state(), CircuitState::Closed);
    assert!(
        !raw(&dynalite, "circuits", key("downstream"))
            .await
            .contains_key("reopen_count")
    );
}
