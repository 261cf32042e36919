//! A lost conditional write answers the item that beat it: from the error, where the server
//! honours `ReturnValuesOnConditionCheckFailure=ALL_OLD` as DynamoDB documents it (moto
//! does), else by one consistent read (dynalite ignores the parameter). Counted at a proxy
//! in front of each.

use breaker_runtime::store::{CircuitRecord, DynamoDbStore, RecordWrite, StateStore, WriteOutcome};
use devstack::fixtures::fault_proxy::{FaultProxy, Service};
use devstack::fixtures::local_dynamodb::{DynamoDbServer as _, Emulator, LocalDynamoDb};
use devstack::fixtures::sdk::local_sdk_config;

const T0: u64 = 1_700_000_000;

on_both!(a_lost_write_reads_the_item_only_when_the_server_did_not_return_it);

async fn a_lost_write_reads_the_item_only_when_the_server_did_not_return_it(emulator: Emulator) {
    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    db.create_circuit_table("circuits").await.expect("table");
    let proxy = FaultProxy::start(&db.address()).await.expect("proxy");
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .sdk_config(&local_sdk_config(proxy.endpoint()))
        .build()
        .expect("valid store");
    let trip = |failure_count, opened_at| RecordWrite::Trip {
        opened_by: None,
        failure_count,
        opened_at,
        expiration: opened_at + 3630,
        open_until: None,
    };
    assert_eq!(store.apply("ce", &trip(4, T0)).await, Ok(WriteOutcome::Won));
    let open = CircuitRecord::open(T0, 4);
    // What each lost write costs: the write, and a read only where no item came back.
    let requests_per_loss = match emulator {
        Emulator::Moto => 1,
        Emulator::Dynalite => 2,
    };

    // A PutItem (trip) and an UpdateItem (election) that lose.
    let before = proxy.seen(Service::Other);
    let lost = store.apply("ce", &trip(5, T0 + 1)).await;
    assert_eq!(lost, Ok(WriteOutcome::Lost(Some(open.clone()))));
    assert_eq!(proxy.seen(Service::Other) - before, requests_per_loss);

    let stale = RecordWrite::Elect {
        owner: "env-1".into(),
        expected_opened_at: Some(T0 - 60),
        expected_successes: 0,
        now: T0 + 30,
        lease_expiry: T0 + 60,
        expiration: T0 + 3660,
    };
    let before = proxy.seen(Service::Other);
    let lost = store.apply("ce", &stale).await;
    assert_eq!(lost, Ok(WriteOutcome::Lost(Some(open))));
    assert_eq!(proxy.seen(Service::Other) - before, requests_per_loss);
}

on_both!(a_trip_whose_answer_was_lost_is_recognised_as_ours);

/// Race 5, for a trip: the trip's PutItem lands, its answer is lost, and the store's own
/// client retries it; the retry loses to the item the first attempt left. That item names
/// this environment (`opened_by`), so the trip is ours: its hook fires, and it keeps the
/// first right to probe at the recovery timeout, while a busy environment without it waits
/// its fallback.
async fn a_trip_whose_answer_was_lost_is_recognised_as_ours(emulator: Emulator) {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use breaker_runtime::testing::ManualClock;
    use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
    use devstack::fixtures::fault_proxy::Fault;

    type Error = Box<dyn std::error::Error + Send + Sync>;

    let db = LocalDynamoDb::start(emulator)
        .await
        .expect("DynamoDB starts");
    db.create_circuit_table("circuits").await.expect("table");
    let proxy = FaultProxy::start(&db.address()).await.expect("proxy");
    // The store's own client: it retries a 500 (at most 2 attempts).
    let store = Arc::new(
        DynamoDbStore::builder()
            .table_name("circuits")
            .sdk_config(&local_sdk_config(proxy.endpoint()))
            .build()
            .expect("valid store"),
    );
    let clock = ManualClock::at_unix_millis(T0 * 1000);
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .recovery_jitter(Duration::ZERO)
        .local_cache_max_age(Duration::from_secs(5))
        // Generous: a store call that times out on a loaded machine would back the store
        // off, and the election at the recovery timeout with it.
        .store_timeout(Duration::from_secs(10))
        .environment_id("env-a")
        .clock(clock.clone())
        .build()
        .unwrap();
    let transitions = Arc::new(Mutex::new(Vec::new()));
    let hook = Arc::clone(&transitions);
    let breaker = CircuitBreaker::new("ce", store.clone(), config)
        .with_on_transition(move |t| hook.lock().unwrap().push((t.from_state, t.to_state)));
    let ok = || async { Ok::<(), Error>(()) };
    breaker.call(ok).await.expect("closed");

    proxy.inject(Service::Other, Some(Fault::AnswerLostOnce));
    let before = proxy.seen(Service::Other);
    let failed = breaker
        .call(|| async { Err::<(), Error>("down".into()) })
        .await;
    assert!(failed.is_err());
    assert_eq!(
        proxy.injected(Service::Other),
        1,
        "the first answer was lost"
    );
    assert!(
        proxy.seen(Service::Other) - before >= 2,
        "the trip was retried"
    );
    let stored = store.read("ce").await.unwrap().expect("the trip landed");
    assert_eq!(stored.opened_by.as_deref(), Some("env-a"));
    assert_eq!(
        *transitions.lock().unwrap(),
        [(CircuitState::Closed, CircuitState::Open)],
        "the landed trip is ours: its hook fired"
    );

    // Busy until the recovery timeout, then the first right: it probes at once.
    for _ in 0..7 {
        clock.advance(Duration::from_secs(4));
        assert!(breaker.call(ok).await.is_err(), "open");
    }
    clock.advance(Duration::from_secs(2));
    breaker
        .call(ok)
        .await
        .expect("the opener probes at the recovery timeout");
    assert_eq!(breaker.state(), CircuitState::Closed);
}
