//! The contract's key index cases: a store that keeps keyed circuits' indexes applies each
//! [`KeyIndexWrite`] as [`KeyIndexWrite::apply`] does, and never lets concurrent adds pass
//! the cap; a store that keeps none answers no index.

use std::sync::Arc;

use super::RACERS;
use super::races::race_with;
use crate::store::{KeyIndex, KeyIndexOutcome, KeyIndexWrite, StateStore, encode_key, key_item_id};

/// The encoded key of `key`, as the index names it.
fn encoded(key: &str) -> String {
    encode_key(key)
}

fn add(key: &str, token: u64, cap: Option<u32>) -> KeyIndexWrite {
    KeyIndexWrite::Add {
        key: encoded(key),
        token,
        cap,
    }
}

fn refresh(key: &str, token: u64) -> KeyIndexWrite {
    KeyIndexWrite::Refresh {
        key: encoded(key),
        token,
    }
}

fn remove(key: &str, token: u64) -> KeyIndexWrite {
    KeyIndexWrite::Remove {
        key: encoded(key),
        token,
    }
}

async fn read_index(store: &dyn StateStore, circuit: &str) -> Option<KeyIndex> {
    store
        .read_key_index(circuit, true)
        .await
        .expect("the index read answers")
}

/// Applies `write`, checked against [`KeyIndexWrite::apply`] on the index before it: the
/// same outcome, and the index it leaves.
async fn apply(store: &dyn StateStore, circuit: &str, write: &KeyIndexWrite) -> KeyIndexOutcome {
    let mut expected = read_index(store, circuit).await;
    let expected_outcome = write.apply(&mut expected);
    let outcome = store
        .apply_key_index(circuit, write)
        .await
        .expect("the index write answers");
    assert_eq!(outcome, expected_outcome, "{write:?}");
    let after = read_index(store, circuit).await;
    assert_eq!(
        after, expected,
        "{write:?} leaves the index its reference leaves"
    );
    outcome
}

pub(super) async fn a_key_index_names_refreshes_and_removes_keys_by_token(
    store: &dyn StateStore,
    circuit: &str,
) {
    if !store.keeps_key_index() {
        assert_eq!(read_index(store, circuit).await, None, "no index kept");
        return;
    }
    assert_eq!(read_index(store, circuit).await, None);
    let odd = "shop #17 / é:%~=";
    assert_eq!(
        apply(store, circuit, &add("a", 10, Some(2))).await,
        KeyIndexOutcome::Won
    );
    assert_eq!(
        apply(store, circuit, &add("a", 11, Some(2))).await,
        KeyIndexOutcome::Exists(Some(10))
    );
    assert_eq!(
        apply(store, circuit, &add(odd, 12, Some(2))).await,
        KeyIndexOutcome::Won
    );
    assert_eq!(
        apply(store, circuit, &add("c", 13, Some(2))).await,
        KeyIndexOutcome::CapReached(2)
    );
    assert_eq!(
        apply(store, circuit, &add("c", 14, None)).await,
        KeyIndexOutcome::Won
    );
    assert_eq!(
        apply(store, circuit, &refresh("a", 20)).await,
        KeyIndexOutcome::Won
    );
    assert!(matches!(
        apply(store, circuit, &remove("a", 10)).await,
        KeyIndexOutcome::Lost(Some(_))
    ));
    assert_eq!(
        apply(store, circuit, &remove("a", 20)).await,
        KeyIndexOutcome::Won
    );
    assert!(matches!(
        apply(store, circuit, &refresh("a", 21)).await,
        KeyIndexOutcome::Lost(Some(_))
    ));
    let index = read_index(store, circuit).await.expect("an index");
    assert_eq!(index.keys(), vec!["c".to_owned(), odd.to_owned()]);
    assert_eq!(index.open_keys, 2);
    // Suspicions: named apart, under a bound of their own, removed by token.
    let suspect = |key: &str, token| KeyIndexWrite::Suspect {
        key: encoded(key),
        token,
        cap: 2,
    };
    let unsuspect = |key: &str, token| KeyIndexWrite::Unsuspect {
        key: encoded(key),
        token,
    };
    for (write, outcome) in [
        (suspect("c", 30), KeyIndexOutcome::Won),
        (suspect("c", 31), KeyIndexOutcome::Exists(Some(30))),
        (suspect(odd, 32), KeyIndexOutcome::Won),
        (suspect("d", 33), KeyIndexOutcome::CapReached(2)),
        (unsuspect("c", 30), KeyIndexOutcome::Won),
    ] {
        assert_eq!(apply(store, circuit, &write).await, outcome, "{write:?}");
    }
    assert!(matches!(
        apply(store, circuit, &unsuspect(odd, 30)).await,
        KeyIndexOutcome::Lost(Some(_))
    ));
    let index = read_index(store, circuit).await.expect("an index");
    assert_eq!((index.open_keys, index.suspected_keys), (2, 1));
    assert_eq!(index.suspicion(&encoded(odd)), Some(32));
    // The index is an item of its own: no circuit's record, nor a key's, is written.
    for id in [circuit.to_owned(), key_item_id(circuit, "a")] {
        assert_eq!(store.read(&id).await, Ok(None), "{id}");
    }
}

pub(super) async fn concurrent_adds_never_pass_the_cap(
    store: Arc<dyn StateStore>,
    circuit: String,
) {
    if !store.keeps_key_index() {
        return;
    }
    const CAP: u32 = 5;
    let c = circuit.clone();
    let outcomes = race_with(&store, move |store, i| {
        let c = c.clone();
        async move {
            let write = add(&format!("key-{i}"), i as u64, Some(CAP));
            store
                .apply_key_index(&c, &write)
                .await
                .expect("the index write answers")
        }
    })
    .await;
    let won = outcomes
        .iter()
        .filter(|o| **o == KeyIndexOutcome::Won)
        .count();
    assert_eq!(won, CAP as usize, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, KeyIndexOutcome::Won | KeyIndexOutcome::CapReached(_))),
        "{outcomes:?}"
    );
    let index = read_index(&*store, &circuit).await.expect("an index");
    assert_eq!((index.entries.len(), index.open_keys), (CAP as usize, CAP));
    assert!(RACERS > CAP as usize);
}
