//! Keyed circuits on `DynamoDbStore` (dynalite), two environments on the manual clock: a
//! key trips and the index item names it; the other environment rejects that key only;
//! the cap refuses the next trip; a close removes the key; healthy keys cost no reads
//! beyond the index's; a malformed index item is a clear error and the keys fail open.

use std::sync::Arc;

use breaker_runtime::__protocol::{key_index_id, key_item_id};
use breaker_runtime::store::{DynamoDbStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerOpenError, CircuitState};
use devstack::circuits::BoxError;
use devstack::circuits::keyed::{CACHE, RECOVERY, environment, succeed, trip};
use devstack::doubles::{Behaviour, ScriptedStore};
use devstack::fixtures::local_dynamodb::Emulator;
use devstack::wall_clock::unix_millis;

use crate::item_layout::{item, n, put_raw, raw, s};

/// A key with every character the ids encode.
const ODD: &str = "shop #1 ~50%";

async fn named(store: &DynamoDbStore) -> Vec<String> {
    store
        .read_key_index("webhooks", true)
        .await
        .expect("index read")
        .map(|index| index.keys())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_key_trips_fleet_wide_within_the_cap_and_its_close_unnames_it() {
    let (db, store) = crate::simple_table_on(Emulator::Dynalite).await;
    let clock = ManualClock::at_unix_millis(unix_millis());
    let shared: Arc<dyn StateStore> = Arc::new(store.clone());
    let a = environment("env-a", Arc::clone(&shared), &clock, 1);
    let b = environment("env-b", Arc::clone(&shared), &clock, 1);

    // A key trips in A: its item is written, the index item names it.
    trip(&a, ODD).await;
    assert!(!succeed(&a, ODD).await);
    assert_eq!(named(&store).await, vec![ODD.to_owned()]);
    let index = raw(
        &db,
        "circuits",
        item(&[("id", s(&key_index_id("webhooks")))]),
    )
    .await;
    assert_eq!(index.get("key_index"), Some(&n(1)));
    assert_eq!(index.get("open_keys"), Some(&n(1)));
    assert!(index.contains_key("k:shop %231 %7E50%25"), "{index:?}");
    assert!(
        !index.contains_key("expiration"),
        "the index has no TTL: {index:?}"
    );
    let key_item = raw(
        &db,
        "circuits",
        item(&[("id", s(&key_item_id("webhooks", ODD)))]),
    )
    .await;
    assert_eq!(key_item.get("state"), Some(&s("OPEN")));

    // B rejects that key only, naming it.
    let rejected: Result<(), BoxError> = b.call(ODD, || async { Ok(()) }).await;
    let open = rejected
        .unwrap_err()
        .downcast::<CircuitBreakerOpenError>()
        .expect("a rejection");
    assert_eq!(
        (open.circuit.name(), open.circuit.key()),
        ("webhooks", Some(ODD))
    );
    assert!(succeed(&b, "shop-2").await);

    // The cap refuses the next trip: the key keeps running, its item is never written.
    trip(&b, "shop-2").await;
    assert!(succeed(&b, "shop-2").await);
    assert_eq!(b.state("shop-2"), CircuitState::Closed);
    assert_eq!(named(&store).await, vec![ODD.to_owned()]);
    assert_eq!(
        store.read(&key_item_id("webhooks", "shop-2")).await,
        Ok(None)
    );

    // A's probe closes the key: the index names nothing, and counts nothing.
    clock.advance(RECOVERY);
    assert!(succeed(&a, ODD).await);
    assert_eq!(a.state(ODD), CircuitState::Closed);
    assert!(named(&store).await.is_empty());
    let index = raw(
        &db,
        "circuits",
        item(&[("id", s(&key_index_id("webhooks")))]),
    )
    .await;
    assert_eq!(index.get("open_keys"), Some(&n(0)));

    // B runs the key again once its copies age; the cap has room for shop-2 now.
    clock.advance(CACHE * 2);
    let mut ran = false;
    for _ in 0..3 {
        ran = succeed(&b, ODD).await;
    }
    assert!(ran, "B still rejects the key after its close");
    trip(&b, "shop-2").await;
    assert_eq!(b.state("shop-2"), CircuitState::Open);
    assert_eq!(named(&store).await, vec!["shop-2".to_owned()]);
}

#[tokio::test]
async fn runtime_writes_take_a_ttl_off_the_index_item() {
    let (db, store) = crate::simple_table_on(Emulator::Dynalite).await;
    let clock = ManualClock::at_unix_millis(unix_millis());
    let now = clock.unix_millis() / 1000;
    // An index with a TTL, as older versions wrote: its deletion would unname every key.
    let token = clock.unix_millis() * 1000;
    put_raw(
        &db,
        "circuits",
        item(&[
            ("id", s(&key_index_id("webhooks"))),
            ("key_index", n(1)),
            ("open_keys", n(1)),
            ("k:held", n(token)),
            ("expiration", n(now + 7_200)),
        ]),
    )
    .await;

    let a = environment("env-a", Arc::new(store.clone()), &clock, 10);
    trip(&a, "shop-1").await;
    let index_id = item(&[("id", s(&key_index_id("webhooks")))]);
    let index = raw(&db, "circuits", index_id.clone()).await;
    assert!(
        !index.contains_key("expiration"),
        "an add kept the TTL: {index:?}"
    );
    assert_eq!(index.get("open_keys"), Some(&n(2)));

    // Every write, a removal too, leaves the index without one.
    let mut with_ttl = index;
    with_ttl.insert("expiration".into(), n(now + 7_200));
    put_raw(&db, "circuits", with_ttl).await;
    clock.advance(RECOVERY);
    assert!(succeed(&a, "shop-1").await, "the probe closes the key");
    let index = raw(&db, "circuits", index_id).await;
    assert!(!index.contains_key("k:shop-1"), "{index:?}");
    assert!(
        !index.contains_key("expiration"),
        "a remove kept the TTL: {index:?}"
    );
}

#[tokio::test]
async fn healthy_keys_cost_no_reads_beyond_the_index_read() {
    let (_db, store) = crate::shared_table_on(Emulator::Dynalite).await;
    let counted = Arc::new(ScriptedStore::wrapping(Arc::new(store), Behaviour::Healthy));
    let clock = ManualClock::at_unix_millis(unix_millis());
    let a = environment(
        "env-a",
        Arc::clone(&counted) as Arc<dyn StateStore>,
        &clock,
        10,
    );
    let b = environment(
        "env-b",
        Arc::clone(&counted) as Arc<dyn StateStore>,
        &clock,
        10,
    );
    trip(&a, "sick").await;
    counted.reset_counts();

    for round in 0..2 {
        for i in 0..50 {
            assert!(succeed(&b, &format!("tenant-{i}")).await, "round {round}");
        }
    }
    assert_eq!((counted.reads(), counted.index_reads()), (0, 1));
    clock.advance(CACHE);
    for i in 0..50 {
        assert!(succeed(&b, &format!("tenant-{i}")).await);
    }
    assert_eq!((counted.reads(), counted.index_reads()), (0, 2));
    assert_eq!((counted.writes(), counted.index_writes()), (0, 0));
    assert!(
        !succeed(&b, "sick").await,
        "the named key is read and rejected"
    );
    assert_eq!(counted.reads(), 1);
}

#[tokio::test]
async fn a_malformed_suspicion_is_a_clear_error_and_the_listing_names_it() {
    use breaker_runtime::unstable::OperatorReads as _;
    let (db, store) = crate::simple_table_on(Emulator::Dynalite).await;
    let broken = item(&[
        ("id", s(&key_index_id("webhooks"))),
        ("key_index", n(1)),
        ("suspected_keys", n(1)),
        ("s:x", s("not a token")),
        ("s:y", n(1_700_000_000_000_123)),
    ]);
    put_raw(&db, "circuits", broken).await;
    let error = store
        .read_key_index("webhooks", false)
        .await
        .expect_err("a malformed index");
    assert!(
        error.to_string().contains("'s:x' is not a number"),
        "{error}"
    );
    let listing = store.listing().await.expect("a listing");
    let index = &listing.key_indexes[0];
    let problems: Vec<_> = index
        .malformed
        .iter()
        .map(|p| (p.attribute.as_str(), p.unreadable))
        .collect();
    assert_eq!(problems, [("s:x", true)]);
    assert_eq!(index.suspected, [("y".to_owned(), 1_700_000_000_000)]);
    assert_eq!((index.suspected_keys, index.open_keys), (1, 0));
}

#[tokio::test]
async fn a_malformed_index_is_a_clear_error_and_the_keys_fail_open() {
    let (db, store) = crate::simple_table_on(Emulator::Dynalite).await;
    let broken = item(&[
        ("id", s(&key_index_id("webhooks"))),
        ("key_index", n(1)),
        ("open_keys", n(1)),
        ("k:x", s("not a token")),
    ]);
    put_raw(&db, "circuits", broken).await;
    let error = store
        .read_key_index("webhooks", false)
        .await
        .expect_err("a malformed index");
    let message = error.to_string();
    assert!(message.contains("webhooks#keys"), "{message}");
    assert!(message.contains("'k:x' is not a number"), "{message}");

    let clock = ManualClock::at_unix_millis(unix_millis());
    let keyed = environment("env-a", Arc::new(store), &clock, 10);
    assert!(succeed(&keyed, "x").await, "a key fails open");
    assert!(succeed(&keyed, "y").await, "and so does every other");
}
