//! A keyed circuit's memory with keys of any length: a very long key is kept, and named to
//! hooks and rejections, by its hashed form, never in full; a short key spelled as that
//! form is another key.

use std::sync::{Arc, Mutex};

use breaker_runtime::__protocol::key_item_id;
use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitState, CircuitTransition};
use devstack::circuits::keyed::{environment, trip};

#[tokio::test]
async fn a_very_long_key_is_kept_and_named_by_its_hashed_form() {
    let clock = ManualClock::new();
    let seen = Arc::new(Mutex::new(Vec::<CircuitTransition>::new()));
    let keyed = {
        let seen = Arc::clone(&seen);
        environment("env-a", Arc::new(InMemoryStore::new()), &clock, 10)
            .with_on_transition(move |t| seen.lock().unwrap().push(t))
    };
    let long = format!("https://hooks.example.com/{}", "x".repeat(1 << 20));
    trip(&keyed, &long).await;
    assert_eq!(keyed.state(&long), CircuitState::Open);

    let named = seen
        .lock()
        .unwrap()
        .last()
        .map(|t| t.key().map(str::to_owned));
    let named = named.flatten().expect("a transition naming the key");
    assert!(named.len() <= 1024, "the hook got {} bytes", named.len());
    assert!(named.starts_with("https://hooks.example.com/") && named.contains('~'));

    // The key as its id spells it is another key, closed.
    let id = key_item_id("webhooks", &long);
    let spelled = &id["webhooks#key=".len()..];
    assert_eq!(keyed.state(spelled), CircuitState::Closed);
    assert_eq!(keyed.breaker(spelled).state(), CircuitState::Closed);
}
