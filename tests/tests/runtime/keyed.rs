//! Keyed circuits on the manual clock, two environments sharing one store: a key trips and
//! the index names it; the other environment rejects that key only; the cap refuses the
//! next trip; a close removes the key; healthy keys cost no reads beyond the index's; a key
//! evicted from memory is read again from its item; concurrent trips of many keys from
//! several environments never leave an open key unnamed nor pass the cap.

use std::sync::{Arc, Mutex};

use breaker_runtime::__protocol::key_item_id;
use breaker_runtime::store::{
    InMemoryStore, KeyIndex, KeyIndexOutcome, KeyIndexWrite, RecordWrite, StateStore, WriteOutcome,
};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerOpenError, CircuitState, CircuitTransition};
use devstack::circuits::BoxError;
use devstack::circuits::keyed::{CACHE, RECOVERY, environment, succeed, trip};
use devstack::doubles::{Behaviour, ScriptedStore};

fn shared_store() -> Arc<ScriptedStore> {
    Arc::new(ScriptedStore::wrapping(
        Arc::new(InMemoryStore::new()),
        Behaviour::Healthy,
    ))
}

async fn stored_index(store: &ScriptedStore) -> KeyIndex {
    store
        .read_key_index("webhooks", true)
        .await
        .expect("index read")
        .unwrap_or_default()
}

#[tokio::test]
async fn a_key_trips_fleet_wide_within_the_cap_and_its_close_unnames_it() {
    let clock = ManualClock::new();
    let store = shared_store();
    let a = environment("env-a", store.clone(), &clock, 1);
    let b = environment("env-b", store.clone(), &clock, 1);
    let seen = Arc::new(Mutex::new(Vec::<CircuitTransition>::new()));
    let a = {
        let seen = Arc::clone(&seen);
        a.with_on_transition(move |t| seen.lock().unwrap().push(t))
    };

    // A key trips in A: the index names it, the hook learns the key.
    trip(&a, "shop-1").await;
    assert_eq!(a.state("shop-1"), CircuitState::Open);
    assert!(!succeed(&a, "shop-1").await);
    let index = stored_index(&store).await;
    assert_eq!(
        (index.keys(), index.open_keys),
        (vec!["shop-1".to_owned()], 1)
    );
    assert_eq!(a.open_keys(), vec!["shop-1".to_owned()]);
    {
        let seen = seen.lock().unwrap();
        let opened = seen.last().expect("a transition");
        assert_eq!((opened.name(), opened.key()), ("webhooks", Some("shop-1")));
        assert_eq!(opened.to_state, CircuitState::Open);
    }

    // B rejects that key only, and its rejection names the key.
    let rejected: Result<(), BoxError> = b.call("shop-1", || async { Ok(()) }).await;
    let info = &rejected
        .unwrap_err()
        .downcast::<CircuitBreakerOpenError>()
        .expect("a rejection")
        .circuit;
    assert_eq!((info.name(), info.key()), ("webhooks", Some("shop-1")));
    assert!(succeed(&b, "shop-2").await);
    assert!(succeed(&b, "shop-3").await);

    // The cap (1) refuses the next key's trip: it keeps running, in both environments.
    trip(&b, "shop-2").await;
    assert_eq!(b.state("shop-2"), CircuitState::Closed);
    assert!(succeed(&b, "shop-2").await);
    assert_eq!(stored_index(&store).await.keys(), vec!["shop-1".to_owned()]);
    let never_written = store.read(&key_item_id("webhooks", "shop-2")).await;
    assert_eq!(never_written, Ok(None));

    // A probes after the recovery timeout (its first right) and closes: the entry goes.
    clock.advance(RECOVERY);
    assert!(succeed(&a, "shop-1").await);
    assert_eq!(a.state("shop-1"), CircuitState::Closed);
    let index = stored_index(&store).await;
    assert_eq!((index.entries.len(), index.open_keys), (0, 0));
    {
        let seen = seen.lock().unwrap();
        let closed = seen.last().expect("a transition");
        assert_eq!(
            (closed.key(), closed.to_state),
            (Some("shop-1"), CircuitState::Closed)
        );
    }

    // B learns it within its cache ages, and the cap has room again.
    clock.advance(CACHE * 2);
    let mut ran = false;
    for _ in 0..3 {
        ran = succeed(&b, "shop-1").await;
    }
    assert!(ran, "B still rejects shop-1 after the close");
    trip(&b, "shop-2").await;
    assert_eq!(b.state("shop-2"), CircuitState::Open);
    assert_eq!(stored_index(&store).await.keys(), vec!["shop-2".to_owned()]);
}

#[tokio::test]
async fn healthy_keys_cost_no_reads_beyond_the_index_read() {
    let clock = ManualClock::new();
    let store = shared_store();
    let a = environment("env-a", store.clone(), &clock, 10);
    let b = environment("env-b", store.clone(), &clock, 10);
    trip(&a, "sick").await;
    store.reset_counts();

    let keys: Vec<String> = (0..200).map(|i| format!("tenant-{i}")).collect();
    for round in 0..3 {
        for key in &keys {
            assert!(succeed(&b, key).await, "{key}, round {round}");
        }
    }
    assert_eq!(store.reads(), 0, "healthy keys read no items");
    assert_eq!(store.index_reads(), 1, "one index read for the cache age");

    // A cache age later: one more index read, still no item read, and no write at all.
    clock.advance(CACHE);
    for key in &keys {
        assert!(succeed(&b, key).await);
    }
    assert_eq!((store.reads(), store.index_reads()), (0, 2));
    assert_eq!((store.writes(), store.index_writes()), (0, 0));

    // The one key the index names costs its own read, and is rejected.
    assert!(!succeed(&b, "sick").await);
    assert_eq!(store.reads(), 1);
}

#[tokio::test]
async fn a_key_evicted_from_memory_reads_its_item_again() {
    let clock = ManualClock::new();
    let store = shared_store();
    let a = environment("env-a", store.clone(), &clock, 10)
        .with_max_keys_in_memory(2)
        .expect("at least one key");
    trip(&a, "sick").await;
    // Keys called again and again: a key called once passes through without evicting the
    // hot ones (S3-FIFO), so it takes keys as hot as "sick" was to evict it.
    for _ in 0..10 {
        for key in ["k1", "k2", "k3"] {
            assert!(succeed(&a, key).await);
            assert!(succeed(&a, key).await);
        }
    }
    assert_eq!(a.keys_in_memory(), 2);
    assert_eq!(
        a.state("sick"),
        CircuitState::Closed,
        "evicted: no circuit in memory"
    );

    store.reset_counts();
    assert!(!succeed(&a, "sick").await, "its item says open");
    assert_eq!(store.reads(), 1);
    assert_eq!(a.state("sick"), CircuitState::Open);
}

#[tokio::test]
async fn a_reader_unnames_a_key_it_finds_closed_and_an_index_read_clears_a_stale_entry() {
    let clock = ManualClock::new();
    let store = shared_store();
    let a = environment("env-a", store.clone(), &clock, 10);
    trip(&a, "healed").await;
    // The key's item is closed behind the index's back (an operator's reset).
    let now = clock.unix_millis() / 1000;
    let reset = RecordWrite::Reset {
        now,
        expiration: now + 3_600,
    };
    let item = key_item_id("webhooks", "healed");
    assert_eq!(store.apply(&item, &reset).await, Ok(WriteOutcome::Won));
    // An entry nobody touched for two hours, of a key with no item.
    let old = clock.unix_millis() - 2 * 3_600_000;
    let forgotten = KeyIndexWrite::Add {
        key: "forgotten".into(),
        token: old * 1000,
        cap: None,
    };
    let added = store.apply_key_index("webhooks", &forgotten).await;
    assert_eq!(added, Ok(KeyIndexOutcome::Won));

    // Within the grace a reader leaves the entry (a re-trip may be on its way); its index
    // read checks the stale entry, whose key has no item: it goes.
    let early = environment("env-c", store.clone(), &clock, 10);
    assert!(succeed(&early, "healed").await, "its item says closed");
    assert_eq!(stored_index(&store).await.keys(), vec!["healed".to_owned()]);

    // Past the grace, the next reader of the key removes its entry.
    clock.advance(CACHE);
    let b = environment("env-b", store.clone(), &clock, 10);
    assert!(succeed(&b, "healed").await, "its item says closed");
    let index = stored_index(&store).await;
    assert_eq!((index.keys(), index.open_keys), (Vec::<String>::new(), 0));
}

#[tokio::test]
async fn a_copy_that_shows_the_cap_reached_refuses_without_a_write() {
    let clock = ManualClock::new();
    let store = shared_store();
    let a = environment("env-a", store.clone(), &clock, 1);
    trip(&a, "first").await;
    trip(&a, "second").await;
    assert_eq!(
        a.state("second"),
        CircuitState::Closed,
        "refused by the cap"
    );
    store.reset_counts();
    trip(&a, "third").await;
    assert_eq!(a.state("third"), CircuitState::Closed);
    assert_eq!((store.writes(), store.index_writes()), (0, 0));
}

/// Every key item that is open or half-open is named by the index, and the index names no
/// more keys than the cap, counting them right.
async fn assert_the_index_covers_every_open_key(store: &ScriptedStore, keys: &[String], cap: u32) {
    let index = stored_index(store).await;
    assert_eq!(index.open_keys as usize, index.entries.len(), "{index:?}");
    assert!(index.open_keys <= cap, "{index:?}");
    for key in keys {
        let record = store
            .read(&key_item_id("webhooks", key))
            .await
            .expect("read");
        if record.is_some_and(|r| r.state != CircuitState::Closed) {
            assert!(
                index.keys().contains(key),
                "{key} is open but not named: {index:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_trips_across_environments_never_pass_the_cap() {
    const CAP: u32 = 5;
    let clock = ManualClock::new();
    let store = shared_store();
    let envs: Vec<_> = (0..4)
        .map(|i| environment(&format!("env-{i}"), store.clone(), &clock, CAP))
        .collect();
    let keys: Vec<String> = (0..30).map(|i| format!("key-{i}")).collect();
    for round in 0..6 {
        let mut calls = Vec::new();
        for env in &envs {
            for (i, key) in keys.iter().enumerate() {
                let (env, key) = (env.clone(), key.clone());
                // From round 3 on, the even keys' downstreams are back: their probes close
                // them and unname them, and the cap has room for others.
                let healthy = round >= 3 && i % 2 == 0;
                calls.push(tokio::spawn(async move {
                    for _ in 0..2 {
                        match healthy {
                            true => drop(succeed(&env, &key).await),
                            false => drop(devstack::circuits::fail(&env.breaker(&key)).await),
                        }
                    }
                }));
            }
        }
        for call in calls {
            call.await.expect("the calls end");
        }
        assert_the_index_covers_every_open_key(&store, &keys, CAP).await;
        if round == 0 {
            assert_eq!(
                stored_index(&store).await.open_keys,
                CAP,
                "the cap is reached"
            );
        }
        // Recovery windows pass: probes fail and reopen, refused keys trip again.
        clock.advance(RECOVERY + CACHE);
    }
    let named = stored_index(&store).await.keys();
    assert!(!named.is_empty(), "failing keys hold the cap");
    for key in &named {
        let i: usize = key.trim_start_matches("key-").parse().unwrap();
        assert_eq!(
            i % 2,
            1,
            "{key} is healthy again, yet still named: {named:?}"
        );
    }
}

/// One key's failure that asks for 90 s (`Outcome::OpenFor`, a tenant's `Retry-After`):
/// that key opens at once (the threshold is 2) for the time asked, in another environment
/// too once it reads the index, and the other keys run.
#[tokio::test]
async fn a_keys_failure_that_asks_for_a_time_opens_that_key_alone_for_it() {
    use std::time::Duration;
    let clock = ManualClock::new();
    let store = shared_store();
    let a = environment("env-a", store.clone(), &clock, 10);
    let b = environment("env-b", store.clone(), &clock, 10);
    let now = clock.unix_millis() / 1000;
    let asked = |_: &BoxError| breaker_runtime::Outcome::OpenFor(Duration::from_secs(90));
    let throttled: Result<(), BoxError> = a
        .call_with("shop-7", asked, || async { Err("429".into()) })
        .await;
    assert!(throttled.is_err());
    assert_eq!(a.state("shop-7"), CircuitState::Open, "one hinted failure");
    assert_eq!(a.state("shop-8"), CircuitState::Closed);
    let item = store
        .read(&key_item_id("webhooks", "shop-7"))
        .await
        .expect("read")
        .expect("the key's item");
    assert_eq!(item.open_until, Some(now + 90));

    clock.advance(CACHE + Duration::from_secs(1));
    let rejected: Result<(), BoxError> = b.call("shop-7", || async { Ok(()) }).await;
    let open = rejected.expect_err("rejected in B");
    let open = open
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("a rejection");
    assert_eq!(open.retry_after_unix_secs(), Some(now + 90));
    assert!(succeed(&b, "shop-8").await, "another key runs");
}
