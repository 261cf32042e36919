//! A keyed circuit's index on the manual clock, where it could lose a key that is still
//! open: a stale entry of a long (hashed) key is checked against the key's own item.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::CircuitState;
use breaker_runtime::store::{InMemoryStore, KeyIndex, StateStore, key_item_id, split_key_item_id};
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
