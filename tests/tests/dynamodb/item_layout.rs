//! The DynamoDB item layout is Powertools' exactly: after each transition the raw item has
//! exactly the Powertools attribute names, types and values; items written in Powertools'
//! shape by someone else are read correctly. Each test on dynalite and on moto's DynamoDB.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::store::{CircuitRecord, DynamoDbStore, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};
use devstack::fixtures::local_dynamodb::{DynamoDbServer, Emulator};
use devstack::wall_clock::unix_secs;

pub(crate) type Item = HashMap<String, AttributeValue>;
type Error = Box<dyn std::error::Error + Send + Sync>;

pub(crate) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

pub(crate) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(crate) fn item(attributes: &[(&str, AttributeValue)]) -> Item {
    attributes
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect()
}

pub(crate) async fn raw(db: &impl DynamoDbServer, table: &str, key: Item) -> Item {
    db.client()
        .get_item()
        .table_name(table)
        .set_key(Some(key))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem")
        .item
        .expect("the item exists")
}

pub(crate) async fn put_raw(db: &impl DynamoDbServer, table: &str, item: Item) {
    db.client()
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .expect("PutItem");
}

const T0: u64 = 1_700_000_000;

on_both!(every_transition_writes_the_powertools_item);

async fn every_transition_writes_the_powertools_item(emulator: Emulator) {
    let (db, store) = crate::simple_table_on(emulator).await;
    let key = item(&[("id", s("payment-backend"))]);
    let circuit = "payment-backend";

    // A breaker's trip names its writer in an attribute of its own, which Powertools
    // ignores; an election keeps it, a reopen and a close drop it.
    let trip = RecordWrite::Trip {
        opened_by: Some("env-1".into()),
        failure_count: 5,
        opened_at: T0,
        expiration: T0 + 3630,
        open_until: None,
    };
    assert_eq!(store.apply(circuit, &trip).await, Ok(WriteOutcome::Won));
    assert_eq!(
        raw(&db, "circuits", key.clone()).await,
        item(&[
            ("id", s(circuit)),
            ("state", s("OPEN")),
            ("failure_count", n(5)),
            ("opened_at", n(T0)),
            ("opened_by", s("env-1")),
            ("expiration", n(T0 + 3630)),
        ])
    );

    let election = RecordWrite::Elect {
        owner: "env-1".into(),
        expected_opened_at: Some(T0),
        expected_successes: 0,
        now: T0 + 30,
        lease_expiry: T0 + 60,
        expiration: T0 + 3660,
    };
    assert_eq!(store.apply(circuit, &election).await, Ok(WriteOutcome::Won));
    assert_eq!(
        raw(&db, "circuits", key.clone()).await,
        item(&[
            ("id", s(circuit)),
            ("state", s("HALF_OPEN")),
            ("failure_count", n(5)),
            ("opened_at", n(T0)),
            ("half_open_owner", s("env-1")),
            ("probe_lease_expiry", n(T0 + 60)),
            ("opened_by", s("env-1")),
            ("expiration", n(T0 + 3660)),
        ])
    );

    let reopen = RecordWrite::Reopen {
        owner: "env-1".into(),
        opened_at: T0 + 31,
        failure_count: 1,
        reopen_count: 1,
        expiration: T0 + 3661,
        open_until: None,
    };
    assert_eq!(store.apply(circuit, &reopen).await, Ok(WriteOutcome::Won));
    assert_eq!(
        raw(&db, "circuits", key.clone()).await,
        item(&[
            ("id", s(circuit)),
            ("state", s("OPEN")),
            ("failure_count", n(1)),
            ("opened_at", n(T0 + 31)),
            ("reopen_count", n(1)),
            ("expiration", n(T0 + 3661)),
        ])
    );

    let election = RecordWrite::Elect {
        owner: "env-1".into(),
        expected_opened_at: Some(T0 + 31),
        expected_successes: 0,
        now: T0 + 62,
        lease_expiry: T0 + 92,
        expiration: T0 + 3692,
    };
    assert_eq!(store.apply(circuit, &election).await, Ok(WriteOutcome::Won));
    let close = RecordWrite::Close {
        owner: "env-1".into(),
        expiration: T0 + 3693,
    };
    assert_eq!(store.apply(circuit, &close).await, Ok(WriteOutcome::Won));
    // Closed: no opening, no owner, no lease left behind.
    assert_eq!(
        raw(&db, "circuits", key).await,
        item(&[
            ("id", s(circuit)),
            ("state", s("CLOSED")),
            ("failure_count", n(0)),
            ("expiration", n(T0 + 3693)),
        ])
    );
}

on_both!(the_composite_key_holds_the_static_pk_and_the_name);

async fn the_composite_key_holds_the_static_pk_and_the_name(emulator: Emulator) {
    let (db, store) = crate::shared_table_on(emulator).await;
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 3,
        opened_at: T0,
        expiration: T0 + 3630,
        open_until: None,
    };
    assert_eq!(store.apply("ce", &trip).await, Ok(WriteOutcome::Won));
    let key = item(&[("pk", s("circuit_breaker#orders")), ("sk", s("ce"))]);
    assert_eq!(
        raw(&db, "shared", key).await,
        item(&[
            ("pk", s("circuit_breaker#orders")),
            ("sk", s("ce")),
            ("state", s("OPEN")),
            ("failure_count", n(3)),
            ("opened_at", n(T0)),
            ("expiration", n(T0 + 3630)),
        ])
    );
}

on_both!(powertools_shaped_items_are_read_correctly);

async fn powertools_shaped_items_are_read_correctly(emulator: Emulator) {
    let (db, store) = crate::simple_table_on(emulator).await;
    let cases = [
        (
            item(&[
                ("id", s("closed")),
                ("state", s("CLOSED")),
                ("failure_count", n(0)),
                ("expiration", n(T0)),
            ]),
            CircuitRecord::closed(),
        ),
        (
            item(&[
                ("id", s("open")),
                ("state", s("OPEN")),
                ("failure_count", n(5)),
                ("opened_at", n(T0)),
                ("expiration", n(T0 + 3630)),
            ]),
            CircuitRecord::open(T0, 5),
        ),
        (
            item(&[
                ("id", s("half")),
                ("state", s("HALF_OPEN")),
                ("failure_count", n(5)),
                ("opened_at", n(T0)),
                ("half_open_owner", s("python-env-7")),
                ("probe_lease_expiry", n(T0 + 60)),
                ("expiration", n(T0 + 3630)),
            ]),
            CircuitRecord::half_open(T0, 5, "python-env-7", T0 + 60),
        ),
    ];
    for (raw_item, expected) in cases {
        let AttributeValue::S(circuit) = &raw_item["id"] else {
            unreachable!()
        };
        let circuit = circuit.clone();
        put_raw(&db, "circuits", raw_item).await;
        assert_eq!(store.read(&circuit).await, Ok(Some(expected)), "{circuit}");
    }
    // A Python environment probes; this (Rust) one may not close its circuit.
    let close = RecordWrite::Close {
        owner: "rust-env".into(),
        expiration: T0,
    };
    assert!(matches!(
        store.apply("half", &close).await,
        Ok(WriteOutcome::Lost(Some(_)))
    ));
    // ... and the Python prober's own close (same owner id) wins.
    let close = RecordWrite::Close {
        owner: "python-env-7".into(),
        expiration: T0,
    };
    assert_eq!(store.apply("half", &close).await, Ok(WriteOutcome::Won));
}

on_both!(a_circuit_opened_by_another_writer_rejects_and_a_trip_sets_the_ttl);

async fn a_circuit_opened_by_another_writer_rejects_and_a_trip_sets_the_ttl(emulator: Emulator) {
    let (db, store) = crate::simple_table_on(emulator).await;
    let store: Arc<DynamoDbStore> = Arc::new(store);
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .recovery_timeout(Duration::from_secs(120))
        .local_cache_max_age(Duration::ZERO)
        .build()
        .expect("valid config");

    // Opened by a Powertools function a moment ago: this environment rejects.
    let now = unix_secs();
    put_raw(
        &db,
        "circuits",
        item(&[
            ("id", s("shared")),
            ("state", s("OPEN")),
            ("failure_count", n(5)),
            ("opened_at", n(now)),
            ("expiration", n(now + 3720)),
        ]),
    )
    .await;
    let shared = CircuitBreaker::new("shared", store.clone(), config.clone());
    let rejected: Result<(), Error> = shared.call(|| async { Ok(()) }).await;
    let open = rejected.unwrap_err();
    let open = open
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("open error");
    assert_eq!(open.circuit.opened_at_unix_secs, Some(now));

    // A trip by this environment: expiration = now + recovery_timeout + 3600.
    let own = CircuitBreaker::new("own", store, config);
    let before = unix_secs();
    for _ in 0..2 {
        let _: Result<(), Error> = own.call(|| async { Err("503".into()) }).await;
    }
    let after = unix_secs();
    assert_eq!(own.state(), CircuitState::Open);
    let written = raw(&db, "circuits", item(&[("id", s("own"))])).await;
    let AttributeValue::N(expiration) = &written["expiration"] else {
        panic!("{written:?}")
    };
    let expiration: u64 = expiration.parse().expect("integer");
    assert!(
        (before + 3720..=after + 3720).contains(&expiration),
        "{expiration} vs {before}"
    );
    assert_eq!(written["state"], s("OPEN"));
    assert_eq!(written["failure_count"], n(2));
}
