//! A keyed circuit's index on the manual clock, where it could lose a key that is still
//! open: a stale entry of a long (hashed) key is checked against the key's own item; a
//! trip whose environment froze between naming the key and writing the trip (while a
//! reader removed the entry as settled) is not sent unnamed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use breaker_runtime::__protocol::{key_item_id, split_key_item_id};
use breaker_runtime::CircuitState;
use breaker_runtime::store::{
    CircuitRecord, InMemoryStore, KeyIndex, KeyIndexOutcome, KeyIndexWrite, RecordWrite,
    StateStore, StoreFuture, WriteOutcome,
};
use breaker_runtime::testing::ManualClock;
use devstack::circuits::keyed::{environment, succeed, trip};

async fn stored_index(store: &InMemoryStore) -> KeyIndex {
    store
        .read_key_index("webhooks", true)
        .await
        .expect("index read")
        .unwrap_or_default()
}

/// `key` as its index entry names it.
fn encoded(key: &str) -> String {
    let id = key_item_id("webhooks", key);
    split_key_item_id(&id).expect("a key item id").1.to_owned()
}

#[tokio::test]
async fn a_stale_entry_of_a_long_key_still_open_is_refreshed_not_removed() {
    let clock = ManualClock::new();
    let store = Arc::new(InMemoryStore::new());
    let long = format!("https://hooks.example.com/{}", "x".repeat(200));
    let a = environment("env-a", store.clone(), &clock, 10);
    trip(&a, &long).await;
    assert_eq!(a.state(&long), CircuitState::Open);

    // Nobody touches the key for two hours (its environments gone): another environment's
    // index read checks the stale entry against the key's item, which is still open.
    clock.advance(Duration::from_secs(2 * 3_600));
    let b = environment("env-b", store.clone(), &clock, 10);
    assert!(succeed(&b, "another").await);

    let index = stored_index(&store).await;
    let token = index.token(&encoded(&long));
    assert!(token.is_some(), "the open key's entry was removed");
    let written_at = KeyIndex::written_at_millis(token.unwrap_or_default());
    assert!(
        written_at + 60_000 > clock.unix_millis(),
        "the entry was not refreshed"
    );
    let item = store.read(&key_item_id("webhooks", &long)).await;
    let state = item.expect("read").map(|record| record.state);
    assert_eq!(
        state,
        Some(CircuitState::Open),
        "the entry names an open key"
    );
}

/// The in-memory store, but the first add to an index is followed by a freeze of its
/// environment for `freeze` (the manual clock moves on) during which another environment,
/// reading the key absent and the entry older than the grace, removes it.
#[derive(Debug)]
struct FrozenAfterNaming {
    inner: InMemoryStore,
    clock: ManualClock,
    freeze: Duration,
    armed: AtomicBool,
}

impl StateStore for FrozenAfterNaming {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.inner.read(circuit)
    }

    fn read_consistent<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.inner.read_consistent(circuit)
    }

    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        self.inner.apply(circuit, transition)
    }

    fn keeps_key_index(&self) -> bool {
        true
    }

    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        consistent: bool,
    ) -> StoreFuture<'a, Option<KeyIndex>> {
        self.inner.read_key_index(circuit, consistent)
    }

    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, KeyIndexOutcome> {
        Box::pin(async move {
            let outcome = self.inner.apply_key_index(circuit, write).await?;
            let added = matches!(write, KeyIndexWrite::Add { .. });
            if added && outcome == KeyIndexOutcome::Won && self.armed.swap(false, Ordering::SeqCst)
            {
                self.clock.advance(self.freeze);
                let index = self.inner.read_key_index(circuit, true).await?;
                let token = index.and_then(|index| index.token(write.key()));
                let remove = KeyIndexWrite::Remove {
                    key: write.key().to_owned(),
                    token: token.expect("just added"),
                };
                let removed = self.inner.apply_key_index(circuit, &remove).await?;
                assert_eq!(removed, KeyIndexOutcome::Won);
            }
            Ok(outcome)
        })
    }
}

#[tokio::test]
async fn a_trip_frozen_past_the_grace_after_its_naming_is_not_sent_unnamed() {
    let clock = ManualClock::new();
    let store = Arc::new(FrozenAfterNaming {
        inner: InMemoryStore::new(),
        clock: clock.clone(),
        freeze: Duration::from_secs(30),
        armed: AtomicBool::new(true),
    });
    let a = environment("env-a", store.clone(), &clock, 10);
    trip(&a, "shop-1").await;

    let item = store.read(&key_item_id("webhooks", "shop-1")).await;
    let open = item
        .expect("read")
        .is_some_and(|r| r.state == CircuitState::Open);
    let named = stored_index(&store.inner).await.token("shop-1").is_some();
    assert!(
        !open || named,
        "the key's item is open and the index does not name it"
    );
    assert!(open, "named again, the trip is written");
}
