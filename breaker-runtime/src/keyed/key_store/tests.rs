use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::config::CircuitBreakerConfig;
use crate::keyed::index::grace_millis;
use crate::protocol::CircuitState;
use crate::store::{InMemoryStore, KeyIndexWrite};
use crate::testing::ManualClock;

/// What another environment does while this one's key read or close is on its way.
type Meanwhile = Box<dyn FnOnce(&InMemoryStore) + Send>;

/// An in-memory store on which another environment's steps land while a key item's
/// read or write is on its way (after the store took it, before its answer).
#[derive(Default)]
struct Interleaved {
    inner: InMemoryStore,
    meanwhile: Mutex<Option<Meanwhile>>,
    /// Eventually consistent reads answer from a replica that has no item yet.
    lagging: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Interleaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interleaved")
    }
}

impl Interleaved {
    fn then(&self) {
        if let Some(meanwhile) = self.meanwhile.lock().unwrap().take() {
            meanwhile(&self.inner);
        }
    }
}

impl StateStore for Interleaved {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        Box::pin(async move {
            let record = self.inner.read(circuit).await;
            self.then();
            match self.lagging.load(std::sync::atomic::Ordering::Relaxed) {
                true => Ok(None),
                false => record,
            }
        })
    }

    fn read_consistent<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.inner.read(circuit)
    }

    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        Box::pin(async move {
            let outcome = self.inner.apply(circuit, transition).await;
            self.then();
            outcome
        })
    }

    fn keeps_key_index(&self) -> bool {
        true
    }

    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        consistent: bool,
    ) -> StoreFuture<'a, Option<crate::store::KeyIndex>> {
        self.inner.read_key_index(circuit, consistent)
    }

    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, crate::store::KeyIndexOutcome> {
        self.inner.apply_key_index(circuit, write)
    }
}

/// Environment B named key `a` at `at` (unix millis); its trip write is on its way.
async fn named_by_b(store: &InMemoryStore, at: u64) {
    let add = KeyIndexWrite::Add {
        key: "a".into(),
        token: at * 1000,
        cap: Some(1),
    };
    store.apply_key_index("webhooks", &add).await.unwrap();
}

/// B's trip write lands just within the grace of its naming, and the grace ends.
fn b_trips_within_the_grace(clock: &ManualClock, grace: u64) -> Meanwhile {
    let clock = clock.clone();
    Box::new(move |store| {
        clock.advance(Duration::from_millis(grace - 1));
        let trip = RecordWrite::Trip {
            opened_by: Some("B".into()),
            failure_count: 1,
            opened_at: clock.unix_millis() / 1000,
            expiration: 0,
            open_until: None,
        };
        let item = key_item_id("webhooks", "a");
        let landed = futures_now(store.apply(&item, &trip));
        assert_eq!(landed, WriteOutcome::Won);
        clock.advance(Duration::from_millis(2));
    })
}

/// The in-memory store answers at once.
fn futures_now<T>(future: StoreFuture<'_, T>) -> T {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut future = future;
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(answer) => answer.unwrap(),
        std::task::Poll::Pending => panic!("the in-memory store answers at once"),
    }
}

fn setup() -> (ManualClock, Arc<Interleaved>, KeyStore, u64) {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let store = Arc::new(Interleaved::default());
    let index = IndexCopy::new("webhooks".into(), store.clone(), &config);
    (
        clock,
        store,
        KeyStore::new(Arc::new(index), "a"),
        grace_millis(&config),
    )
}

async fn a_stays_named(store: &Interleaved) {
    let item = store
        .inner
        .read(&key_item_id("webhooks", "a"))
        .await
        .unwrap();
    assert_eq!(item.map(|r| r.state), Some(CircuitState::Open));
    let index = store.inner.read_key_index("webhooks", true).await.unwrap();
    assert!(
        index.is_some_and(|i| i.token("a").is_some()),
        "the open key must stay named by the index"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_read_that_saw_the_key_closed_before_its_trip_landed_keeps_the_entry() {
    let (clock, store, keys, grace) = setup();
    named_by_b(&store.inner, clock.unix_millis()).await;
    *store.meanwhile.lock().unwrap() = Some(b_trips_within_the_grace(&clock, grace));

    // The read was sent before B's trip landed: it sees no item, an answer the grace,
    // counted from the answer, would take for a settled key.
    assert_eq!(keys.read("ignored").await, Ok(None));
    a_stays_named(&store).await;
}

#[tokio::test(flavor = "current_thread")]
async fn suspected_keys_never_fill_the_cap_and_their_namings_end() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let store = Arc::new(InMemoryStore::new());
    let index = Arc::new(IndexCopy::new("webhooks".into(), store.clone(), &config));
    index.set_cap(10);
    let now = || clock.unix_millis() / 1000;
    let suspect = RecordWrite::Suspect {
        now: now(),
        until: now() + 10,
        expiration: 0,
    };
    // A thousand keys from request data, each suspected once, then never called again.
    for i in 0..1_000 {
        let hostile = KeyStore::new(Arc::clone(&index), &format!("hostile-{i}"));
        assert_eq!(
            hostile.apply("ignored", &suspect).await,
            Ok(WriteOutcome::Won),
            "{i}"
        );
    }
    let one_more = KeyStore::new(Arc::clone(&index), "one-more");
    assert_eq!(
        one_more.apply("ignored", &suspect).await,
        Ok(WriteOutcome::Lost(None)),
        "past the suspicions' own bound"
    );
    let trip = |at: u64| RecordWrite::Trip {
        opened_by: Some("A".into()),
        failure_count: 5,
        opened_at: at,
        expiration: 0,
        open_until: None,
    };
    let real = KeyStore::new(Arc::clone(&index), "real");
    assert_eq!(
        real.apply("ignored", &trip(now())).await,
        Ok(WriteOutcome::Won),
        "suspicions take no slot of the cap"
    );

    // Ten minutes later (past every environment's own delay), one environment's index
    // reads remove the ended suspicions, three a read.
    clock.advance(Duration::from_secs(600));
    let reader = KeyStore::new(Arc::clone(&index), "reader");
    for _ in 0..334 {
        clock.advance(config.local_cache_max_age() + Duration::from_millis(1));
        reader.read("ignored").await.unwrap();
    }
    let stored = store
        .read_key_index("webhooks", true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.suspected_keys, stored.suspected.len()), (0, 0));
    assert_eq!(stored.open_keys, 1, "the real key stays named");
}

#[tokio::test(flavor = "current_thread")]
async fn a_read_that_missed_an_operators_override_named_by_a_slow_clock_keeps_the_entry() {
    let (clock, store, keys, _) = setup();
    let now = clock.unix_millis();
    let item = key_item_id("webhooks", "a");
    let forced = crate::protocol::Override::new(
        crate::protocol::OverrideKind::ForcedOpen,
        "operator",
        now / 1000,
    );
    let set = RecordWrite::Override {
        set: forced,
        replaces: None,
        expiration: None,
    };
    assert_eq!(store.inner.apply(&item, &set).await, Ok(WriteOutcome::Won));
    // The CLI's clock is 10 s behind: its naming looks older than the grace.
    named_by_b(&store.inner, now - 10_000).await;
    store
        .lagging
        .store(true, std::sync::atomic::Ordering::Relaxed);

    assert_eq!(
        keys.read("ignored").await,
        Ok(None),
        "the replica missed it"
    );
    let index = store.inner.read_key_index("webhooks", true).await.unwrap();
    assert!(
        index.is_some_and(|i| i.token("a").is_some()),
        "the override must stay named by the index"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_close_that_a_trip_followed_within_the_grace_keeps_the_entry() {
    let (clock, store, keys, grace) = setup();
    let at = clock.unix_millis();
    // A holds the key half-open; B, which still read it closed, named it again.
    let item = key_item_id("webhooks", "a");
    let trip = RecordWrite::Trip {
        opened_by: Some("A".into()),
        failure_count: 1,
        opened_at: at / 1000 - 60,
        expiration: 0,
        open_until: None,
    };
    store.inner.apply(&item, &trip).await.unwrap();
    let elect = RecordWrite::Elect {
        owner: "A".into(),
        expected_opened_at: Some(at / 1000 - 60),
        expected_successes: 0,
        now: at / 1000,
        lease_expiry: at / 1000 + 30,
        expiration: 0,
    };
    assert_eq!(
        store.inner.apply(&item, &elect).await,
        Ok(WriteOutcome::Won)
    );
    named_by_b(&store.inner, at).await;
    // A's copy names the key with B's token (its item read, half-open, removes nothing).
    assert!(keys.read("ignored").await.unwrap().is_some());

    *store.meanwhile.lock().unwrap() = Some(b_trips_within_the_grace(&clock, grace));
    let close = RecordWrite::Close {
        owner: "A".into(),
        expiration: 0,
    };
    assert_eq!(keys.apply("ignored", &close).await, Ok(WriteOutcome::Won));
    a_stays_named(&store).await;
}
